// Shared machinery for element-wise unary ops (activations and math functions). An
// op file supplies the forward function y = f(x) and the derivative dy/dx, computed
// from x and y, as lambdas; this template does shapes, loops and accumulation. An op
// may also supply both as functions of vectors (simd::VecF, lane for lane the
// same results): then, when the probe's sink is light, the loops reduce the reported
// tensors in registers as they go (simd::light_pass) instead of reading them back:
// forward Y and X, backward dY and dX (the previous step's output gradient when this
// step alone reads that output: BatchNormalization's on small maps, which no loop of its
// own reports, runtime/ops/batch_normalization.cpp).
#pragma once

#include <cmath>
#include <cstddef>
#include <memory>
#include <type_traits>

#include "converter/errors.h"
#include "runtime/op.h"
#include "runtime/parallel.h"
#include "runtime/value_simd.h"

namespace dl::rt {

template <class Fwd, class Deriv, class VecFwd = std::nullptr_t, class VecDeriv = std::nullptr_t>
class UnaryOp : public Op {
  static constexpr bool kVec = !std::is_same_v<VecFwd, std::nullptr_t>;

 public:
  UnaryOp(const ir::Node& node, OpTraits traits, Fwd fwd, Deriv deriv, VecFwd vfwd = nullptr,
          VecDeriv vderiv = nullptr)
      : Op(node), traits_(traits), fwd_(fwd), deriv_(deriv), vfwd_(vfwd), vderiv_(vderiv) {}

  void infer(InferCtx& ctx) override {
    if (ctx.in.size() != 1 || !ctx.in[0]) throw ShapeError(where() + ": expects exactly one input");
    if (ctx.in[0]->dtype() != DType::kFloat32) throw ShapeError(where() + ": input must be float32");
    ctx.out[0]->plan(DType::kFloat32, ctx.in[0]->shape());
  }

  // Large tensors go in fixed parts (elementwise_parts) on the compute threads; each
  // part runs in L1-sized chunks and reports each chunk to the probes' sinks right after
  // computing it (out[0] and in[0] forward, dout[0] and din[0] backward).
  void forward(FwdCtx& ctx) override {
    Pass p{this, ctx.in[0]->f(), nullptr, nullptr, ctx.out[0]->f(), ctx.in[0]->numel(), ctx.out_stats,
           [](const Pass& p, int64_t lo, int64_t hi) -> const float* {
             int64_t k = lo;
             if constexpr (kVec)
               for (; k + simd::kLanes <= hi; k += simd::kLanes) simd::storev(p.out + k, p.op->vfwd_(simd::loadv(p.x + k)));
             for (; k < hi; ++k) p.out[k] = p.op->fwd_(p.x[k]);
             return p.out + lo;
           }};
    p.in_stats = ctx.in_stats;
    p.in_values = p.x;
    if constexpr (kVec) p.fused = [](const Pass& p, int64_t lo, int64_t hi, stats::Sums& sums, stats::Sums* in) {
      const float* x = p.x + lo;
      float* y = p.out + lo;
      if (in) {  // the input's statistics too, from the same registers
        simd::light_pass2(
            hi - lo,
            [&](int64_t k, simd::VecF& a, simd::VecF& b) {
              a = simd::loadv(x + k);
              b = p.op->vfwd_(a);
              simd::storev(y + k, b);
            },
            [&](int64_t k, float& a, float& b) { b = y[k] = p.op->fwd_(a = x[k]); }, *in, sums);
        return;
      }
      simd::light_pass(
          hi - lo,
          [&](int64_t k) {
            const simd::VecF v = p.op->vfwd_(simd::loadv(x + k));
            simd::storev(y + k, v);
            return v;
          },
          [&](int64_t k) { return y[k] = p.op->fwd_(x[k]); }, sums);
    };
    run(p);
  }

  bool reports_input() const override { return kVec; }

  void backward(BwdCtx& ctx) override {
    if (!ctx.din[0] || !ctx.dout[0]) return;
    Pass p{this, ctx.in[0]->f(), ctx.out[0]->f(), ctx.dout[0]->f(), ctx.din[0]->f(), ctx.in[0]->numel(),
           ctx.dout_stats, ctx.assigns(0) ? &bwd_step<true> : &bwd_step<false>};
    if constexpr (kVec) p.fused = ctx.assigns(0) ? &bwd_fused<true> : &bwd_fused<false>;
    p.in_stats = ctx.din_stats;
    p.in_values = p.out;
    run(p);
  }
  bool assigns_gradient(size_t i) const override { return i == 0; }
  bool reports_input_gradient() const override { return kVec; }

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
    // The same, adding the light sums of the reported values to `sums` and of the input's
    // (forward X, backward dX) to `*in` when not null (vector ops only).
    void (*fused)(const Pass&, int64_t lo, int64_t hi, stats::Sums& sums, stats::Sums* in) = nullptr;
    ValueSink* in_stats = nullptr;  // FwdCtx::in_stats forward, BwdCtx::din_stats backward
    const float* in_values = nullptr;  // what in_stats gets: X forward, dX backward
  };

