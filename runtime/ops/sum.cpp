// Sum (since 6, 8, 13): element-wise sum of one or more inputs, broadcast together (variadic.h: forward,
// gradients).
#include "runtime/ops/variadic.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) { return make_variadic(node, VariadicKind::kSum); }

std::vector<OpSample> samples() { return variadic_samples("Sum", VariadicKind::kSum); }

}  // namespace

OpInfo op_info_sum() { return {"Sum", {6, 8, 13}, make, samples}; }

}  // namespace dl::rt
