// Clip (since 6, 11, 12, 13): y = min(max(x, lo), hi). Before 11 the bounds are the
// `min`/`max` attributes; from 11 they are optional scalar inputs, read at forward
// time (they may be computed by the graph) and never differentiated. float32 with
// gradients; int64 forward (12+ allows integer types). Missing bounds are +-infinity
// rather than the spec's +-FLT_MAX so an overflowed inf stays visible to the analysis.
// When lo > hi every output is hi, as the spec requires. Given light probe sinks
// (ValueSink::light), float Clip reduces Y and X (forward) and dY and dX (backward) in its
// loops; full ones get Y, X and dY chunk by chunk (and a light dX sink dX's chunks).
#include <algorithm>
#include <limits>
#include <type_traits>

#include "converter/errors.h"
#include "runtime/attrs.h"
#include "runtime/op.h"
#include "runtime/sink_chunks.h"
#include "runtime/value_simd.h"

namespace dl::rt {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

class ClipOp : public Op {
 public:
  ClipOp(const ir::Node& node, bool bounds_are_inputs, float lo, float hi)
      : Op(node), bounds_are_inputs_(bounds_are_inputs), lo_(lo), hi_(hi) {}

  void infer(InferCtx& ctx) override {
    if (ctx.in.empty() || !ctx.in[0]) throw ShapeError(where() + ": expects an input");
    const size_t max_inputs = bounds_are_inputs_ ? 3 : 1;
    if (ctx.in.size() > max_inputs)
      throw ShapeError(where() + ": expects at most " + std::to_string(max_inputs) + " inputs");
    const Tensor& x = *ctx.in[0];
    if (x.dtype() != DType::kFloat32 && x.dtype() != DType::kInt64)
      throw ShapeError(where() + ": input is " + dtype_name(x.dtype()) + "; Clip takes numbers (float or int64)");
    for (size_t k = 1; k < ctx.in.size(); ++k) {
      if (!ctx.in[k]) continue;
      if (ctx.in[k]->numel() != 1)
        throw ShapeError(where() + ": bound " + (k == 1 ? "'min'" : "'max'") + " must be a scalar, got shape " +
                         shape_str(ctx.in[k]->shape()));
      if (ctx.in[k]->dtype() != x.dtype())
        throw ShapeError(where() + ": bound " + (k == 1 ? "'min'" : "'max'") + " is " +
                         dtype_name(ctx.in[k]->dtype()) + " but the input is " + dtype_name(x.dtype()));
      // Bounds known at plan time make the traits exact (ReLU6 is Clip(0, 6)).
      if (k < ctx.known.size() && ctx.known[k]) (k == 1 ? lo_ : hi_) = static_cast<float>(ctx.in[k]->at(0));
    }
    ctx.out[0]->plan(x.dtype(), x.shape());
  }

