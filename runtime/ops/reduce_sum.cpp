// ReduceSum (since 1, 11, 13): sum over the given axes, keeping reduced axes as size 1
// unless keepdims = 0. Before 13 the axes are an attribute (every axis when absent;
// negative from 11). From 13 they are the optional int64 input `axes`, whose values
// must be known when the graph is planned (the output shape depends on them); empty or
// absent axes reduce everything, or nothing with noop_with_empty_axes = 1.
#include "runtime/ops/reduce_linear.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) {
  return std::make_unique<LinearReduceOp>(node, false, node.since_version == 0 || node.since_version >= 13);
}

std::vector<OpSample> samples() {
  std::vector<float> v(24);
  for (size_t k = 0; k < v.size(); ++k) v[k] = 0.25f * static_cast<float>((k * 7) % 13) - 1.5f;
  OpSample a;
  a.label = "reducesum 2x3x4 axes input [0, 2] keepdims";
  a.node = sample_node("ReduceSum", 2, 1, {}, 13);
  a.inputs = {Tensor::floats({2, 3, 4}, v), Tensor::ints({2}, {0, 2})};
  a.check_grad = {true, false};
  OpSample b;
  b.label = "reducesum 2x3x4 axes attribute [-2] keepdims 0 (v11)";
  b.node = sample_node("ReduceSum", 1, 1, {{"axes", attr_ints({-2})}, {"keepdims", attr_i(0)}}, 11);
  b.inputs = {Tensor::floats({2, 3, 4}, v)};
  b.check_grad = {true};
  OpSample c;
  c.label = "reducesum empty axes, noop_with_empty_axes";
  c.node = sample_node("ReduceSum", 2, 1, {{"noop_with_empty_axes", attr_i(1)}}, 13);
  c.inputs = {Tensor::floats({2, 3, 4}, v), Tensor::ints({0}, {})};
  c.check_grad = {true, false};
  OpSample d;
  d.label = "reducesum all axes, keepdims 0";
  d.node = sample_node("ReduceSum", 1, 1, {{"keepdims", attr_i(0)}}, 13);
  d.inputs = {Tensor::floats({2, 3, 4}, v)};
  d.check_grad = {true};
  return {a, b, c, d};
}

}  // namespace

OpInfo op_info_reduce_sum() { return {"ReduceSum", {1, 11, 13}, make, samples}; }

}  // namespace dl::rt
