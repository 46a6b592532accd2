// ReduceMean (since 1, 11, 13): mean over the `axes` attribute (every axis when absent;
// negative axes count from the end), keeping reduced axes as size 1 unless keepdims = 0.
// Versions differ only in accepted types and negative axes.
#include "runtime/ops/reduce_linear.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<LinearReduceOp>(node, true, false); }

std::vector<OpSample> samples() {
  std::vector<float> v(24);
  for (size_t k = 0; k < v.size(); ++k) v[k] = 0.25f * static_cast<float>((k * 7) % 13) - 1.5f;
  OpSample a;
  a.label = "reducemean 2x3x4 axes [1] keepdims";
  a.node = sample_node("ReduceMean", 1, 1, {{"axes", attr_ints({1})}}, 13);
  a.inputs = {Tensor::floats({2, 3, 4}, v)};
  a.check_grad = {true};
  OpSample b;
  b.label = "reducemean 2x3x4 axes [0, -1] keepdims 0";
  b.node = sample_node("ReduceMean", 1, 1, {{"axes", attr_ints({0, -1})}, {"keepdims", attr_i(0)}}, 13);
  b.inputs = {Tensor::floats({2, 3, 4}, v)};
  b.check_grad = {true};
  OpSample c;
  c.label = "reducemean all axes";
  c.node = sample_node("ReduceMean", 1, 1, {}, 13);
  c.inputs = {Tensor::floats({2, 3, 4}, v)};
  c.check_grad = {true};
  return {a, b, c};
}

}  // namespace

OpInfo op_info_reduce_mean() { return {"ReduceMean", {1, 11, 13}, make, samples}; }

}  // namespace dl::rt
