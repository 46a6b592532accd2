// HardSwish (since 14): y = x * max(0, min(1, x / 6 + 1/2)) (MobileNetV3). Outputs exactly
// 0 for x <= -3 with zero gradient there: the dead zone; linear (y = x) above 3, so no
// saturation at the top. The minimum is -0.375 at x = -1.5.
#include <limits>

#include "runtime/attrs.h"
#include "runtime/ops/unary.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) {
  Attrs(node).finish();
  OpTraits t = activation_traits(-0.375, std::numeric_limits<double>::infinity());
  t.has_dead_zone = true;
  t.dead_value = 0.0;
  return make_unary(
      node, t,
      [](float x) {
        const float v = x / 6.0f + 0.5f;
        return x * (v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v));  // NaN passes through
      },
      [](float x, float) { return x <= -3.0f ? 0.0f : (x >= 3.0f ? 1.0f : x / 3.0f + 0.5f); });
}

std::vector<OpSample> samples() {
  OpSample s;
  s.label = "dead zone, the quadratic middle and the linear top (away from +-3)";
  s.node = sample_node("HardSwish", 1);
  s.inputs = {Tensor::floats({2, 3}, {-4.0f, -1.5f, -0.4f, 0.8f, 2.5f, 3.6f})};
  s.check_grad = {true};
  return {s};
}

}  // namespace

OpInfo op_info_hard_swish() { return {"HardSwish", {14}, make, samples}; }

}  // namespace dl::rt
