// Shared kernel of Softmax and LogSoftmax. The input is viewed as [outer, n, inner]
// and normalised over n:
//   since-version 1 and 11: the input is coerced to 2-D at `axis` (default 1), so n is
//     the product of dims[axis:] and inner = 1;
//   since-version 13: a single axis (default -1): n = dims[axis], inner = dims after it.
// Rows are contiguous when inner == 1 (the usual classifier case, and attention's scores)
// and take a fast path: exp on packets, sums in a fixed lane order (softmax_rows.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "converter/errors.h"
#include "runtime/attrs.h"
#include "runtime/op.h"
#include "runtime/ops/softmax_rows.h"
#include "runtime/sink_chunks.h"
#include "runtime/value_simd.h"

namespace dl::rt {

template <bool kLog>
class SoftmaxOp : public Op {
 public:
  explicit SoftmaxOp(const ir::Node& node) : Op(node) {
    coerce_2d_ = node.since_version > 0 && node.since_version < 13;
    Attrs attrs(node);
    axis_ = attrs.i("axis", coerce_2d_ ? 1 : -1);
    attrs.finish();
  }

  void infer(InferCtx& ctx) override {
    if (ctx.in.size() != 1 || !ctx.in[0]) throw ShapeError(where() + ": expects exactly one input");
    const Tensor& x = *ctx.in[0];
    if (x.dtype() != DType::kFloat32) throw ShapeError(where() + ": input must be float32");
    const int64_t r = x.rank();
    const int64_t hi = coerce_2d_ ? r : r - 1;  // coercion at axis r is a valid (trivial) split
    const int64_t axis = axis_ < 0 ? axis_ + r : axis_;
    if (axis < 0 || axis > hi)
      throw ShapeError(where() + ": axis " + std::to_string(axis_) + " is out of range for input of shape " +
                       shape_str(x.shape()));
    outer_ = n_ = inner_ = 1;
    for (int64_t d = 0; d < r; ++d) {
      if (d < axis) outer_ *= x.dim(d);
      else if (d == axis || coerce_2d_) n_ *= x.dim(d);
      else inner_ *= x.dim(d);
    }
    scratch_a_.assign(static_cast<size_t>(inner_), 0.0f);
    scratch_b_.assign(static_cast<size_t>(inner_), 0.0f);
    scratch_c_.assign(kLog ? 0 : static_cast<size_t>(inner_), 0.0f);
    scratch_row_.assign(kLog ? static_cast<size_t>(std::max(n_, inner_)) : static_cast<size_t>(inner_), 0.0f);
    entropy_.assign(kLog || n_ < 2 ? 0 : static_cast<size_t>(outer_ * inner_), 0.0f);
    entropy_dot_.assign(inner_ == 1 ? entropy_.size() : 0, 0.0f);
    entropy_masked_.assign(entropy_.size(), 0.0f);
    inv_log_n_ = n_ < 2 ? 0.0f : 1.0f / std::log(float(n_));
    ctx.charge(int64_t((entropy_.size() + entropy_dot_.size() + entropy_masked_.size()) * sizeof(float)),
               where() + ": row entropies");
    ctx.out[0]->plan(DType::kFloat32, x.shape());
  }

  void forward(FwdCtx& ctx) override {
    const float* x = ctx.in[0]->f();
    float* y = ctx.out[0]->f();
    if (n_ == 0) return;
    // The row entropies (Op::feature) only when a probe asks: one multiply-add per value
    // in the exp pass, then the rows' logs on packets.
    float* ent = ctx.feature_stats && feature().kind != an::OpFeature::kNone ? entropy_.data() : nullptr;
    if (inner_ == 1) {
      // Contiguous rows report y (FwdCtx::out_stats) and x (FwdCtx::in_stats) chunk by
      // chunk as they go (runtime/sink_chunks.h).
      const int64_t total = outer_ * n_;
      ChunkReporter out(ctx.out_stats, y, total), in(ctx.in_stats, x, total);
      float* dot = entropy_dot_.data();
      for (int64_t o = 0; o < outer_; ++o) {
        if (ent) ent[o] = row_forward<true>(x + o * n_, y + o * n_, &dot[o], &entropy_masked_[size_t(o)]);  // (S)
        else row_forward<false>(x + o * n_, y + o * n_, nullptr, nullptr);
        out.upto((o + 1) * n_);
        in.upto((o + 1) * n_);
      }
      out.finish();
      in.finish();
      if (ent) normalized_entropies(ent, dot, outer_, inv_log_n_, ent);
    } else {
      strided_forward(x, y, ent);
    }
    if (ent) ctx.feature_stats->add(0, ent, masked_rows(ent));
  }

