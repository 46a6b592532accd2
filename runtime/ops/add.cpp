// Add (since 6, 7, 13, 14): C = A + B with numpy broadcasting (legacy `broadcast`/`axis`
// attributes at since-version 6). float32 with gradients; int64 forward for shape math.
#include "runtime/ops/binary.h"
#include "runtime/ops/int_wrap.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) {
  return make_binary(
      node, elementwise_traits(true), [](float a, float b) { return a + b; },
      wrap_add, [](float, float, float) { return 1.0f; },
      [](float, float, float) { return 1.0f; }, true, true);
}

std::vector<OpSample> samples() {
  std::vector<OpSample> out(5);
  out[0].label = "equal shapes 2x3";
  out[0].node = sample_node("Add", 2);
  out[0].inputs = {Tensor::floats({2, 3}, {0.5f, -1.0f, 2.0f, 0.3f, -0.7f, 1.1f}),
                   Tensor::floats({2, 3}, {1.5f, 0.2f, -0.4f, 0.9f, 2.2f, -1.3f})};
  out[0].check_grad = {true, true};
  out[1].label = "bias row [2,3] + [3]";
  out[1].node = sample_node("Add", 2);
  out[1].inputs = {Tensor::floats({2, 3}, {0.5f, -1.0f, 2.0f, 0.3f, -0.7f, 1.1f}),
                   Tensor::floats({3}, {0.1f, -0.2f, 0.3f})};
  out[1].check_grad = {true, true};
  out[2].label = "both broadcast [2,1,3] + [4,1]";
  out[2].node = sample_node("Add", 2);
  out[2].inputs = {Tensor::floats({2, 1, 3}, {0.5f, -1.0f, 2.0f, 0.3f, -0.7f, 1.1f}),
                   Tensor::floats({4, 1}, {0.1f, -0.2f, 0.3f, 0.6f})};
  out[2].check_grad = {true, true};
  out[3].label = "legacy broadcast=1 axis=0 [2,3] + [2]";
  out[3].node = sample_node("Add", 2, 1, {{"broadcast", attr_i(1)}, {"axis", attr_i(0)}}, 6);
  out[3].inputs = {Tensor::floats({2, 3}, {0.5f, -1.0f, 2.0f, 0.3f, -0.7f, 1.1f}),
                   Tensor::floats({2}, {0.4f, -0.8f})};
  out[3].check_grad = {true, true};
  out[4].label = "int64 shape arithmetic (forward only)";
  out[4].node = sample_node("Add", 2);
  out[4].inputs = {Tensor::ints({2}, {3, 4}), Tensor::ints({}, {1})};
  out[4].check_grad = {false, false};
  return out;
}

}  // namespace

OpInfo op_info_add() { return {"Add", {6, 7, 13, 14}, make, samples}; }

}  // namespace dl::rt
