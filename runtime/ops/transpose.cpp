// Transpose (since 1, 13): output axis k is input axis perm[k]; perm defaults to the
// reversed axes.
#include "runtime/attrs.h"
#include "runtime/ops/shape_util.h"
#include "runtime/ops/strided.h"

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
    Shape out_dims(r, 0);
    std::vector<int64_t> strides(r, 0);  // input stride of each output axis
    for (size_t k = 0; k < r; ++k) {
      const int64_t p = perm[k];
      if (p < 0 || p >= static_cast<int64_t>(r) || seen[static_cast<size_t>(p)])
        throw ShapeError(where() + ": perm " + shape_str(perm) + " is not a permutation of the input's " +
                         std::to_string(r) + " axes");
      seen[static_cast<size_t>(p)] = true;
      out_dims[k] = in[static_cast<size_t>(p)];
      strides[k] = in_strides[static_cast<size_t>(p)];
    }
    walk_.set(out_dims, strides);
    ctx.out[0]->plan(ctx.in[0]->dtype(), out_dims);
  }

  void forward(FwdCtx& ctx) override { walk_.gather(*ctx.in[0], *ctx.out[0]); }

  void backward(BwdCtx& ctx) override {
    if (!ctx.din[0] || !ctx.dout[0]) return;
    walk_.scatter_add(ctx.dout[0]->f(), ctx.din[0]->f());
  }

  OpTraits traits() const override { return shape_traits(); }

 private:
  bool has_perm_ = false;
  std::vector<int64_t> perm_;
  StridedWalk walk_;
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
