// Identity (since 1, 13, 14, 16): y = x for float32 and int64 tensors (sequence and
// optional types, added in 14 and 16, do not occur in our graphs).
#include <algorithm>

#include "converter/errors.h"
#include "runtime/attrs.h"
#include "runtime/op.h"
#include "runtime/ops/shape_util.h"
#include "runtime/sink_chunks.h"

namespace dl::rt {
namespace {

class IdentityOp : public Op {
 public:
  using Op::Op;

  void infer(InferCtx& ctx) override {
    if (ctx.in.size() != 1 || !ctx.in[0]) throw ShapeError(where() + ": expects exactly one input");
    ctx.out[0]->plan(ctx.in[0]->dtype(), ctx.in[0]->shape());
  }

  void forward(FwdCtx& ctx) override {
    const Tensor& x = *ctx.in[0];
    Tensor& y = *ctx.out[0];
    if (x.dtype() == DType::kFloat32)
      std::copy(x.f(), x.f() + x.numel(), y.f());
    else
      std::copy(x.i(), x.i() + x.numel(), y.i());
  }

  void backward(BwdCtx& ctx) override {
    if (!ctx.din[0] || !ctx.dout[0] || ctx.in[0]->dtype() != DType::kFloat32) return;
    const float* dy = ctx.dout[0]->f();
    float* dx = ctx.din[0]->f();
    const bool assign = ctx.assigns(0);
    chunked_loop(ctx.in[0]->numel(), ctx.dout_stats, dy,
                 [&](int64_t lo, int64_t hi) { add_elems(dy + lo, dx + lo, hi - lo, assign); });
  }
  bool assigns_gradient(size_t i) const override { return i == 0; }
  bool copies_input() const override { return true; }
  bool views_input() const override { return true; }

  OpTraits traits() const override {
    OpTraits t;
    t.role = OpTraits::Role::kShape;
    t.linear = true;
    return t;
  }
};

std::unique_ptr<Op> make(const ir::Node& node) {
  Attrs(node).finish();
  return std::make_unique<IdentityOp>(node);
}

std::vector<OpSample> samples() {
  std::vector<OpSample> out(2);
  out[0].label = "float 2x3";
  out[0].node = sample_node("Identity", 1);
  out[0].inputs = {Tensor::floats({2, 3}, {-1.5f, 0.7f, 2.0f, -0.3f, 0.4f, -2.2f})};
  out[0].check_grad = {true};
  out[1].label = "int64 shape vector";
  out[1].node = sample_node("Identity", 1);
  out[1].inputs = {Tensor::ints({2}, {4, 7})};
  out[1].check_grad = {false};
  return out;
}

}  // namespace

OpInfo op_info_identity() { return {"Identity", {1, 13, 14, 16}, make, samples}; }

}  // namespace dl::rt
