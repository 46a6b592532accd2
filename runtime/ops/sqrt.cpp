// Sqrt (since 6, 13): y = sqrt(x), range [0, inf); NaN for negative inputs and an
// infinite gradient at 0, as in IEEE arithmetic.
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
  return make_unary(
      node, t, [](float x) { return std::sqrt(x); }, [](float, float y) { return 0.5f / y; });
}

std::vector<OpSample> samples() {
  OpSample s;
  s.label = "sqrt of positive values";
  s.node = sample_node("Sqrt", 1);
  s.inputs = {Tensor::floats({2, 3}, {0.5f, 0.7f, 2.0f, 1.3f, 2.4f, 1.1f})};
  s.check_grad = {true};
  return {s};
}

}  // namespace

OpInfo op_info_sqrt() { return {"Sqrt", {6, 13}, make, samples}; }

}  // namespace dl::rt
