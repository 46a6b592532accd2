// HardSigmoid (since 6): y = max(0, min(1, alpha * x + beta)), alpha 0.2, beta 0.5 by
// default. Flat at both bounds: outputs exactly 0 are a dead zone and outputs exactly
// 1 are saturated (margin 0: the gradient is exactly zero there, not merely small).
#include "runtime/attrs.h"
#include "runtime/ops/unary.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) {
  Attrs attrs(node);
  const float alpha = attrs.finite("alpha", 0.2f);
  const float beta = attrs.finite("beta", 0.5f);
  attrs.finish();
  OpTraits t = activation_traits(0.0, 1.0);
  t.has_dead_zone = true;
  t.dead_value = 0.0;
  t.saturates = true;
  t.sat_margin = 0.0;
  return make_unary(
      node, t,
      [alpha, beta](float x) {
        const float v = alpha * x + beta;
        return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);  // NaN passes through
      },
      [alpha, beta](float x, float) {
        const float v = alpha * x + beta;
        return v > 0.0f && v < 1.0f ? alpha : 0.0f;
      });
}

std::vector<OpSample> samples() {
  std::vector<OpSample> out(2);
  out[0].label = "default alpha, beta: both flat regions and the slope";
  out[0].node = sample_node("HardSigmoid", 1);
  out[0].inputs = {Tensor::floats({2, 3}, {-3.5f, 0.7f, 2.0f, -0.3f, 3.4f, -2.0f})};
  out[0].check_grad = {true};
  out[1].label = "alpha 0.5, beta 0.6";
  out[1].node = sample_node("HardSigmoid", 1, 1, {{"alpha", attr_f(0.5f)}, {"beta", attr_f(0.6f)}});
  out[1].inputs = {Tensor::floats({4}, {-1.5f, 0.3f, -0.4f, 2.5f})};
  out[1].check_grad = {true};
  return out;
}

}  // namespace

OpInfo op_info_hard_sigmoid() { return {"HardSigmoid", {6}, make, samples}; }

}  // namespace dl::rt
