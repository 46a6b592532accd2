// Softmax (since 1, 11, 13): exp(x) / sum(exp(x)) along `axis` (2-D coercion before 13,
// single axis from 13; see softmax_impl.h). Range [0, 1], normalises; outputs within
// 1e-3 of 0 or 1 pass almost no gradient (saturation).
#include "runtime/ops/softmax_impl.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<SoftmaxOp<false>>(node); }

std::vector<OpSample> samples() {
  const std::vector<float> x = {0.5f, -1.0f, 2.0f, 0.3f, -0.7f, 1.1f, 1.2f, -0.6f, 0.8f, 1.4f, -0.9f, 0.2f};
  std::vector<OpSample> out(3);
  out[0].label = "opset 13, last axis of [2,3,2]";
  out[0].node = sample_node("Softmax", 1, 1, {}, 13);
  out[0].inputs = {Tensor::floats({2, 3, 2}, x)};
  out[0].check_grad = {true};
  out[1].label = "opset 13, middle axis of [2,3,2] (strided)";
  out[1].node = sample_node("Softmax", 1, 1, {{"axis", attr_i(1)}}, 13);
  out[1].inputs = {Tensor::floats({2, 3, 2}, x)};
  out[1].check_grad = {true};
  out[2].label = "opset 11, default axis 1 coerces [2,3,2] to [2,6]";
  out[2].node = sample_node("Softmax", 1, 1, {}, 11);
  out[2].inputs = {Tensor::floats({2, 3, 2}, x)};
  out[2].check_grad = {true};
  return out;
}

}  // namespace

OpInfo op_info_softmax() { return {"Softmax", {1, 11, 13}, make, samples}; }

}  // namespace dl::rt
