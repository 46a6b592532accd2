// Abs (since 6, 13): y = |x|, range [0, inf); float32 with gradient sign(x), int64
// forward for index arithmetic.
#include <cmath>

#include "runtime/attrs.h"
#include "runtime/ops/unary_int.h"
#include "runtime/ops/int_wrap.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) {
  Attrs(node).finish();
  OpTraits t;
  t.role = OpTraits::Role::kElementwise;
  t.out_lo = 0.0;
  return make_int_unary(
      node, t, [](float x) { return std::fabs(x); },
      [](float x, float) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f); },
      [](int64_t x) { return x < 0 ? wrap_neg(x) : x; });
}

std::vector<OpSample> samples() {
  std::vector<OpSample> out(2);
  out[0].label = "abs away from 0";
  out[0].node = sample_node("Abs", 1);
  out[0].inputs = {Tensor::floats({2, 3}, {-1.5f, 0.7f, 2.0f, -0.3f, 0.4f, -2.2f})};
  out[0].check_grad = {true};
  out[1].label = "int64 (forward only)";
  out[1].node = sample_node("Abs", 1);
  out[1].inputs = {Tensor::ints({3}, {-3, 0, 5})};
  out[1].check_grad = {false};
  return out;
}

}  // namespace

OpInfo op_info_abs() { return {"Abs", {6, 13}, make, samples}; }

}  // namespace dl::rt