  void forward(FwdCtx& ctx) override {
    const Tensor& x = *ctx.in[0];
    const Tensor* lo_t = bound(ctx.in, 1);
    const Tensor* hi_t = bound(ctx.in, 2);
    const int64_t n = x.numel();
    if (x.dtype() == DType::kInt64) {
      const int64_t lo = lo_t ? lo_t->i()[0] : std::numeric_limits<int64_t>::min();
      const int64_t hi = hi_t ? hi_t->i()[0] : std::numeric_limits<int64_t>::max();
      const int64_t* xi = x.i();
      int64_t* y = ctx.out[0]->i();
      for (int64_t k = 0; k < n; ++k) {
        const int64_t v = xi[k] < lo ? lo : xi[k];
        y[k] = v > hi ? hi : v;
      }
      return;
    }
    const float lo = bounds_are_inputs_ ? (lo_t ? lo_t->f()[0] : -kInf) : lo_;
    const float hi = bounds_are_inputs_ ? (hi_t ? hi_t->f()[0] : kInf) : hi_;
    const float* xf = x.f();
    float* y = ctx.out[0]->f();
    ValueSink* out_light = ctx.out_stats && ctx.out_stats->light() ? ctx.out_stats : nullptr;
    ValueSink* in_light = ctx.in_stats && ctx.in_stats->light() ? ctx.in_stats : nullptr;
    // Written so a NaN input stays NaN (both comparisons are false); the vector selects
    // are the scalar ones lane by lane, and every loop below runs them.
    using simd::VecF;
    constexpr int kL = simd::kLanes;
    const VecF lov = simd::splat(lo), hiv = simd::splat(hi);
    const auto y_of = [&](VecF xv, int64_t at) {
      const VecF v = xv < lov ? lov : xv;
      const VecF yv = v > hiv ? hiv : v;
      simd::storev(y + at, yv);
      return yv;
    };
    const auto y_scalar = [&](int64_t at) {
      const float v = xf[at] < lo ? lo : xf[at];
      return y[at] = v > hi ? hi : v;
    };
    // Full sinks get Y and X chunk by chunk, while in cache (runtime/sink_chunks.h).
    if (!out_light && !in_light) {
      chunked_loop(n, ctx.out_stats, y, ctx.in_stats, xf, [&](int64_t from, int64_t to) {
        int64_t k = from;
        for (; k + kL <= to; k += kL) y_of(simd::loadv(xf + k), k);
        for (; k < to; ++k) y_scalar(k);
      });
      return;
    }
    // The light sums of Y and of X (the previous step's output) from the loop's
    // registers. Both at once in light_pass2's 2 chains each (two LightSums' 4 chains
    // each are all of AVX-512's 32 registers: the loop spilled, and cost 3x the probe's
    // own passes, bench/README.md run 19).
    stats::Sums ys, xs;
    if (out_light && in_light) {
      simd::light_pass2(
          n,
          [&](int64_t k, VecF& a, VecF& b) {
            a = simd::loadv(xf + k);
            b = y_of(a, k);
          },
          [&](int64_t k, float& a, float& b) {
            a = xf[k];
            b = y_scalar(k);
          },
          xs, ys);
    } else if (out_light) {
      simd::light_pass(n, [&](int64_t k) { return y_of(simd::loadv(xf + k), k); }, y_scalar, ys);
    } else {
      simd::light_pass(
          n,
          [&](int64_t k) {
            const VecF xv = simd::loadv(xf + k);
            y_of(xv, k);
            return xv;
          },
          [&](int64_t k) {
            y_scalar(k);
            return xf[k];
          },
          xs);
    }
    if (out_light) out_light->add_sums(0, ys, n);
    if (in_light) in_light->add_sums(0, xs, n);
  }

  bool reports_input() const override { return true; }

  void backward(BwdCtx& ctx) override {
    if (!ctx.din[0] || !ctx.dout[0] || ctx.in[0]->dtype() != DType::kFloat32) return;
    const Tensor* lo_t = bound(ctx.in, 1);
    const Tensor* hi_t = bound(ctx.in, 2);
    const float lo = bounds_are_inputs_ ? (lo_t ? lo_t->f()[0] : -kInf) : lo_;
    const float hi = bounds_are_inputs_ ? (hi_t ? hi_t->f()[0] : kInf) : hi_;
    const float* x = ctx.in[0]->f();
    const float* dy = ctx.dout[0]->f();
    float* dx = ctx.din[0]->f();
    const int64_t n = ctx.in[0]->numel();
    // kAssign: the gradient's first writer (BwdCtx::assigns): 0 + the term, dX not read.
    const auto run = [&](auto assign) {
      constexpr bool kAssign = decltype(assign)::value;
      // dX from the vector selects (lane by lane the scalar ones; GCC made the scalar
      // loop a branchy scalar one on AVX2: 5% of mobilenet_v2's instructions).
      using simd::VecF;
      const VecF lov = simd::splat(lo), hiv = simd::splat(hi);
      constexpr int kL = simd::kLanes;
      // dX at `at` from dY's vector g there; returns dX's.
      const auto dx_of = [&](VecF g, int64_t at) {
        const VecF xv = simd::loadv(x + at);
        const VecF d = (kAssign ? VecF{} : simd::loadv(dx + at)) + (((xv >= lov) & (xv <= hiv)) ? g : VecF{});
        simd::storev(dx + at, d);
        return d;
      };
      const auto step = [&](int64_t at) {  // returns dY's vector
        const VecF g = simd::loadv(dy + at);
        dx_of(g, at);
        return g;
      };
      const auto scalar = [&](int64_t k) {
        dx[k] = (kAssign ? 0.0f : dx[k]) + ((x[k] >= lo && x[k] <= hi) ? dy[k] : 0.0f);
        return dy[k];
      };
      ValueSink* din_light = ctx.din_stats && ctx.din_stats->light() ? ctx.din_stats : nullptr;
      if (!ctx.dout_stats || !ctx.dout_stats->light()) {  // (a full sink: dY chunk by chunk; dX too)
        chunked_loop(n, ctx.dout_stats, dy, din_light, dx, [&](int64_t from, int64_t to) {
          int64_t k = from;
          for (; k + kL <= to; k += kL) step(k);
          for (; k < to; ++k) scalar(k);
        });
        return;
      }
      if (din_light) {  // dY's and dX's light sums from the loop's registers
        stats::Sums gsums, dsums;
        simd::light_pass2(
            n,
            [&](int64_t k, VecF& g, VecF& d) {
              g = simd::loadv(dy + k);
              d = dx_of(g, k);
            },
            [&](int64_t k, float& g, float& d) {
              g = scalar(k);
              d = dx[k];
            },
            gsums, dsums);
        ctx.dout_stats->add_sums(0, gsums, n);
        din_light->add_sums(0, dsums, n);
        return;
      }
      // dY's light sums from the loop's registers.
      simd::LightSums gs;
      int64_t k = 0;
      for (; k + 4 * kL <= n; k += 4 * kL) {
        const VecF g0 = step(k), g1 = step(k + kL), g2 = step(k + 2 * kL), g3 = step(k + 3 * kL);
        gs.put4(g0, g1, g2, g3);
      }
      for (; k + kL <= n; k += kL) gs.put(step(k));
      for (; k < n; ++k) gs.put_scalar(scalar(k));
      ctx.dout_stats->add_sums(0, gs.finish(), n);
    };
    if (ctx.assigns(0)) run(std::true_type{});
    else run(std::false_type{});
  }
  bool assigns_gradient(size_t i) const override { return i == 0; }
  // dX (the previous step's output gradient when this step alone reads that output:
  // BatchNormalization's before a ReLU6 on small maps) to a light BwdCtx::din_stats.
  bool reports_input_gradient() const override { return true; }

