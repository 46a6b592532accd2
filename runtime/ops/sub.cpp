// Sub (since 6, 7, 13, 14): C = A - B with numpy broadcasting (legacy `broadcast`/`axis`
// attributes at since-version 6). float32 with gradients; int64 forward for shape math.
#include "runtime/ops/binary.h"
#include "runtime/ops/int_wrap.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) {
  return make_binary(
      node, elementwise_traits(true), [](float a, float b) { return a - b; },
      wrap_sub, [](float, float, float) { return 1.0f; },
      [](float, float, float) { return -1.0f; }, true);  // (dA: dY's values)
}

std::vector<OpSample> samples() {
  std::vector<OpSample> out(3);
  out[0].label = "equal shapes 2x3";
  out[0].node = sample_node("Sub", 2);
  out[0].inputs = {Tensor::floats({2, 3}, {0.5f, -1.0f, 2.0f, 0.3f, -0.7f, 1.1f}),
                   Tensor::floats({2, 3}, {1.5f, 0.2f, -0.4f, 0.9f, 2.2f, -1.3f})};
  out[0].check_grad = {true, true};
  out[1].label = "scalar minus tensor";
  out[1].node = sample_node("Sub", 2);
  out[1].inputs = {Tensor::floats({}, {1.5f}), Tensor::floats({2, 2}, {0.5f, -1.0f, 2.0f, 0.3f})};
  out[1].check_grad = {true, true};
  out[2].label = "column [3,1] - row [1,2]";
  out[2].node = sample_node("Sub", 2);
  out[2].inputs = {Tensor::floats({3, 1}, {0.5f, -1.0f, 2.0f}), Tensor::floats({1, 2}, {0.7f, -0.3f})};
  out[2].check_grad = {true, true};
  return out;
}

}  // namespace

OpInfo op_info_sub() { return {"Sub", {6, 7, 13, 14}, make, samples}; }

}  // namespace dl::rt
