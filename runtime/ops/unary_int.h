// Unary ops that also accept int64 tensors (Abs, Neg): PyTorch exports apply them to
// shape and index arithmetic. float32 behaves exactly as UnaryOp (with gradients);
// int64 runs a forward-only integer function.
#pragma once

#include "runtime/ops/unary.h"

namespace dl::rt {

template <class Fwd, class Deriv, class FwdInt>
class IntUnaryOp : public UnaryOp<Fwd, Deriv> {
 public:
  IntUnaryOp(const ir::Node& node, OpTraits traits, Fwd fwd, Deriv deriv, FwdInt fwd_int)
      : UnaryOp<Fwd, Deriv>(node, traits, fwd, deriv), fwd_int_(fwd_int) {}

  void infer(InferCtx& ctx) override {
    if (ctx.in.size() == 1 && ctx.in[0] && ctx.in[0]->dtype() == DType::kInt64) {
      ctx.out[0]->plan(DType::kInt64, ctx.in[0]->shape());
      return;
    }
    UnaryOp<Fwd, Deriv>::infer(ctx);
  }

  void forward(FwdCtx& ctx) override {
    if (ctx.in[0]->dtype() != DType::kInt64) return UnaryOp<Fwd, Deriv>::forward(ctx);
    const int64_t* x = ctx.in[0]->i();
    int64_t* y = ctx.out[0]->i();
    const int64_t n = ctx.in[0]->numel();
    for (int64_t k = 0; k < n; ++k) y[k] = fwd_int_(x[k]);
  }

  void backward(BwdCtx& ctx) override {
    if (ctx.in[0]->dtype() == DType::kInt64) return;  // integers carry no gradient
    UnaryOp<Fwd, Deriv>::backward(ctx);
  }

 private:
  FwdInt fwd_int_;
};

template <class Fwd, class Deriv, class FwdInt>
std::unique_ptr<Op> make_int_unary(const ir::Node& node, OpTraits traits, Fwd fwd, Deriv deriv, FwdInt fwd_int) {
  return std::make_unique<IntUnaryOp<Fwd, Deriv, FwdInt>>(node, traits, fwd, deriv, fwd_int);
}

}  // namespace dl::rt
