// Selu (since 6): y = gamma * x for x > 0, gamma * alpha * (exp(x) - 1) otherwise, with
// the self-normalising defaults alpha = 1.6732632, gamma = 1.0507010. Bounded below by
// -gamma * alpha, where the gradient (y + gamma * alpha) vanishes.
#include <cmath>
#include <limits>

#include "runtime/attrs.h"
#include "runtime/ops/unary.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) {
  Attrs attrs(node);
  const float alpha = attrs.finite("alpha", 1.67326319217681884765625f);
  const float gamma = attrs.finite("gamma", 1.05070102214813232421875f);
  attrs.finish();
  const double inf = std::numeric_limits<double>::infinity();
  const double floor = double(gamma) * alpha;
  OpTraits t = activation_traits(floor > 0 ? -floor : -inf, inf);
  t.saturates = floor > 0;
  t.sat_margin = 0.01 * floor;
  const float ga = gamma * alpha;
  return make_unary(
      node, t, [gamma, ga](float x) { return x > 0.0f ? gamma * x : ga * std::expm1(x); },
      [gamma, ga](float x, float y) { return x > 0.0f ? gamma : y + ga; });
}

std::vector<OpSample> samples() {
  std::vector<OpSample> out(2);
  out[0].label = "default alpha, gamma";
  out[0].node = sample_node("Selu", 1);
  out[0].inputs = {Tensor::floats({2, 3}, {-1.5f, 0.7f, 2.0f, -0.3f, 0.4f, -2.2f})};
  out[0].check_grad = {true};
  out[1].label = "alpha 2, gamma 3";
  out[1].node = sample_node("Selu", 1, 1, {{"alpha", attr_f(2.0f)}, {"gamma", attr_f(3.0f)}});
  out[1].inputs = {Tensor::floats({4}, {-1.5f, 0.7f, -0.4f, 2.5f})};
  out[1].check_grad = {true};
  return out;
}

}  // namespace

OpInfo op_info_selu() { return {"Selu", {6}, make, samples}; }

}  // namespace dl::rt
