#include "runtime/registry.h"

#include <algorithm>

#include "converter/errors.h"

namespace dl::rt {

#define DL_OP(stem) OpInfo op_info_##stem();
#include "runtime/ops/op_list.def"
#undef DL_OP

const std::vector<OpInfo>& all_ops() {
  static const std::vector<OpInfo> ops = {
#define DL_OP(stem) op_info_##stem(),
#include "runtime/ops/op_list.def"
#undef DL_OP
  };
  return ops;
}

const OpInfo* find_op(const std::string& type) {
  for (const OpInfo& info : all_ops())
    if (type == info.type) return &info;
  return nullptr;
}

std::string operator_table() {
  std::string out = "| operator | since-versions implemented |\n|---|---|\n";
  for (const OpInfo& info : all_ops()) {
    std::string versions;
    for (int v : info.versions) versions += (versions.empty() ? "" : ", ") + std::to_string(v);
    out += "| " + std::string(info.type) + " | " + versions + " |\n";
  }
  return out;
}

std::string unsupported_reason(const ir::Node& node) {
  if (!node.domain.empty() && node.domain != "ai.onnx")
    return "operator domain '" + node.domain + "' is not supported";
  const OpInfo* info = find_op(node.op_type);
  if (!info) return "operator type is not supported";
  if (node.since_version != 0 &&
      std::find(info->versions.begin(), info->versions.end(), node.since_version) == info->versions.end()) {
    std::string v;
    for (int x : info->versions) v += (v.empty() ? "" : ", ") + std::to_string(x);
    return "version " + std::to_string(node.since_version) + " of " + node.op_type +
           " is not implemented (implemented: " + v + ")";
  }
  return "";
}

std::unique_ptr<Op> make_op(const ir::Node& node) {
  std::string why = unsupported_reason(node);
  if (!why.empty()) throw ModelError("node '" + node.name + "' (" + node.op_type + "): " + why);
  return find_op(node.op_type)->make(node);
}

void Op::backward(BwdCtx&) { throw InternalError(where() + ": backward is not defined for this op"); }

}  // namespace dl::rt
