// Sigmoid (since 6, 13): y = 1 / (1 + exp(-x)), range [0, 1]. The gradient y(1 - y)
// falls below 1% within 0.01 of either bound: that is the saturation band.
#include <cmath>

#include "runtime/attrs.h"
#include "runtime/ops/unary.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) {
  Attrs(node).finish();
  OpTraits t = activation_traits(0.0, 1.0);
  t.saturates = true;
  t.sat_margin = 0.01;
  return make_unary(
      node, t,
      [](float x) {
        // Split by sign so exp never overflows into inf/inf.
        if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
        const float e = std::exp(x);
        return e / (1.0f + e);
      },
      [](float, float y) { return y * (1.0f - y); });
}

std::vector<OpSample> samples() {
  OpSample s;
  s.label = "sigmoid 2x3";
  s.node = sample_node("Sigmoid", 1);
  s.inputs = {Tensor::floats({2, 3}, {-1.5f, 0.7f, 2.0f, -0.3f, 0.4f, -2.2f})};
  s.check_grad = {true};
  return {s};
}

}  // namespace

OpInfo op_info_sigmoid() { return {"Sigmoid", {6, 13}, make, samples}; }

}  // namespace dl::rt
