// Mul (since 6, 7, 13, 14): C = A * B with numpy broadcasting (legacy `broadcast`/`axis`
// attributes at since-version 6). float32 with gradients; int64 forward for shape math.
#include "runtime/ops/binary.h"
#include "runtime/ops/int_wrap.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) {
  return make_binary(
      node, elementwise_traits(false), [](float a, float b) { return a * b; },
      wrap_mul, [](float, float b, float) { return b; },
      [](float a, float, float) { return a; });
}

std::vector<OpSample> samples() {
  std::vector<OpSample> out(3);
  out[0].label = "equal shapes 2x3";
  out[0].node = sample_node("Mul", 2);
  out[0].inputs = {Tensor::floats({2, 3}, {0.5f, -1.0f, 2.0f, 0.3f, -0.7f, 1.1f}),
                   Tensor::floats({2, 3}, {1.5f, 0.2f, -0.4f, 0.9f, 2.2f, -1.3f})};
  out[0].check_grad = {true, true};
  out[1].label = "per-channel scale [2,3,2] * [3,1]";
  out[1].node = sample_node("Mul", 2);
  out[1].inputs = {Tensor::floats({2, 3, 2}, {0.5f, -1.0f, 2.0f, 0.3f, -0.7f, 1.1f, 1.2f, -0.6f, 0.8f, 1.4f, -0.9f,
                                              0.2f}),
                   Tensor::floats({3, 1}, {0.7f, -1.2f, 1.6f})};
  out[1].check_grad = {true, true};
  out[2].label = "tensor times scalar";
  out[2].node = sample_node("Mul", 2);
  out[2].inputs = {Tensor::floats({2, 2}, {0.5f, -1.0f, 2.0f, 0.3f}), Tensor::floats({1}, {-1.7f})};
  out[2].check_grad = {true, true};
  return out;
}

}  // namespace

OpInfo op_info_mul() { return {"Mul", {6, 7, 13, 14}, make, samples}; }

}  // namespace dl::rt
