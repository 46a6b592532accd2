// Softsign (since 1): y = x / (1 + |x|), range (-1, 1). The gradient (1 - |y|)^2 drops
// to 1% at 0.1 from a bound (it approaches the bounds much more slowly than tanh).
#include <cmath>

#include "runtime/attrs.h"
#include "runtime/ops/unary.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) {
  Attrs(node).finish();
  OpTraits t = activation_traits(-1.0, 1.0);
  t.saturates = true;
  t.sat_margin = 0.1;
  return make_unary(
      node, t, [](float x) { return x / (1.0f + std::fabs(x)); },
      [](float x, float) {
        const float d = 1.0f + std::fabs(x);
        return 1.0f / (d * d);
      });
}

std::vector<OpSample> samples() {
  OpSample s;
  s.label = "softsign 2x3";
  s.node = sample_node("Softsign", 1);
  s.inputs = {Tensor::floats({2, 3}, {-1.5f, 0.7f, 2.0f, -0.3f, 0.4f, -2.2f})};
  s.check_grad = {true};
  return {s};
}

}  // namespace

OpInfo op_info_softsign() { return {"Softsign", {1}, make, samples}; }

}  // namespace dl::rt
