// The op registry: built from runtime/ops/op_list.def, the one list of supported ops.
#pragma once

#include <string>
#include <vector>

#include "runtime/op.h"

namespace dl::rt {

// All registered ops, in op_list.def order.
const std::vector<OpInfo>& all_ops();
// nullptr when the op type is not supported at all.
const OpInfo* find_op(const std::string& type);
// Creates the op for a node; throws ModelError if its type or since-version is unsupported.
std::unique_ptr<Op> make_op(const ir::Node& node);
// The supported ops as a Markdown table, one row per op in registry order: "| Relu | 6, 13, 14 |".
// `deeplocalize ops` prints it and README.md must hold it (checked by a unit test).
std::string operator_table();
// Why a node cannot run ("" when it can): unknown type, other domain, or a version
// whose semantics the op does not implement.
std::string unsupported_reason(const ir::Node& node);

}  // namespace dl::rt