  bool reports_input() const override { return inner_ == 1; }

  // A Softmax over rows of 2 values or more reports each row's entropy over log(n).
  OpFeatureInfo feature() const override {
    OpFeatureInfo f;
    if (kLog || n_ < 2) return f;
    f.kind = an::OpFeature::kRowEntropy;
    f.rows = outer_ * inner_;
    f.row_length = n_;
    return f;
  }

  // Softmax: dx = y * (dy - sum(dy * y)); LogSoftmax: dx = dy - exp(y) * sum(dy).
  void backward(BwdCtx& ctx) override {
    if (!ctx.din[0] || !ctx.dout[0] || n_ == 0) return;
    const float* y = ctx.out[0]->f();
    const float* dy = ctx.dout[0]->f();
    float* dx = ctx.din[0]->f();
    const bool assign = ctx.assigns(0);  // (first writer: 0 + the term, dX not read)
    if (inner_ == 1) {
      // Reports dy (BwdCtx::dout_stats) chunk by chunk, and dx (BwdCtx::din_stats, light)
      // row by row from L1 right after the row is written: the gradient of the input
      // (attention's scores), which this step alone reads when a probe asks.
      ChunkReporter g(ctx.dout_stats, dy, outer_ * n_);
      std::optional<simd::LightSums> dx_sums;
      if (ctx.din_stats) dx_sums.emplace();
      for (int64_t o = 0; o < outer_; ++o) {
        if (assign) row_backward<true>(y + o * n_, dy + o * n_, dx + o * n_);
        else row_backward<false>(y + o * n_, dy + o * n_, dx + o * n_);
        if (dx_sums) dx_sums->put_row(dx + o * n_, n_);
        g.upto((o + 1) * n_);
      }
      g.finish();
      if (dx_sums) ctx.din_stats->add_sums(0, dx_sums->finish(), outer_ * n_);
      return;
    }
    float* s = scratch_a_.data();
    float* e = scratch_row_.data();  // LogSoftmax: exp(y) of one position's inner values
    for (int64_t o = 0; o < outer_; ++o) {
      const int64_t base = o * n_ * inner_;
      std::fill(s, s + inner_, 0.0f);
      for (int64_t j = 0; j < n_; ++j)
        for (int64_t i = 0; i < inner_; ++i) {
          const int64_t k = base + j * inner_ + i;
          s[i] += kLog ? dy[k] : dy[k] * y[k];
        }
      for (int64_t j = 0; j < n_; ++j) {
        const int64_t k0 = base + j * inner_;
        if (kLog) exp_shifted(y + k0, 0.0f, e, inner_);
        for (int64_t i = 0; i < inner_; ++i) {
          const int64_t k = k0 + i;
          const float before = dx[k];  // (read either way: a select, not a branch, vectorises)
          dx[k] = (assign ? 0.0f : before) + (kLog ? dy[k] - e[i] * s[i] : y[k] * (dy[k] - s[i]));
        }
      }
    }
  }

  bool assigns_gradient(size_t i) const override { return i == 0; }
  bool reports_input_gradient() const override { return inner_ == 1; }

  OpTraits traits() const override {
    OpTraits t;
    t.role = OpTraits::Role::kActivation;
    t.out_hi = kLog ? 0.0 : 1.0;
    if (!kLog) {
      t.out_lo = 0.0;
      t.saturates = true;
      t.sat_margin = 1e-3;
      t.normalizes = true;
      t.normalized_axis = axis_;
    }
    return t;
  }

 private:
  // With p = e / S, e = exp(x - max): H = log S - sum(e (x - max)) / S, over log(n):
  // normalized_entropies (softmax_rows.h) from each row's S and sum(e (x - max)).
  // Returns the row's S when kEntropy (and sets *dot and *masked, its -inf count), else 0.
  template <bool kEntropy>
  float row_forward(const float* x, float* y, float* dot, float* masked) const {
    const float mx = row_max(x, n_);
    // e = exp(x - max), also for LogSoftmax (y is overwritten)
    if (kEntropy) *dot = exp_shifted_dev(x, mx, y, n_, masked);
    else exp_shifted(x, mx, y, n_);
    const float sum = row_sum(y, n_);
    if (kLog) {
      // (x - max) - log(sum), not x - (max + log(sum)): for large x the sum max + log(sum)
      // would round away log(sum)'s low bits.
      const float log_sum = std::log(sum);
      for (int64_t j = 0; j < n_; ++j) y[j] = (x[j] - mx) - log_sum;
    } else {
      const float inv = 1.0f / sum;
      for (int64_t j = 0; j < n_; ++j) y[j] *= inv;
    }
    return kEntropy ? sum : 0.0f;
  }

