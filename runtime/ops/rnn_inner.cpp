// RnnOp's inner statistics (inner_pass, reduce_inner_step, finish_inner in
// runtime/ops/rnn_common.h) and their part reducer: the statistics
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

// The moments and the saturation count in one loop over the rows. Near a bound is
// v < lo or v > hi: Sigmoid's (m, 1 - m), Tanh's |v| > 1 - m as (-(1 - m), 1 - m) (NaN
// neither, as before). The sums and the counts stay in registers across every row of
// the call (a local copy of the sums: the member's vectors, which the rows' floats could
// alias, were stored back at every 4 vectors, 16 stores per 64 values); the rows
// of a recurrent step are 3H or H values, and a call per row cost about as much in
// loading, storing and adding up that state as the row itself (run 49).
void PartReducer::add_rows(const float* p, int64_t rows, int64_t stride, int64_t n) {
  using simd::kLanes;
  using simd::loadv;
  if (rows <= 0 || n <= 0) return;
  rows_.push_back({p, rows, stride, n});
  n_ += rows * n;
  const float hi = 1.0f - margin_, lo = act_ == Act::kSigmoid ? margin_ : -hi;
  const simd::VecF lo_v = simd::splat(lo), hi_v = simd::splat(hi);
  const auto near = [&](simd::VecF v) { return (v < lo_v) | (v > hi_v); };  // -1 per lane near
  simd::LightSums sums = *sums_;
  simd::VecI sat_v = simd::VecI{};
  int64_t sat = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = p + r * stride;
    int64_t k = 0;
    for (; k + 4 * kLanes <= n; k += 4 * kLanes) {
      const simd::VecF a = loadv(row + k), b = loadv(row + k + kLanes), c = loadv(row + k + 2 * kLanes),
                       d = loadv(row + k + 3 * kLanes);
      sums.put4(a, b, c, d);
      sat_v -= (near(a) + near(b)) + (near(c) + near(d));
    }
    for (; k + kLanes <= n; k += kLanes) {
      const simd::VecF a = loadv(row + k);
      sums.put(a);
      sat_v -= near(a);
    }
    for (; k < n; ++k) {
      sums.put_scalar(row[k]);
      sat += (row[k] < lo) | (row[k] > hi);
    }
  }
  for (int j = 0; j < kLanes; ++j) sat += sat_v[j];  // (a lane counts at most rows * n / kLanes)
  sums_.emplace(sums);  // (a copy, not an assignment: Moments' unit is const)
  sat_ += sat;
}

void PartReducer::finish(InnerStats::Part& into) {
  const stats::Sums& s = sums_->finish();
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
  for (const Rows& g : rows_)
    for (int64_t r = 0; r < g.rows; ++r)
      for (int64_t j = 0; j < g.n; ++j) {
        const float v = g.p[r * g.stride + j];
        add_value(into, v, near_bounds(act_, v, margin_));
      }
}

// The gates the cells keep for backward, step by step as each step's are final (rows
// past their length skipped: their gates are not written), then the states after the
// first and last step. The same values in the same order as one pass after the forward
// pass, so the same sums; a step's gates are still in cache.
RnnOp::InnerPass RnnOp::inner_pass(const Dir& dir, float margin) const {
  const Gate& ga = dir.acts[0];
  const Gate& ca = dir.acts[gates_ > 1 ? 1 : 0];
  return {PartReducer(ga.act, margin), PartReducer(ca.act, margin), gates_ > 1 && saturates(ga.act),
          saturates(ca.act)};
}

void RnnOp::reduce_inner_step(const Dir& dir, int64_t s, InnerPass& pass) const {
  const int64_t n = gh(), cand = (gates_ - 1) * hidden_;
  const float* g = step_gates(dir, s);
  for (int64_t b = 0; b < batch_;) {  // each run of rows within their length at once
    if (time_of(dir, s, b) < 0) {
      ++b;
      continue;
    }
    int64_t e = b + 1;
    while (e < batch_ && time_of(dir, s, e) >= 0) ++e;
    const float* gb = g + b * n;
    if (pass.gate_sat) pass.gates.add_rows(gb, e - b, n, cand);
    if (pass.cand_sat) pass.cands.add_rows(gb + cand, e - b, n, n - cand);
    b = e;
  }
}

void RnnOp::finish_inner(const Dir& dir, InnerPass& pass, InnerStats& st) const {
  const int64_t h = hidden_;
  pass.gates.finish(st.gates);
  pass.cands.finish(st.candidates);
  for (int64_t b = 0; b < batch_; ++b) {
    if (lens_[size_t(b)] <= 0) continue;
    for (int64_t j = 0; j < h; ++j) {
      add_value(st.first, std::fabs(dir.hs[(batch_ + b) * h + j]), false);
      add_value(st.last, std::fabs(dir.hs[(seq_ * batch_ + b) * h + j]), false);
    }
  }
}

}  // namespace dl::rt::rnn
