// Elu (since 6): y = x for x >= 0, alpha * (exp(x) - 1) otherwise (alpha default 1).
// Bounded below by -alpha, where the gradient (y + alpha) vanishes: saturation band
// of 1% of alpha above the bound.
#include <cmath>
#include <limits>

#include "runtime/attrs.h"
#include "runtime/ops/unary.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) {
  Attrs attrs(node);
  const float alpha = attrs.finite("alpha", 1.0f);
  attrs.finish();
  const double inf = std::numeric_limits<double>::infinity();
  OpTraits t = activation_traits(alpha > 0 ? -double(alpha) : -inf, inf);
  t.saturates = alpha > 0;
  t.sat_margin = 0.01 * alpha;
  return make_unary(
      node, t, [alpha](float x) { return x >= 0.0f ? x : alpha * std::expm1(x); },
      [alpha](float x, float y) { return x >= 0.0f ? 1.0f : y + alpha; });
}

std::vector<OpSample> samples() {
  std::vector<OpSample> out(2);
  out[0].label = "default alpha";
  out[0].node = sample_node("Elu", 1);
  out[0].inputs = {Tensor::floats({2, 3}, {-1.5f, 0.7f, 2.0f, -0.3f, 0.4f, -2.2f})};
  out[0].check_grad = {true};
  out[1].label = "alpha 2";
  out[1].node = sample_node("Elu", 1, 1, {{"alpha", attr_f(2.0f)}});
  out[1].inputs = {Tensor::floats({4}, {-1.5f, 0.7f, -0.4f, 2.5f})};
  out[1].check_grad = {true};
  return out;
}

}  // namespace

OpInfo op_info_elu() { return {"Elu", {6}, make, samples}; }

}  // namespace dl::rt
