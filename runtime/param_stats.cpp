// The statistics of one optimizer chunk of a parameter (ProbeRecorder::on_chunk, at full
// iterations, where the update rule did not take them in its own loop: clipped
// gradients, embedding tables): one pass over the three streams while the optimizer has
// just touched them, in stats::ParamChunk's blocks, as the rules' loops. No
// mean |x| or zeros: the analysis reads neither of a parameter
// (an::TensorStats::kNoMagnitudes); counting them had taken 8 of the pass's 18 vector
// operations per 16 values (BM_ParamChunk in bench/micro_bench.cpp, bench/README.md
// runs 31 and 38).
#include <algorithm>

#include "runtime/param_chunk.h"
#include "runtime/probe_stats.h"
#include "runtime/value_simd.h"

namespace dl::rt::stats {

void add_param_chunk(const float* grad, const float* before, const float* after, int64_t n, ParamSums& total) {
  using simd::kLanes;
  using simd::loadv;
  ParamChunk chunk;
  ParamChunk::Block block;
  const int64_t vec_end = n - n % kLanes;
  for (int64_t k = 0; k < n;) {
    const int64_t start = k, end = std::min(n, k + ParamChunk::kValues), vend = std::min(vec_end, end);
    for (; k < vend; k += kLanes) chunk.add(loadv(grad + k), loadv(before + k), loadv(after + k), block);
    for (; k < end; ++k) ParamChunk::add_scalar(grad[k], before[k], after[k], block);
    chunk.flush(block);
    ParamChunk::end_block(block, grad + start, after + start, k - start, total);
  }
}

}  // namespace dl::rt::stats
