// Div (since 6, 7, 13, 14): C = A / B with numpy broadcasting (legacy `broadcast`/`axis`
// attributes at since-version 6). float32 with gradients; int64 forward truncates toward
// zero like C (and ONNX Runtime), yields 0 for a zero divisor and wraps INT64_MIN / -1
// instead of trapping (runtime/ops/int_wrap.h).
#include "runtime/ops/binary.h"
#include "runtime/ops/int_wrap.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) {
  return make_binary(
      node, elementwise_traits(false), [](float a, float b) { return a / b; },
      wrap_div,
      [](float, float b, float) { return 1.0f / b; }, [](float, float b, float y) { return -y / b; });
}

std::vector<OpSample> samples() {
  std::vector<OpSample> out(2);
  out[0].label = "equal shapes, divisor away from 0";
  out[0].node = sample_node("Div", 2);
  out[0].inputs = {Tensor::floats({2, 3}, {0.5f, -1.0f, 2.0f, 0.3f, -0.7f, 1.1f}),
                   Tensor::floats({2, 3}, {1.5f, 1.2f, -1.4f, 1.9f, 2.2f, -1.3f})};
  out[0].check_grad = {true, true};
  out[1].label = "row divisor [2,3] / [3]";
  out[1].node = sample_node("Div", 2);
  out[1].inputs = {Tensor::floats({2, 3}, {0.5f, -1.0f, 2.0f, 0.3f, -0.7f, 1.1f}),
                   Tensor::floats({3}, {1.5f, -2.0f, 2.5f})};
  out[1].check_grad = {true, true};
  return out;
}

}  // namespace

OpInfo op_info_div() { return {"Div", {6, 7, 13, 14}, make, samples}; }

}  // namespace dl::rt