  bool differentiable_input(size_t i) const override { return i == 0; }

  OpTraits traits() const override {
    OpTraits t;
    t.role = OpTraits::Role::kActivation;
    t.out_lo = lo_;
    t.out_hi = hi_;
    // Outputs pinned at a bound have exactly zero gradient: a dead zone at the lower
    // bound (ReLU6's 0) and saturation (margin 0) at either bound.
    t.has_dead_zone = lo_ > -kInf;
    t.dead_value = lo_ > -kInf ? lo_ : 0.0;
    t.saturates = lo_ > -kInf || hi_ < kInf;
    t.sat_margin = 0.0;
    return t;
  }

 private:
  static const Tensor* bound(const std::vector<const Tensor*>& in, size_t k) {
    return k < in.size() ? in[k] : nullptr;
  }

  bool bounds_are_inputs_;
  float lo_, hi_;  // attributes (before 11) or plan-time-known inputs; for traits
};

std::unique_ptr<Op> make(const ir::Node& node) {
  Attrs attrs(node);
  const bool inputs = node.since_version == 0 || node.since_version >= 11;
  float lo = -kInf, hi = kInf;
  if (!inputs) {
    lo = attrs.f("min", -kInf);
    hi = attrs.f("max", kInf);
  }
  attrs.finish();
  return std::make_unique<ClipOp>(node, inputs, lo, hi);
}

std::vector<OpSample> samples() {
  const std::vector<float> x = {-1.5f, 0.7f, 2.0f, -0.3f, 0.4f, -2.2f};
  std::vector<OpSample> out(3);
  out[0].label = "opset 6 attributes min -1, max 1";
  out[0].node = sample_node("Clip", 1, 1, {{"min", attr_f(-1.0f)}, {"max", attr_f(1.0f)}}, 6);
  out[0].inputs = {Tensor::floats({2, 3}, x)};
  out[0].check_grad = {true};
  out[1].label = "opset 13 min/max inputs 0, 1 (non-differentiable)";
  out[1].node = sample_node("Clip", 3, 1, {}, 13);
  out[1].inputs = {Tensor::floats({2, 3}, x), Tensor::floats({}, {0.0f}), Tensor::floats({}, {1.0f})};
  out[1].check_grad = {true, false, false};
  out[2].label = "opset 11 min only";
  out[2].node = sample_node("Clip", 2, 1, {}, 11);
  out[2].inputs = {Tensor::floats({2, 3}, x), Tensor::floats({}, {-0.5f})};
  out[2].check_grad = {true, false};
  return out;
}

}  // namespace

OpInfo op_info_clip() { return {"Clip", {6, 11, 12, 13}, make, samples}; }

}  // namespace dl::rt
