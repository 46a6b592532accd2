// Split (since 2, 11, 13): cuts the input along `axis` into the outputs, of the sizes in
// `split` (an attribute before 13, an optional int64 input known at plan time from 13)
// or equal parts (the dimension must divide evenly). Negative axis from 11. Backward
// copies each output's gradient back into its part (outputs without one add nothing).
// (Version 18's num_outputs is past the highest opset this build imports, 17.)
#include "runtime/attrs.h"
#include "runtime/ops/shape_util.h"

namespace dl::rt {
namespace {

class Split : public Op {
 public:
  explicit Split(const ir::Node& node) : Op(node), version_(node.since_version) {
    Attrs a(node);
    axis_attr_ = a.i("axis", 0);
    if (version_ > 0 && version_ < 13) split_ = a.ints("split");
    a.finish();
  }

  void infer(InferCtx& ctx) override {
    check_inputs(ctx, 1, version_ > 0 && version_ < 13 ? 1 : 2, 1, where());
    const Tensor& x = *ctx.in[0];
    if (x.rank() == 0) throw ShapeError(where() + ": cannot split a scalar");
    const size_t axis = static_cast<size_t>(normalize_axis(axis_attr_, x.rank(), where(), "axis"));
    std::vector<int64_t> split = split_;
    if (ctx.in.size() > 1 && ctx.in[1]) split = known_ints(ctx, 1, where(), "split");
    const int64_t d = x.shape()[axis];
    const int64_t n_out = static_cast<int64_t>(ctx.out.size());
    if (split.empty()) {
      if (n_out == 0 || d % n_out != 0)
        throw ShapeError(where() + ": axis " + std::to_string(axis_attr_) + " of size " + std::to_string(d) +
                         " does not split into " + std::to_string(n_out) + " equal parts");
      split.assign(static_cast<size_t>(n_out), d / n_out);
    }
    int64_t sum = 0;
    for (int64_t s : split) {
      if (s < 0) throw ShapeError(where() + ": split " + shape_str(split) + " has a negative size");
      sum += s;
    }
    if (static_cast<int64_t>(split.size()) != n_out || sum != d)
      throw ShapeError(where() + ": split " + shape_str(split) + " must have one size per output (" +
                       std::to_string(n_out) + ") summing to axis " + std::to_string(axis_attr_) + " of " +
                       shape_str(x.shape()));
    outer_ = 1;
    for (size_t k = 0; k < axis; ++k) outer_ *= x.shape()[k];
    int64_t inner = 1;
    for (size_t k = axis + 1; k < x.shape().size(); ++k) inner *= x.shape()[k];
    chunk_.clear();
    for (size_t k = 0; k < split.size(); ++k) {
      chunk_.push_back(split[k] * inner);
      if (!ctx.out[k]) continue;
      Shape s = x.shape();
      s[axis] = split[k];
      ctx.out[k]->plan(x.dtype(), std::move(s));
    }
  }

  // Input row o is output 0's row o, then output 1's row o, ... (as Concat's output).
  void forward(FwdCtx& ctx) override {
    const Tensor& x = *ctx.in[0];
    int64_t at = 0;
    for (int64_t o = 0; o < outer_; ++o)
      for (size_t k = 0; k < chunk_.size(); ++k) {
        if (ctx.out[k]) copy_elems(x, at, *ctx.out[k], o * chunk_[k], chunk_[k]);
        at += chunk_[k];
      }
  }

  void backward(BwdCtx& ctx) override {
    if (!ctx.din[0]) return;
    float* dx = ctx.din[0]->f();
    int64_t at = 0;
    for (int64_t o = 0; o < outer_; ++o)
      for (size_t k = 0; k < chunk_.size(); ++k) {
        if (k < ctx.dout.size() && ctx.dout[k]) add_elems(ctx.dout[k]->f() + o * chunk_[k], dx + at, chunk_[k]);
        at += chunk_[k];
      }
  }

  OpTraits traits() const override {
    OpTraits t;
    t.linear = true;
    t.rearranges = true;
    return t;
  }
  bool differentiable_input(size_t i) const override { return i == 0; }

 private:
  int version_ = 0;
  int64_t axis_attr_ = 0;
  std::vector<int64_t> split_;
  int64_t outer_ = 1;
  std::vector<int64_t> chunk_;  // elements per outer index, per output
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<Split>(node); }

std::vector<OpSample> samples() {
  std::vector<float> v(12);
  for (size_t k = 0; k < v.size(); ++k) v[k] = 0.21f * float(k) - 1.1f;
  OpSample a;
  a.label = "split 2x6 axis 1 into [1, 2, 3] (split input)";
  a.node = sample_node("Split", 2, 3, {{"axis", attr_i(1)}}, 13);
  a.inputs = {Tensor::floats({2, 6}, v), Tensor::ints({3}, {1, 2, 3})};
  a.check_grad = {true, false};
  a.grad_outputs = {true, true, true};
  OpSample b;
  b.label = "split 4x3 axis -2 into 2 equal parts (version 11)";
  b.node = sample_node("Split", 1, 2, {{"axis", attr_i(-2)}}, 11);
  b.inputs = {Tensor::floats({4, 3}, v)};
  b.check_grad = {true};
  b.grad_outputs = {true, true};
  OpSample c;
  c.label = "split 6 with the split attribute [4, 2] (version 2)";
  c.node = sample_node("Split", 1, 2, {{"split", attr_ints({4, 2})}}, 2);
  c.inputs = {Tensor::floats({6}, std::vector<float>(v.begin(), v.begin() + 6))};
  c.check_grad = {true};
  c.grad_outputs = {false, true};
  return {a, b, c};
}

}  // namespace

OpInfo op_info_split() { return {"Split", {2, 11, 13}, make, samples}; }

}  // namespace dl::rt
