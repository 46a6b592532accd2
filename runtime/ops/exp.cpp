// Exp (since 6, 13): y = e^x, range (0, inf). dy/dx = y, so outputs within 0.01 of 0
// pass almost no gradient: that is the saturation band.
#include <cmath>

#include "runtime/attrs.h"
#include "runtime/ops/unary.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) {
  Attrs(node).finish();
  OpTraits t;
  t.role = OpTraits::Role::kElementwise;
  t.out_lo = 0.0;
  t.saturates = true;
  t.sat_margin = 0.01;
  return make_unary(
      node, t, [](float x) { return std::exp(x); }, [](float, float y) { return y; });
}

std::vector<OpSample> samples() {
  OpSample s;
  s.label = "exp 2x3";
  s.node = sample_node("Exp", 1);
  s.inputs = {Tensor::floats({2, 3}, {-1.5f, 0.7f, 2.0f, -0.3f, 0.4f, -2.2f})};
  s.check_grad = {true};
  return {s};
}

}  // namespace

OpInfo op_info_exp() { return {"Exp", {6, 13}, make, samples}; }

}  // namespace dl::rt