  // dX (+)= dY * f'(x, y) over [lo, hi): kAssign writes 0 + the term (the bits of adding
  // onto a zeroed buffer) without reading dX.
  // The vector forms where the op has them (the same bits: they are lane for lane the
  // scalar ones), as the fused loops: the compiler vectorises some scalar forms poorly or
  // not at all (Relu's derivative: ~6x the instructions of the vector loop).
  template <bool kAssign>
  static const float* bwd_step(const Pass& p, int64_t lo, int64_t hi) {
    int64_t k = lo;
    if constexpr (kVec)
      for (; k + simd::kLanes <= hi; k += simd::kLanes) {
        const simd::VecF d = p.op->vderiv_(simd::loadv(p.x + k), simd::loadv(p.y + k));
        simd::storev(p.out + k, (kAssign ? simd::VecF{} : simd::loadv(p.out + k)) + simd::loadv(p.dy + k) * d);
      }
    for (; k < hi; ++k) p.out[k] = (kAssign ? 0.0f : p.out[k]) + p.dy[k] * p.op->deriv_(p.x[k], p.y[k]);
    return p.dy + lo;
  }
  template <bool kAssign>
  static void bwd_fused(const Pass& p, int64_t lo, int64_t hi, stats::Sums& sums, stats::Sums* in) {
    if constexpr (kVec) {
      const float *x = p.x + lo, *y = p.y + lo, *dy = p.dy + lo;
      float* dx = p.out + lo;
      if (in) {  // dX's statistics too, from the same registers
        simd::light_pass2(
            hi - lo,
            [&](int64_t k, simd::VecF& g, simd::VecF& d) {
              g = simd::loadv(dy + k);
              d = (kAssign ? simd::VecF{} : simd::loadv(dx + k)) +
                  g * p.op->vderiv_(simd::loadv(x + k), simd::loadv(y + k));
              simd::storev(dx + k, d);
            },
            [&](int64_t k, float& g, float& d) {
              g = dy[k];
              d = dx[k] = (kAssign ? 0.0f : dx[k]) + g * p.op->deriv_(x[k], y[k]);
            },
            sums, *in);
        return;
      }
      simd::light_pass(
          hi - lo,
          [&](int64_t k) {
            const simd::VecF g = simd::loadv(dy + k);
            const simd::VecF d = p.op->vderiv_(simd::loadv(x + k), simd::loadv(y + k));
            simd::storev(dx + k, (kAssign ? simd::VecF{} : simd::loadv(dx + k)) + g * d);
            return g;
          },
          [&](int64_t k) {
            dx[k] = (kAssign ? 0.0f : dx[k]) + dy[k] * p.op->deriv_(x[k], y[k]);
            return dy[k];
          },
          sums);
    }
  }

  static_assert(kMaxElementwiseParts <= ValueSink::kParts, "each part reports as one sink part");
  static_assert(kChunk <= stats::kBlock, "a fused chunk sums like one block of the sink's own pass");
  static void run(const Pass& pass) {
    const int64_t parts = elementwise_parts(pass.n);
    parallel_blocks(parts, loop_threads(pass.n, kParallelValues), [](const void* c, int64_t part) {
      const Pass& p = *static_cast<const Pass*>(c);
      int64_t lo, hi;
      part_range(p.n, elementwise_parts(p.n), part, lo, hi);
      const bool fused = p.fused && p.stats && p.stats->light();
      const bool fused_in = fused && p.in_stats && p.in_stats->light();
      for (int64_t k = lo; k < hi; k += kChunk) {
        const int64_t end = std::min(hi, k + kChunk);
        if (fused) {  // a chunk is at most one light_pass block: the sums of the sink's own pass
          stats::Sums sums, in;
          p.fused(p, k, end, sums, fused_in ? &in : nullptr);
          p.stats->add_sums(part, sums, end - k);
          if (fused_in) p.in_stats->add_sums(part, in, end - k);
          continue;
        }
        const float* done = p.step(p, k, end);
        if (p.stats) p.stats->add(part, done, end - k);
        // (A full output with a deferred light input, a plain probe's: Conv -> Relu at a
        // full iteration; or no dY sink with a light dX one. The chunk is still in L1.)
        if (p.in_stats && p.in_stats->light()) p.in_stats->add(part, p.in_values + k, end - k);
      }
    }, &pass);
  }

  OpTraits traits_;
  Fwd fwd_;
  Deriv deriv_;
  VecFwd vfwd_;
  VecDeriv vderiv_;
};

template <class Fwd, class Deriv>
std::unique_ptr<Op> make_unary(const ir::Node& node, OpTraits traits, Fwd fwd, Deriv deriv) {
  return std::make_unique<UnaryOp<Fwd, Deriv>>(node, traits, fwd, deriv);
}

// With the vector forms: vfwd(simd::VecF x), vderiv(simd::VecF x, simd::VecF y).
template <class Fwd, class Deriv, class VecFwd, class VecDeriv>
std::unique_ptr<Op> make_unary(const ir::Node& node, OpTraits traits, Fwd fwd, Deriv deriv, VecFwd vfwd,
                               VecDeriv vderiv) {
  return std::make_unique<UnaryOp<Fwd, Deriv, VecFwd, VecDeriv>>(node, traits, fwd, deriv, vfwd, vderiv);
}

inline OpTraits activation_traits(double lo, double hi) {
  OpTraits t;
  t.role = OpTraits::Role::kActivation;
  t.out_lo = lo;
  t.out_hi = hi;
  return t;
}

}  // namespace dl::rt
