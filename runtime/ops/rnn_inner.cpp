// RnnOp::reduce_inner (runtime/ops/rnn_common.h) and its part reducer: the statistics
// of the gates and candidates a recurrent op keeps for backward, at every recorded
// iteration. Value by value in double they were ~15% of the LSTM classifier's step with
// probes on (bench/README.md, run 14); the moments now run on the probes' native-width
// kernels (runtime/value_simd.h) and the saturation count in a loop the compiler
// vectorises.
#include "runtime/ops/rnn_common.h"
#include "runtime/value_simd.h"

namespace dl::rt::rnn {
namespace {

void add_value(InnerStats::Part& p, float v, bool saturated) {
  ++p.n;
  if (!std::isfinite(v)) {
    ++(std::isnan(v) ? p.nan : p.inf);
    return;
  }
  p.sum += v;
  p.sumsq += double(v) * v;
  p.min = std::min(p.min, v);
  p.max = std::max(p.max, v);
  p.saturated += saturated;
}

bool near_bounds(Act a, float v, float m) {
  return a == Act::kSigmoid ? (v < m || v > 1.0f - m) : std::fabs(v) > 1.0f - m;
}

}  // namespace

PartReducer::PartReducer(Act a, float margin) : act_(a), margin_(margin) {}

void PartReducer::add_row(const float* p, int64_t n) {
  rows_.emplace_back(p, n);
  sums_.put_row(p, n);
  n_ += n;
  int64_t sat = 0;
  const float m = margin_, hi = 1.0f - margin_;
  if (act_ == Act::kSigmoid)
    for (int64_t j = 0; j < n; ++j) sat += (p[j] < m) | (p[j] > hi);
  else
    for (int64_t j = 0; j < n; ++j) sat += std::fabs(p[j]) > hi;
  sat_ += sat;
}

void PartReducer::finish(InnerStats::Part& into) {
  const stats::Sums& s = sums_.finish();
  if (std::isfinite(s.sum) && std::isfinite(s.sumsq)) {
    into.n += n_;
    into.saturated += sat_;
    into.sum += s.sum;
    into.sumsq += s.sumsq;
    into.min = std::min(into.min, s.mn);
    into.max = std::max(into.max, s.mx);
    return;
  }
  // A NaN or Inf among the values (or squares past float's range): value by value, which
  // counts them apart and sums the finite ones in double.
  for (const auto& [p, n] : rows_)
    for (int64_t j = 0; j < n; ++j) add_value(into, p[j], near_bounds(act_, p[j], margin_));
}

// One pass over the gates the cells kept for backward (rows past their length skipped:
// their gates are not written), and over the states after the first and last step.
void RnnOp::reduce_inner(const Dir& dir, InnerStats& st) const {
  const int64_t h = hidden_, n = gh(), cand = (gates_ - 1) * h;
  const Gate& ga = dir.acts[0];
  const Gate& ca = dir.acts[gates_ > 1 ? 1 : 0];
  const bool gate_sat = gates_ > 1 && saturates(ga.act), cand_sat = saturates(ca.act);
  const float m = float(st.margin);
  PartReducer gates(ga.act, m), cands(ca.act, m);
  for (int64_t s = 0; s < seq_; ++s) {
    const float* g = step_gates(dir, s);
    for (int64_t b = 0; b < batch_; ++b) {
      if (time_of(dir, s, b) < 0) continue;
      const float* gb = g + b * n;
      if (gate_sat) gates.add_row(gb, cand);
      if (cand_sat) cands.add_row(gb + cand, n - cand);
    }
  }
  gates.finish(st.gates);
  cands.finish(st.candidates);
  for (int64_t b = 0; b < batch_; ++b) {
    if (lens_[size_t(b)] <= 0) continue;
    for (int64_t j = 0; j < h; ++j) {
      add_value(st.first, std::fabs(dir.hs[(batch_ + b) * h + j]), false);
      add_value(st.last, std::fabs(dir.hs[(seq_ * batch_ + b) * h + j]), false);
    }
  }
}

}  // namespace dl::rt::rnn
