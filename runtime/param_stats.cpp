// The statistics of one optimizer chunk of a parameter (ProbeRecorder::on_chunk, at full
// iterations): every statistic of its gradient and of its new values, and the update's
// sum of squares, in one pass over the three streams while the optimizer has just
// touched them: one load of each stream and one set of block flushes instead of three
// passes (add_values twice, add_update). The pass is bound by its ~17 vector operations
// per 16 values, so it saves only ~15% (BM_ParamChunk in bench/micro_bench.cpp: 352k
// values from L2, 79 -> 66 us; bench/README.md, run 31).
#include <cmath>

#include "runtime/probe_stats.h"
#include "runtime/value_simd.h"

namespace dl::rt::stats {
namespace {

using simd::kLanes;
using simd::loadv;
using simd::VecF;
using simd::VecU;

// One stream's sums without bands: the moments and extremes in C chains (Moments), the
// sum of |x| and the non-zero count (the magnitude bits min 1, as fast_sums) in C chains.
template <int C>
struct FullChains {
  simd::Moments<C> m;
  VecF a[C];
  VecU nz[C];
  const VecU abs_mask = VecU{} + 0x7fffffffu, one = VecU{} + 1u;
  FullChains() { clear(); }
  void add(int c, VecF v) {
    m.add(c, v);
    const VecU av = (VecU)v & abs_mask;
    a[c] += (VecF)av;
    nz[c] += simd::umin(av, one);
  }
  // The block of `count` values into out.
  void flush(Sums& out, int64_t count) {
    m.flush(out);
    VecF as = a[0];
    VecU ns = nz[0];
    for (int c = 1; c < C; ++c) as += a[c], ns += nz[c];
    out.sumabs += simd::lane_sum(as);
    int64_t nonzero = 0;
    for (int j = 0; j < kLanes; ++j) nonzero += ns[j];
    out.zeros += count - nonzero;
    clear();
  }
  void clear() {
    for (int c = 0; c < C; ++c) a[c] = VecF{}, nz[c] = VecU{};
  }
};

void add_tail(Sums& out, float v) {
  add_scalar(out, v);
  out.sumabs += std::fabs(v);
  out.zeros += v == 0.0f;
}

}  // namespace

void add_param_chunk(const float* grad, const float* before, const float* after, int64_t n, ParamSums& total) {
  const Bands none;
  if constexpr (kLanes < 16) {
    // (Two streams' chains need 26 vector registers: AVX2 has 16, so separate passes.)
    add_update(before, after, n, total.update);
    add_values(grad, n, none, total.grad);
    add_values(after, n, none, total.weight);
    return;
  }
  constexpr int C = 2;
  FullChains<C> g, w;
  VecF sq[C] = {};
  Sums gs, ws;
  double usq = 0;
  int64_t k = 0;
  const int64_t vec_end = n - n % kLanes;
  while (k < vec_end) {
    const int64_t block_start = k, block_end = std::min(vec_end, k + kBlock);
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
    g.flush(gs, block_end - block_start);
    w.flush(ws, block_end - block_start);
    VecF s = sq[0];
    for (int c = 1; c < C; ++c) s += sq[c];
    usq += simd::lane_sum(s);
    for (int c = 0; c < C; ++c) sq[c] = VecF{};
  }
  g.m.finish(gs);
  w.m.finish(ws);
  for (; k < n; ++k) {
    add_tail(gs, grad[k]);
    add_tail(ws, after[k]);
    const float d = after[k] - before[k];
    usq += double(d) * d;
  }
  // A NaN/Inf (or a float sum that overflowed): that stream again on the exact path.
  if (sums_finite(gs)) total.grad.merge(gs);
  else add_values(grad, n, none, total.grad);
  if (sums_finite(ws)) total.weight.merge(ws);
  else add_values(after, n, none, total.weight);
  if (std::isfinite(usq)) total.update.sq += usq;
  else add_update(before, after, n, total.update);
}

}  // namespace dl::rt::stats
