// BatchNormalization's op-test samples (runtime/ops/batch_normalization.cpp): inference
// statistics, training_mode with the running outputs, and the graph's training mode, each
// with a gradient check.
#include "runtime/attrs.h"
#include "runtime/op.h"

namespace dl::rt {

std::vector<OpSample> batch_normalization_samples() {
  std::vector<float> x(24);
  for (size_t k = 0; k < x.size(); ++k) x[k] = 0.3f * static_cast<float>((k * 7) % 11) - 1.4f;
  const Tensor scale = Tensor::floats({3}, {1.2f, -0.7f, 0.9f}), bias = Tensor::floats({3}, {0.1f, -0.3f, 0.5f});
  const Tensor mean = Tensor::floats({3}, {0.2f, -0.1f, 0.3f}), var = Tensor::floats({3}, {0.8f, 1.5f, 0.6f});
  OpSample a;
  a.label = "batchnorm inference 2x3x2x2";
  a.node = sample_node("BatchNormalization", 5, 1, {}, 15);
  a.inputs = {Tensor::floats({2, 3, 2, 2}, x), scale, bias, mean, var};
  a.check_grad = {true, true, true, false, false};
  OpSample b;
  b.label = "batchnorm training_mode with running outputs";
  b.node = sample_node("BatchNormalization", 5, 3, {{"training_mode", attr_i(1)}, {"epsilon", attr_f(1e-3f)}}, 15);
  b.inputs = {Tensor::floats({2, 3, 2, 2}, x), scale, bias, mean, var};
  b.check_grad = {true, true, true, false, false};
  OpSample c;
  c.label = "batchnorm graph training (ctx.training), 4x3";
  c.node = sample_node("BatchNormalization", 5, 1, {}, 9);
  c.inputs = {Tensor::floats({4, 3}, std::vector<float>(x.begin(), x.begin() + 12)), scale, bias, mean, var};
  c.check_grad = {true, true, true, false, false};
  c.training = true;
  return {a, b, c};
}

}  // namespace dl::rt
