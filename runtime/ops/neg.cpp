// Neg (since 6, 13): y = -x; float32 with gradient, int64 forward for index arithmetic.
#include "runtime/attrs.h"
#include "runtime/ops/unary_int.h"
#include "runtime/ops/int_wrap.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) {
  Attrs(node).finish();
  OpTraits t;
  t.role = OpTraits::Role::kElementwise;
  t.linear = true;
  return make_int_unary(
      node, t, [](float x) { return -x; }, [](float, float) { return -1.0f; },
      wrap_neg);
}

std::vector<OpSample> samples() {
  std::vector<OpSample> out(2);
  out[0].label = "neg 2x3";
  out[0].node = sample_node("Neg", 1);
  out[0].inputs = {Tensor::floats({2, 3}, {-1.5f, 0.7f, 2.0f, -0.3f, 0.4f, -2.2f})};
  out[0].check_grad = {true};
  out[1].label = "int64 (forward only)";
  out[1].node = sample_node("Neg", 1);
  out[1].inputs = {Tensor::ints({3}, {-3, 0, 5})};
  out[1].check_grad = {false};
  return out;
}

}  // namespace

OpInfo op_info_neg() { return {"Neg", {6, 13}, make, samples}; }

}  // namespace dl::rt