  // One contiguous row: Softmax dx += y * (dy - sum(dy * y)), LogSoftmax
  // dx += dy - exp(y) * sum(dy).
  // kAssign: dX's first writer (BwdCtx::assigns): 0 + the term, dX not read.
  template <bool kAssign>
  void row_backward(const float* y, const float* dy, float* dx) {
    if (kLog) {
      float* e = scratch_row_.data();
      exp_shifted(y, 0.0f, e, n_);
      const float s = row_sum(dy, n_);
      for (int64_t j = 0; j < n_; ++j) dx[j] = (kAssign ? 0.0f : dx[j]) + (dy[j] - e[j] * s);
    } else {
      const float s = row_dot(dy, y, n_);
      for (int64_t j = 0; j < n_; ++j) dx[j] = (kAssign ? 0.0f : dx[j]) + y[j] * (dy[j] - s);
    }
  }

  // Rows strided by inner_ (axis not last); ent: per row (o * inner_ + i), or null.
  void strided_forward(const float* x, float* y, float* ent) {
    float* mx = scratch_a_.data();
    float* sum = scratch_b_.data();
    float* dot = scratch_c_.data();
    for (int64_t o = 0; o < outer_; ++o) {
      const float* xo = x + o * n_ * inner_;
      float* yo = y + o * n_ * inner_;
      std::copy(xo, xo + inner_, mx);
      for (int64_t j = 1; j < n_; ++j)
        for (int64_t i = 0; i < inner_; ++i) mx[i] = std::max(mx[i], xo[j * inner_ + i]);
      std::fill(sum, sum + inner_, 0.0f);
      float* masked = ent ? entropy_masked_.data() + o * inner_ : nullptr;
      if (ent) {
        std::fill(dot, dot + inner_, 0.0f);
        std::fill(masked, masked + inner_, 0.0f);
      }
      float* e = scratch_row_.data();
      for (int64_t j = 0; j < n_; ++j) {
        for (int64_t i = 0; i < inner_; ++i) e[i] = xo[j * inner_ + i] - mx[i];
        exp_shifted(e, 0.0f, e, inner_);
        for (int64_t i = 0; i < inner_; ++i) {
          sum[i] += e[i];
          // (exp 0 below -88: the term is 0, also at x = -inf, a masked position)
          if (ent) {
            dot[i] += e[i] * std::max(xo[j * inner_ + i] - mx[i], -100.0f);
            masked[i] += xo[j * inner_ + i] == -std::numeric_limits<float>::infinity() ? 1.0f : 0.0f;
          }
          if (!kLog) yo[j * inner_ + i] = e[i];
        }
      }
      if (ent) normalized_entropies(sum, dot, inner_, inv_log_n_, ent + o * inner_);
      for (int64_t i = 0; i < inner_; ++i) sum[i] = kLog ? std::log(sum[i]) : 1.0f / sum[i];
      for (int64_t j = 0; j < n_; ++j)
        for (int64_t i = 0; i < inner_; ++i) {
          float& v = yo[j * inner_ + i];
          v = kLog ? (xo[j * inner_ + i] - mx[i]) - sum[i] : v * sum[i];
        }
    }
  }

  // The rows' entropies to report (ent): all of them, or under a mask those renormalised
  // over their allowed positions, forced rows left out (mask_adjusted_entropies).
  int64_t masked_rows(float* ent) const {
    const int64_t rows = outer_ * inner_;
    const float* m = entropy_masked_.data();
    if (std::all_of(m, m + rows, [](float c) { return c == 0.0f; })) return rows;
    return mask_adjusted_entropies(ent, m, rows, n_);
  }

  bool coerce_2d_ = false;
  int64_t axis_ = -1;
  int64_t outer_ = 1, n_ = 1, inner_ = 1;
  std::vector<float> scratch_a_, scratch_b_, scratch_c_;  // per-inner-position max / sum / sum(e (x - max))
  std::vector<float> scratch_row_;  // exp values of a row (LogSoftmax backward) or of an inner run
  std::vector<float> entropy_;  // per row: its normalised entropy (Op::feature)
  std::vector<float> entropy_dot_;  // contiguous rows: each row's sum(e (x - max))
  std::vector<float> entropy_masked_;  // per row: its -inf (masked positions) count
  float inv_log_n_ = 0;  // 1 / log(n)
};

}  // namespace dl::rt
