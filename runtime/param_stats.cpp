// The statistics of one optimizer chunk of a parameter (ProbeRecorder::on_chunk, at full
// iterations): the moments and extremes of its gradient and of its new values, and the
// update's sum of squares, in one pass over the three streams while the optimizer has
// just touched them: one load of each stream and one set of block flushes instead of
// three passes (add_values twice, add_update). No mean |x| or zeros: the analysis reads
// neither of a parameter (an::TensorStats::kNoMagnitudes); counting them had taken 8 of
// the pass's 18 vector operations per 16 values (BM_ParamChunk in bench/micro_bench.cpp,
// bench/README.md runs 31 and 38).
#include <cmath>

#include "runtime/probe_stats.h"
#include "runtime/value_simd.h"

namespace dl::rt::stats {
namespace {

using simd::kLanes;
using simd::loadv;
using simd::VecF;

}  // namespace

void add_param_chunk(const float* grad, const float* before, const float* after, int64_t n, ParamSums& total) {
  Bands moments;
  moments.light = true;
  if constexpr (kLanes < 16) {
    // (Two streams' chains and the update's need more than AVX2's 16 vector registers:
    // separate passes.)
    add_update(before, after, n, total.update);
    add_values(grad, n, moments, total.grad);
    add_values(after, n, moments, total.weight);
    return;
  }
  constexpr int C = 2;
  simd::Moments<C> g, w;
  VecF sq[C] = {};
  Sums gs, ws;
  double usq = 0;
  int64_t k = 0;
  const int64_t vec_end = n - n % kLanes;
  while (k < vec_end) {
    const int64_t block_end = std::min(vec_end, k + kBlock);
    for (; k + C * kLanes <= block_end; k += C * kLanes)
      for (int c = 0; c < C; ++c) {
        const int64_t at = k + kLanes * c;
        const VecF a = loadv(after + at), d = a - loadv(before + at);
        g.add(c, loadv(grad + at));
        w.add(c, a);
        sq[c] += d * d;
      }
    for (; k < block_end; k += kLanes) {
      const VecF a = loadv(after + k), d = a - loadv(before + k);
      g.add(0, loadv(grad + k));
      w.add(0, a);
      sq[0] += d * d;
    }
    g.flush(gs);
    w.flush(ws);
    VecF s = sq[0];
    for (int c = 1; c < C; ++c) s += sq[c];
    usq += simd::lane_sum(s);
    for (int c = 0; c < C; ++c) sq[c] = VecF{};
  }
  g.finish(gs);
  w.finish(ws);
  for (; k < n; ++k) {
    add_scalar(gs, grad[k]);
    add_scalar(ws, after[k]);
    const float d = after[k] - before[k];
    usq += double(d) * d;
  }
  // A NaN/Inf (or a float sum that overflowed): that stream again on the exact path.
  if (sums_finite(gs)) total.grad.merge(gs);
  else add_values(grad, n, moments, total.grad);
  if (sums_finite(ws)) total.weight.merge(ws);
  else add_values(after, n, moments, total.weight);
  if (std::isfinite(usq)) total.update.sq += usq;
  else add_update(before, after, n, total.update);
}

}  // namespace dl::rt::stats
