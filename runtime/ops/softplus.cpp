// Softplus (since 1): y = ln(1 + exp(x)), range (0, inf). The gradient sigmoid(x) is
// about y itself for small y, so outputs within 0.01 of 0 are saturated.
#include <cmath>
#include <limits>

#include "runtime/attrs.h"
#include "runtime/ops/unary.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) {
  Attrs(node).finish();
  OpTraits t = activation_traits(0.0, std::numeric_limits<double>::infinity());
  t.saturates = true;
  t.sat_margin = 0.01;
  return make_unary(
      node, t,
      // max(x, 0) + log1p(exp(-|x|)) never overflows, unlike log(1 + exp(x)).
      [](float x) { return (x > 0.0f ? x : 0.0f) + std::log1p(std::exp(-std::fabs(x))); },
      [](float x, float) {
        if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
        const float e = std::exp(x);
        return e / (1.0f + e);
      });
}

std::vector<OpSample> samples() {
  OpSample s;
  s.label = "softplus 2x3";
  s.node = sample_node("Softplus", 1);
  s.inputs = {Tensor::floats({2, 3}, {-1.5f, 0.7f, 2.0f, -0.3f, 0.4f, -2.2f})};
  s.check_grad = {true};
  return {s};
}

}  // namespace

OpInfo op_info_softplus() { return {"Softplus", {1}, make, samples}; }

}  // namespace dl::rt
