// Ops that run two ONNX nodes as one step, made by the planner (runtime/graph_fuse.cpp),
// never by the registry: a model cannot name them.
#pragma once

#include <memory>
#include <string>

#include "runtime/op.h"

namespace dl::rt {

// MatMul(A, B) + C as one step, `node` a MatMul node whose input 2 is the bias C (N
// values, one per output column) that the Add named add_name added (runtime/ops/mat_mul.cpp).
std::unique_ptr<Op> make_mat_mul_with_bias(const ir::Node& node, const std::string& add_name);

}  // namespace dl::rt
