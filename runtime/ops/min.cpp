// Min (since 6, 8, 12, 13): element-wise minimum of one or more inputs, broadcast together (variadic.h: forward,
// gradients with ties split equally).
#include "runtime/ops/variadic.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) { return make_variadic(node, VariadicKind::kMin); }

std::vector<OpSample> samples() { return variadic_samples("Min", VariadicKind::kMin); }

}  // namespace

OpInfo op_info_min() { return {"Min", {6, 8, 12, 13}, make, samples}; }

}  // namespace dl::rt
