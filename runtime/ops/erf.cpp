// Erf (since 9, 13): y = erf(x), range [-1, 1]. PyTorch 1.13 exports GELU (exact) as
// Div(x, sqrt 2) -> Erf -> Add 1 -> Mul x -> Mul 0.5, so Erf is where those models'
// activation happens. The derivative 2/sqrt(pi) exp(-x^2) is below 3% of its peak once
// |y| > 0.99 (|x| > 1.82): that is the saturation band, as for Tanh.
#include <cmath>

#include "runtime/attrs.h"
#include "runtime/ops/unary.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) {
  Attrs(node).finish();
  OpTraits t = activation_traits(-1.0, 1.0);
  t.saturates = true;
  t.sat_margin = 0.01;
  constexpr float kTwoOverSqrtPi = 1.12837916709551257f;
  return make_unary(
      node, t, [](float x) { return std::erf(x); },
      [](float x, float) { return kTwoOverSqrtPi * std::exp(-x * x); });
}

std::vector<OpSample> samples() {
  OpSample s;
  s.label = "erf 2x3, both tails and the linear middle";
  s.node = sample_node("Erf", 1);
  s.inputs = {Tensor::floats({2, 3}, {-1.5f, 0.7f, 2.0f, -0.3f, 0.04f, -2.2f})};
  s.check_grad = {true};
  return {s};
}

}  // namespace

OpInfo op_info_erf() { return {"Erf", {9, 13}, make, samples}; }

}  // namespace dl::rt
