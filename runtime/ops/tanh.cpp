// Tanh (since 6, 13): range [-1, 1]; the gradient 1 - y^2 is about 2% within 0.01 of
// either bound: that is the saturation band.
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
  return make_unary(
      node, t, [](float x) { return std::tanh(x); }, [](float, float y) { return 1.0f - y * y; });
}

std::vector<OpSample> samples() {
  OpSample s;
  s.label = "tanh 2x3";
  s.node = sample_node("Tanh", 1);
  s.inputs = {Tensor::floats({2, 3}, {-1.5f, 0.7f, 2.0f, -0.3f, 0.4f, -2.2f})};
  s.check_grad = {true};
  return {s};
}

}  // namespace

OpInfo op_info_tanh() { return {"Tanh", {6, 13}, make, samples}; }

}  // namespace dl::rt
