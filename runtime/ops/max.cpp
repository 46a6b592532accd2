// Max (since 6, 8, 12, 13): element-wise maximum of one or more inputs, broadcast together (variadic.h: forward,
// gradients with ties split equally).
#include "runtime/ops/variadic.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) { return make_variadic(node, VariadicKind::kMax); }

std::vector<OpSample> samples() { return variadic_samples("Max", VariadicKind::kMax); }

}  // namespace

OpInfo op_info_max() { return {"Max", {6, 8, 12, 13}, make, samples}; }

}  // namespace dl::rt
