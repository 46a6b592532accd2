// Transpose (since 1, 13): output axis k is input axis perm[k]; perm defaults to the
// reversed axes.
#include "runtime/attrs.h"
#include "runtime/ops/shape_util.h"

namespace dl::rt {
namespace {

class Transpose : public Op {
 public:
  explicit Transpose(const ir::Node& node) : Op(node) {
    Attrs a(node);
    has_perm_ = a.has("perm");
    perm_ = a.ints("perm");
    a.finish();
  }

  void infer(InferCtx& ctx) override {
    check_inputs(ctx, 1, 1, 1, where());
    const Shape& in = ctx.in[0]->shape();
    const size_t r = in.size();
    std::vector<int64_t> perm = perm_;
    if (!has_perm_)
      for (size_t k = 0; k < r; ++k) perm.push_back(static_cast<int64_t>(r - 1 - k));
    if (perm.size() != r)
      throw ShapeError(where() + ": perm " + shape_str(perm) + " does not match input rank " + std::to_string(r) +
                       " (input " + shape_str(in) + ")");
    std::vector<bool> seen(r, false);
    Shape in_strides(r, 1);
    for (size_t k = r; k-- > 1;) in_strides[k - 1] = in_strides[k] * in[k];
    out_dims_.assign(r, 0);
    strides_.assign(r, 0);
    for (size_t k = 0; k < r; ++k) {
      const int64_t p = perm[k];
      if (p < 0 || p >= static_cast<int64_t>(r) || seen[static_cast<size_t>(p)])
        throw ShapeError(where() + ": perm " + shape_str(perm) + " is not a permutation of the input's " +
                         std::to_string(r) + " axes");
      seen[static_cast<size_t>(p)] = true;
      out_dims_[k] = in[static_cast<size_t>(p)];
      strides_[k] = in_strides[static_cast<size_t>(p)];
    }
    counter_.assign(r, 0);
    ctx.out[0]->plan(ctx.in[0]->dtype(), out_dims_);
  }

  void forward(FwdCtx& ctx) override {
    const Tensor& x = *ctx.in[0];
    Tensor& y = *ctx.out[0];
    if (x.dtype() == DType::kFloat32) {
      const float* src = x.f();
      float* dst = y.f();
      walk([&](int64_t o, int64_t i) { dst[o] = src[i]; });
    } else {
      const int64_t* src = x.i();
      int64_t* dst = y.i();
      walk([&](int64_t o, int64_t i) { dst[o] = src[i]; });
    }
  }

  void backward(BwdCtx& ctx) override {
    if (!ctx.din[0] || !ctx.dout[0]) return;
    const float* dy = ctx.dout[0]->f();
    float* dx = ctx.din[0]->f();
    walk([&](int64_t o, int64_t i) { dx[i] += dy[o]; });
  }

  OpTraits traits() const override { return shape_traits(); }

 private:
  // Calls f(output offset, input offset) for every element in output order: an
  // odometer over the outer output axes, a strided run over the innermost one.
  template <class F>
  void walk(F f) {
    const size_t r = out_dims_.size();
    int64_t total = 1;
    for (int64_t d : out_dims_) total *= d;
    if (total == 0) return;
    if (r == 0) {
      f(0, 0);
      return;
    }
    std::fill(counter_.begin(), counter_.end(), 0);
    const int64_t inner = out_dims_[r - 1], inner_stride = strides_[r - 1];
    int64_t base = 0;
    for (int64_t o = 0; o < total; o += inner) {
      for (int64_t k = 0; k < inner; ++k) f(o + k, base + k * inner_stride);
      for (size_t ax = r - 1; ax-- > 0;) {  // advance the outer odometer
        base += strides_[ax];
        if (++counter_[ax] < out_dims_[ax]) break;
        base -= strides_[ax] * out_dims_[ax];
        counter_[ax] = 0;
      }
    }
  }

  bool has_perm_ = false;
  std::vector<int64_t> perm_;
  Shape out_dims_;
  std::vector<int64_t> strides_;  // input stride of each output axis
  std::vector<int64_t> counter_;
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<Transpose>(node); }

std::vector<OpSample> samples() {
  std::vector<float> v(24);
  for (size_t k = 0; k < v.size(); ++k) v[k] = 0.13f * float(k) - 1.5f;
  OpSample a;
  a.label = "transpose 2x3x4 default (reverse)";
  a.node = sample_node("Transpose", 1);
  a.inputs = {Tensor::floats({2, 3, 4}, v)};
  a.check_grad = {true};
  OpSample b;
  b.label = "transpose 2x3x4 perm [1, 2, 0]";
  b.node = sample_node("Transpose", 1, 1, {{"perm", attr_ints({1, 2, 0})}});
  b.inputs = {Tensor::floats({2, 3, 4}, v)};
  b.check_grad = {true};
  return {a, b};
}

}  // namespace

OpInfo op_info_transpose() { return {"Transpose", {1, 13}, make, samples}; }

}  // namespace dl::rt
