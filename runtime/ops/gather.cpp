// Gather (since 1, 11, 13): out = data indexed along axis by int64 indices of any rank;
// output shape data[:axis] + indices + data[axis+1:]. Negative indices count from the
// end; out-of-range indices throw DataError naming the node. data is float32 or int64.
// A float initializer gathered by ids is an embedding table: a trainable parameter whose
// gradient is the scatter-add of dy into the rows used, and the node then starts a layer.
#include "runtime/attrs.h"
#include "runtime/ops/shape_util.h"

namespace dl::rt {
namespace {

class Gather : public Op {
 public:
  explicit Gather(const ir::Node& node) : Op(node) {
    Attrs a(node);
    axis_attr_ = a.i("axis", 0);
    a.finish();
  }

  void infer(InferCtx& ctx) override {
    check_inputs(ctx, 2, 2, 2, where());
    const Tensor& data = *ctx.in[0];
    const Tensor& idx = *ctx.in[1];
    if (idx.dtype() != DType::kInt64)
      throw ShapeError(where() + ": indices must be int64, got " + dtype_name(idx.dtype()));
    if (data.rank() == 0) throw ShapeError(where() + ": data must have rank >= 1, got a scalar");
    const size_t axis = static_cast<size_t>(normalize_axis(axis_attr_, data.rank(), where(), "axis"));
    const Shape& ds = data.shape();
    Shape out(ds.begin(), ds.begin() + static_cast<std::ptrdiff_t>(axis));
    out.insert(out.end(), idx.shape().begin(), idx.shape().end());
    out.insert(out.end(), ds.begin() + static_cast<std::ptrdiff_t>(axis) + 1, ds.end());
    outer_ = 1;
    for (size_t d = 0; d < axis; ++d) outer_ *= ds[d];
    axis_dim_ = ds[axis];
    inner_ = 1;
    for (size_t d = axis + 1; d < ds.size(); ++d) inner_ *= ds[d];
    if (ctx.known.size() > 1 && ctx.known[1]) check_indices(idx);  // fail at plan time when we can
    embedding_ = !ctx.param.empty() && ctx.param[0];
    rows_axis_ = axis == 0;
    ctx.out[0]->plan(data.dtype(), std::move(out));
  }

  void forward(FwdCtx& ctx) override {
    const Tensor& data = *ctx.in[0];
    const Tensor& idx = *ctx.in[1];
    check_indices(idx);
    const int64_t n = idx.numel();
    Tensor& y = *ctx.out[0];
    for (int64_t o = 0; o < outer_; ++o)
      for (int64_t j = 0; j < n; ++j)
        copy_elems(data, (o * axis_dim_ + wrap(idx.i()[j])) * inner_, y, (o * n + j) * inner_, inner_);
  }

  void backward(BwdCtx& ctx) override {
    if (!ctx.din[0] || !ctx.dout[0]) return;
    const Tensor& idx = *ctx.in[1];
    const int64_t n = idx.numel();
    const float* dy = ctx.dout[0]->f();
    float* dx = ctx.din[0]->f();
    for (int64_t o = 0; o < outer_; ++o)
      for (int64_t j = 0; j < n; ++j)
        add_elems(dy + (o * n + j) * inner_, dx + (o * axis_dim_ + wrap(idx.i()[j])) * inner_, inner_);
  }

  OpTraits traits() const override {
    OpTraits t;
    t.role = embedding_ ? OpTraits::Role::kParameterized : OpTraits::Role::kOther;
    // A lookup, not an affine map of its input (the ids): an Embedding before a Dense is no
    // linear stack, and the table's N(0, 1) (PyTorch's default) is no too-wide fan-in.
    t.linear = !embedding_;
    t.embedding = embedding_ && rows_axis_;  // rows of the table are what an id selects
    return t;
  }
  bool differentiable_input(size_t i) const override { return i == 0; }
  // Keras' Embedding fans: the rows (ids) in, the row width out.
  ParamRole param_role(size_t i, const Shape& s) const override {
    if (i != 0 || s.empty()) return {};
    const int64_t r = static_cast<int64_t>(s.size());
    if (axis_attr_ < -r || axis_attr_ >= r) return {};
    const int64_t rows = s[static_cast<size_t>(axis_attr_ < 0 ? axis_attr_ + r : axis_attr_)];
    ParamRole role;
    role.kind = ParamRole::Kind::kEmbedding;
    role.fan_in = rows;
    role.fan_out = rows > 0 ? shape_numel(s) / rows : 0;
    return role;
  }

 private:
  int64_t wrap(int64_t k) const { return k < 0 ? k + axis_dim_ : k; }

  void check_indices(const Tensor& idx) const {
    for (int64_t j = 0; j < idx.numel(); ++j) {
      const int64_t k = idx.i()[j];
      if (k < -axis_dim_ || k >= axis_dim_)
        throw IndexRangeError(where() + ": index " + std::to_string(k) + " (element " + std::to_string(j) +
                        " of indices) is out of range for axis size " + std::to_string(axis_dim_), k);
    }
  }

  int64_t axis_attr_ = 0;
  bool embedding_ = false;  // data is a trainable parameter (infer)
  bool rows_axis_ = false;  // gathers along axis 0 (infer)
  int64_t outer_ = 1, axis_dim_ = 0, inner_ = 1;
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<Gather>(node); }

std::vector<OpSample> samples() {
  const std::vector<float> v = {1.0f, 1.2f, 1.9f, 2.3f, -3.4f, 0.9f, -0.5f, 2.7f, -1.9f};
  OpSample a;
  a.label = "gather 3x3 axis 0, 2x2 indices with repeats and negatives";
  a.node = sample_node("Gather", 2);
  a.inputs = {Tensor::floats({3, 3}, v), Tensor::ints({2, 2}, {0, -1, 1, 0})};
  a.check_grad = {true, false};
  OpSample b;
  b.label = "gather 3x3 axis 1, 1x2 indices";
  b.node = sample_node("Gather", 2, 1, {{"axis", attr_i(1)}});
  b.inputs = {Tensor::floats({3, 3}, v), Tensor::ints({1, 2}, {0, 2})};
  b.check_grad = {true, false};
  OpSample c;
  c.label = "gather int64 shape element, scalar index";
  c.node = sample_node("Gather", 2);
  c.inputs = {Tensor::ints({4}, {8, 3, 5, 5}), Tensor::ints({}, {0})};
  c.check_grad = {false, false};
  return {a, b, c};
}

}  // namespace

OpInfo op_info_gather() { return {"Gather", {1, 11, 13}, make, samples}; }

}  // namespace dl::rt
