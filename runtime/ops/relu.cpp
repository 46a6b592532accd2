// Relu (since 6, 13, 14): y = max(0, x). Dead zone at y == 0.
#include <limits>

#include "runtime/attrs.h"
#include "runtime/ops/unary.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) {
  Attrs(node).finish();
  OpTraits t = activation_traits(0.0, std::numeric_limits<double>::infinity());
  t.has_dead_zone = true;
  t.dead_value = 0.0;
  using simd::VecF;
  return make_unary(
      node, t, [](float x) { return x > 0.0f ? x : 0.0f; }, [](float x, float) { return x > 0.0f ? 1.0f : 0.0f; },
      [](VecF x) { return x > 0.0f ? x : VecF{}; }, [](VecF x, VecF) { return x > 0.0f ? VecF{} + 1.0f : VecF{}; });
}

std::vector<OpSample> samples() {
  OpSample s;
  s.label = "relu 2x3 away from 0";
  s.node = sample_node("Relu", 1);
  s.inputs = {Tensor::floats({2, 3}, {-1.5f, 0.7f, 2.0f, -0.3f, 0.4f, -2.2f})};
  s.check_grad = {true};
  return {s};
}

}  // namespace

OpInfo op_info_relu() { return {"Relu", {6, 13, 14}, make, samples}; }

}  // namespace dl::rt
