// LogSoftmax (since 1, 11, 13): x - log(sum(exp(x))) along `axis` (2-D coercion before
// 13, single axis from 13; see softmax_impl.h). Range (-inf, 0].
#include "runtime/ops/softmax_impl.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<SoftmaxOp<true>>(node); }

std::vector<OpSample> samples() {
  const std::vector<float> x = {0.5f, -1.0f, 2.0f, 0.3f, -0.7f, 1.1f, 1.2f, -0.6f, 0.8f, 1.4f, -0.9f, 0.2f};
  std::vector<OpSample> out(3);
  out[0].label = "opset 13, last axis of [2,3,2]";
  out[0].node = sample_node("LogSoftmax", 1, 1, {}, 13);
  out[0].inputs = {Tensor::floats({2, 3, 2}, x)};
  out[0].check_grad = {true};
  out[1].label = "opset 13, axis 0 of [2,3,2] (strided)";
  out[1].node = sample_node("LogSoftmax", 1, 1, {{"axis", attr_i(0)}}, 13);
  out[1].inputs = {Tensor::floats({2, 3, 2}, x)};
  out[1].check_grad = {true};
  out[2].label = "opset 1, axis 2 coerces [2,3,2] to [6,2]";
  out[2].node = sample_node("LogSoftmax", 1, 1, {{"axis", attr_i(2)}}, 1);
  out[2].inputs = {Tensor::floats({2, 3, 2}, x)};
  out[2].check_grad = {true};
  return out;
}

}  // namespace

OpInfo op_info_log_softmax() { return {"LogSoftmax", {1, 11, 13}, make, samples}; }

}  // namespace dl::rt
