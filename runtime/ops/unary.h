// Shared machinery for element-wise unary ops (activations and math functions). An
// op file supplies the forward function y = f(x) and the derivative dy/dx, computed
// from x and y, as lambdas; this template does shapes, loops and accumulation.
#pragma once

#include <cmath>
#include <memory>

#include "converter/errors.h"
#include "runtime/op.h"
#include "runtime/parallel.h"

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

  // Large tensors go in fixed parts (elementwise_parts) on the compute threads; each
  // part runs in L1-sized chunks and reports each chunk to the probe's sink right after
  // computing it (out[0] forward, dout[0] backward).
  void forward(FwdCtx& ctx) override {
    const Pass p{this, ctx.in[0]->f(), nullptr, nullptr, ctx.out[0]->f(), ctx.in[0]->numel(), ctx.out_stats,
                 [](const Pass& p, int64_t lo, int64_t hi) -> const float* {
                   for (int64_t k = lo; k < hi; ++k) p.out[k] = p.op->fwd_(p.x[k]);
                   return p.out + lo;
                 }};
    run(p);
  }

  void backward(BwdCtx& ctx) override {
    if (!ctx.din[0] || !ctx.dout[0]) return;
    const Pass p{this, ctx.in[0]->f(), ctx.out[0]->f(), ctx.dout[0]->f(), ctx.din[0]->f(), ctx.in[0]->numel(),
                 ctx.dout_stats, [](const Pass& p, int64_t lo, int64_t hi) -> const float* {
                   for (int64_t k = lo; k < hi; ++k) p.out[k] += p.dy[k] * p.op->deriv_(p.x[k], p.y[k]);
                   return p.dy + lo;
                 }};
    run(p);
  }

  OpTraits traits() const override { return traits_; }

 private:
  struct Pass {
    const UnaryOp* op;
    const float *x, *y, *dy;
    float* out;
    int64_t n;
    ValueSink* stats;
    // Computes values [lo, hi) and returns the reported tensor's values there.
    const float* (*step)(const Pass&, int64_t lo, int64_t hi);
  };

  static_assert(kMaxElementwiseParts <= ValueSink::kParts, "each part reports as one sink part");
  static void run(const Pass& pass) {
    const int64_t parts = elementwise_parts(pass.n);
    parallel_blocks(parts, loop_threads(pass.n, kParallelValues), [](const void* c, int64_t part) {
      const Pass& p = *static_cast<const Pass*>(c);
      int64_t lo, hi;
      part_range(p.n, elementwise_parts(p.n), part, lo, hi);
      for (int64_t k = lo; k < hi; k += kChunk) {
        const int64_t end = std::min(hi, k + kChunk);
        const float* done = p.step(p, k, end);
        if (p.stats) p.stats->add(part, done, end - k);
      }
    }, &pass);
  }

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
