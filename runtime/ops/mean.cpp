// Mean (since 6, 8, 13): element-wise mean of one or more inputs, broadcast together (variadic.h: forward,
// gradients).
#include "runtime/ops/variadic.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) { return make_variadic(node, VariadicKind::kMean); }

std::vector<OpSample> samples() { return variadic_samples("Mean", VariadicKind::kMean); }

}  // namespace

OpInfo op_info_mean() { return {"Mean", {6, 8, 13}, make, samples}; }

}  // namespace dl::rt
