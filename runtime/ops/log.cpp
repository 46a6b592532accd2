// Log (since 6, 13): natural logarithm; -inf at 0 and NaN below, as in IEEE arithmetic
// (the analysis reports those rather than the op hiding them).
#include <cmath>

#include "runtime/attrs.h"
#include "runtime/ops/unary.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) {
  Attrs(node).finish();
  OpTraits t;
  t.role = OpTraits::Role::kElementwise;
  return make_unary(
      node, t, [](float x) { return std::log(x); }, [](float x, float) { return 1.0f / x; });
}

std::vector<OpSample> samples() {
  OpSample s;
  s.label = "log of positive values";
  s.node = sample_node("Log", 1);
  s.inputs = {Tensor::floats({2, 3}, {0.5f, 0.7f, 2.0f, 1.3f, 2.4f, 1.1f})};
  s.check_grad = {true};
  return {s};
}

}  // namespace

OpInfo op_info_log() { return {"Log", {6, 13}, make, samples}; }

}  // namespace dl::rt
