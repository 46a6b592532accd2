// The statistics of one optimizer chunk of a parameter (stats::ParamSums: the moments
// and extremes of its gradient and of its new values, the update's sum of squares),
// taken vector by vector wherever the three are in registers: add_param_chunk's own
// pass (runtime/param_stats.cpp) or an update rule's loop (opt_detail::each_vector,
// runtime/optimizer_impl.h), in the same chains and blocks, so both give the same sums.
#pragma once

#include <cmath>

#include "runtime/probe_stats.h"
#include "runtime/value_simd.h"

namespace dl::rt::stats {

class ParamChunk {
 public:
  // Independent chains: vector k of a block goes to chain k % kChains, the block's last
  // odd vector to chain 0. (Two streams' chains and the update's fill AVX-512's 32
  // registers at two; AVX2's 16 hold one.)
  static constexpr int kChains = simd::kLanes >= 16 ? 2 : 1;
  // The chunk's sums so far, in double (the chains' float sums go there every block),
  // kept apart from the chains: this goes to out-of-line code at finish(), and the
  // chains must stay where no store of the loop can reach them (in registers).
  struct Totals {
    Sums grad, weight;
    double update_sq = 0;
  };

  void add(int c, simd::VecF grad, simd::VecF before, simd::VecF after) {
    const simd::VecF d = after - before;
    g_.add(c, grad);
    w_.add(c, after);
    sq_[c] += d * d;
  }
  // Every kBlock values: the block's float sums into double.
  void end_block(Totals& t) {
    g_.flush(t.grad);
    w_.flush(t.weight);
    simd::VecF s = sq_[0];
    for (int c = 1; c < kChains; ++c) s += sq_[c];
    t.update_sq += simd::lane_sum(s);
    for (int c = 0; c < kChains; ++c) sq_[c] = simd::VecF{};
  }
  // The chunk's last n % kLanes values, after the last block.
  static void add_scalar(Totals& t, float grad, float before, float after) {
    stats::add_scalar(t.grad, grad);
    stats::add_scalar(t.weight, after);
    const float d = after - before;
    t.update_sq += double(d) * d;
  }
  // Into `total`. A stream whose sums are not finite (a NaN/Inf, or a float sum that
  // overflowed) goes again on its exact path over the chunk's n values.
  void finish(Totals& t, const float* grad, const float* before, const float* after, int64_t n,
              ParamSums& total) const {
    g_.finish(t.grad);
    w_.finish(t.weight);
    Bands moments;
    moments.light = true;
    if (sums_finite(t.grad)) total.grad.merge(t.grad);
    else add_values(grad, n, moments, total.grad);
    if (sums_finite(t.weight)) total.weight.merge(t.weight);
    else add_values(after, n, moments, total.weight);
    if (std::isfinite(t.update_sq)) total.update.sq += t.update_sq;
    else add_update(before, after, n, total.update);
  }

 private:
  simd::Moments<kChains> g_, w_;
  simd::VecF sq_[kChains] = {};
};

}  // namespace dl::rt::stats
