#include "runtime/ops/predicate.h"

namespace dl::rt {

std::vector<OpSample> predicate_samples(const std::string& op_type, PredicateInputs kind, bool legacy) {
  std::vector<OpSample> out;
  auto add = [&](const std::string& label, ir::Node node, Tensor a, Tensor b) {
    OpSample s;
    s.label = label;
    s.node = std::move(node);
    s.inputs = {std::move(a), std::move(b)};
    s.check_grad = {false, false};
    out.push_back(std::move(s));
  };
  if (kind == PredicateInputs::kBool) {
    add("bool [2,3] with a row [3]", sample_node(op_type, 2), Tensor::bools({2, 3}, {0, 1, 1, 0, 0, 1}),
        Tensor::bools({3}, {1, 0, 1}));
    if (legacy)
      add("legacy broadcast=1 axis=0", sample_node(op_type, 2, 1, {{"broadcast", attr_i(1)}, {"axis", attr_i(0)}}, 1),
          Tensor::bools({2, 3}, {0, 1, 1, 0, 0, 1}), Tensor::bools({2}, {1, 0}));
    return out;
  }
  add("float [2,3] with a row [3], ties included", sample_node(op_type, 2),
      Tensor::floats({2, 3}, {0.5f, -1.0f, 2.0f, 0.3f, -0.7f, 1.1f}), Tensor::floats({3}, {0.5f, 0.2f, 1.1f}));
  add("int64 with a scalar", sample_node(op_type, 2), Tensor::ints({4}, {-2, 3, 4, 5}), Tensor::ints({}, {4}));
  if (kind == PredicateInputs::kNumbersOrBool)
    add("bool", sample_node(op_type, 2), Tensor::bools({3}, {0, 1, 1}), Tensor::bools({3}, {1, 1, 0}));
  if (legacy)
    add("legacy broadcast=1 axis=0", sample_node(op_type, 2, 1, {{"broadcast", attr_i(1)}, {"axis", attr_i(0)}}, 1),
        Tensor::floats({2, 3}, {0.5f, -1.0f, 2.0f, 0.3f, -0.7f, 1.1f}), Tensor::floats({2}, {0.5f, 0.0f}));
  return out;
}

}  // namespace dl::rt
