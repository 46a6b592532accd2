// Shared machinery for element-wise unary ops (activations and math functions). An
// op file supplies the forward function y = f(x) and the derivative dy/dx, computed
// from x and y, as lambdas; this template does shapes, loops and accumulation.
#pragma once

#include <cmath>
#include <memory>

#include "converter/errors.h"
#include "runtime/op.h"

namespace dl::rt {

template <class Fwd, class Deriv>
class UnaryOp : public Op {
 public:
  UnaryOp(const ir::Node& node, OpTraits traits, Fwd fwd, Deriv deriv)
      : Op(node), traits_(traits), fwd_(fwd), deriv_(deriv) {}

  void infer(InferCtx& ctx) override {
    if (ctx.in.size() != 1 || !ctx.in[0]) throw ShapeError(where() + ": expects exactly one input");
    if (ctx.in[0]->dtype() != DType::kFloat32) throw ShapeError(where() + ": input must be float32");
    ctx.out[0]->plan(DType::kFloat32, ctx.in[0]->shape());
  }

  void forward(FwdCtx& ctx) override {
    const float* x = ctx.in[0]->f();
    float* y = ctx.out[0]->f();
    const int64_t n = ctx.in[0]->numel();
    for (int64_t k = 0; k < n; ++k) y[k] = fwd_(x[k]);
  }

  void backward(BwdCtx& ctx) override {
    if (!ctx.din[0] || !ctx.dout[0]) return;
    const float* x = ctx.in[0]->f();
    const float* y = ctx.out[0]->f();
    const float* dy = ctx.dout[0]->f();
    float* dx = ctx.din[0]->f();
    const int64_t n = ctx.in[0]->numel();
    for (int64_t k = 0; k < n; ++k) dx[k] += dy[k] * deriv_(x[k], y[k]);
  }

  OpTraits traits() const override { return traits_; }

 private:
  OpTraits traits_;
  Fwd fwd_;
  Deriv deriv_;
};

template <class Fwd, class Deriv>
std::unique_ptr<Op> make_unary(const ir::Node& node, OpTraits traits, Fwd fwd, Deriv deriv) {
  return std::make_unique<UnaryOp<Fwd, Deriv>>(node, traits, fwd, deriv);
}

inline OpTraits activation_traits(double lo, double hi) {
  OpTraits t;
  t.role = OpTraits::Role::kActivation;
  t.out_lo = lo;
  t.out_hi = hi;
  return t;
}

}  // namespace dl::rt
