#include "runtime/ops/variadic.h"

namespace dl::rt {

std::vector<OpSample> variadic_samples(const std::string& op_type, VariadicKind kind) {
  std::vector<OpSample> out;
  auto add = [&](const std::string& label, std::vector<Tensor> inputs, bool grad, int version = 0) {
    OpSample s;
    s.label = label;
    s.node = sample_node(op_type, inputs.size(), 1, {}, version);
    s.check_grad.assign(inputs.size(), grad);
    s.inputs = std::move(inputs);
    out.push_back(std::move(s));
  };
  // Values at least 0.1 apart across inputs, so the finite differences never cross a kink.
  add("three inputs, equal shapes (version 6)",
      {Tensor::floats({2, 3}, {0.5f, -1.0f, 2.0f, 0.3f, -0.7f, 1.1f}),
       Tensor::floats({2, 3}, {1.5f, 0.2f, -0.4f, 0.9f, 2.2f, -1.3f}),
       Tensor::floats({2, 3}, {-0.6f, 0.8f, 1.2f, -1.9f, 0.1f, 0.4f})},
      true, 6);
  add("three inputs broadcast: [2,3], [3], [2,1]",
      {Tensor::floats({2, 3}, {0.5f, -1.0f, 2.0f, 0.3f, -0.7f, 1.1f}), Tensor::floats({3}, {1.5f, 0.2f, -0.4f}),
       Tensor::floats({2, 1}, {-0.2f, 0.7f})},
      true);
  add("one input", {Tensor::floats({3}, {0.5f, -1.0f, 2.0f})}, true);
  if (kind == VariadicKind::kMax || kind == VariadicKind::kMin)
    add("ties split the gradient in halves", {Tensor::floats({3}, {0.5f, -1.0f, 2.0f}),
                                              Tensor::floats({3}, {0.5f, 0.2f, 2.0f})},
        true);
  if (kind != VariadicKind::kMean)
    add("int64 with a scalar (forward only)", {Tensor::ints({3}, {4, -2, 7}), Tensor::ints({}, {3})}, false);
  return out;
}

}  // namespace dl::rt
