// The statistics of one optimizer chunk of a parameter (ProbeRecorder::on_chunk, at full
// iterations, when the update rule did not take them in its own loop: clipped gradients,
// embedding tables): the moments and extremes of its gradient and of its new values, and
// the update's sum of squares, in one pass over the three streams while the optimizer
// has just touched them (stats::ParamChunk, as the rules' loops): one load of each
// stream and one set of block flushes instead of three passes (add_values twice, add_update). No mean |x| or zeros: the analysis reads
// neither of a parameter (an::TensorStats::kNoMagnitudes); counting them had taken 8 of
// the pass's 18 vector operations per 16 values (BM_ParamChunk in bench/micro_bench.cpp,
// bench/README.md runs 31 and 38).
#include <algorithm>

#include "runtime/param_chunk.h"
#include "runtime/probe_stats.h"
#include "runtime/value_simd.h"

namespace dl::rt::stats {

void add_param_chunk(const float* grad, const float* before, const float* after, int64_t n, ParamSums& total) {
  using simd::kLanes;
  using simd::loadv;
  if constexpr (kLanes < 16) {
    // (Two streams' chains and the update's need more than AVX2's 16 vector registers
    // beside the loads: separate passes. An update rule's loop takes ParamChunk's one
    // chain, opt_detail::each_vector.)
    Bands moments;
    moments.light = true;
    add_update(before, after, n, total.update);
    add_values(grad, n, moments, total.grad);
    add_values(after, n, moments, total.weight);
    return;
  }
  using Chunk = ParamChunk;
  constexpr int C = Chunk::kChains;
  Chunk chunk;
  Chunk::Totals totals;
  int64_t k = 0;
  const int64_t vec_end = n - n % kLanes;
  while (k < vec_end) {
    const int64_t block_end = std::min(vec_end, k + kBlock);
    for (; k + C * kLanes <= block_end; k += C * kLanes)
      for (int c = 0; c < C; ++c) {
        const int64_t at = k + kLanes * c;
        chunk.add(c, loadv(grad + at), loadv(before + at), loadv(after + at));
      }
    for (; k < block_end; k += kLanes) chunk.add(0, loadv(grad + k), loadv(before + k), loadv(after + k));
    chunk.end_block(totals);
  }
  for (; k < n; ++k) Chunk::add_scalar(totals, grad[k], before[k], after[k]);
  chunk.finish(totals, grad, before, after, n, total);
}

}  // namespace dl::rt::stats
