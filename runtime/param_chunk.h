// The statistics of a parameter's optimizer chunks (stats::ParamSums: the moments and
// extremes of the gradient and of the new values, the update's sum of squares and its
// NaN/Inf), taken vector by vector wherever the three are in registers: add_param_chunk's
// own pass (runtime/param_stats.cpp) or an update rule's loop over a whole part of the
// parameter (opt_detail::each_vector, runtime/optimizer_impl.h), block by block of
// kValues values from the part's start, so both give the same sums.
//
// The update's squares are summed in a float chain, as the other sums; a vector whose
// change holds a NaN/Inf (or whose square overflows) goes on the exact path at once,
// from the old and new values still in registers: no old values are kept for a second
// look, so a rule's loop needs no copy of them (storing that copy had cost as much as
// the statistics, bench/README.md run 39).
#pragma once

#include <cmath>

#include "runtime/probe_stats.h"
#include "runtime/value_simd.h"

namespace dl::rt::stats {

class ParamChunk {
 public:
  // The block (at most one optimizer chunk, Optimizer::kChunk) whose float sums go to
  // double together, and which a NaN/Inf sends again on the exact path.
  static constexpr int64_t kValues = 2048;
  // One chain of accumulators per statistic: inside an update rule's loop, beside the
  // rule's own values and constants, two chains of the three streams spill AVX-512's 32
  // registers (and the rules' loops are bound by their square roots and divisions, or by
  // memory, not by the chains' latency).

  // A block's sums in double, kept apart from the chain: these go to out-of-line code,
  // and the chain must stay where no store of the loop can reach them (in registers).
  struct Block {
    Sums grad, weight;
    double chain_sq = 0;     // the squares of the changes, from the chain
    double exact_sq = 0;     // and one value at a time (the remainder, the exact path)
    uint32_t nonfinite = 0;  // the changes that are NaN/Inf
  };

  [[gnu::always_inline]] void add(simd::VecF grad, simd::VecF before, simd::VecF after, Block& b) {
    g_.add(0, grad);
    w_.add(0, after);
    const simd::VecF d = after - before, dd = d * d;
    if (__builtin_expect(simd::all_below(dd, INFINITY), 1)) sq_ += dd;  // (squares: >= 0 or NaN)
    else exact(before, after, b);
  }
  // A single value (the part's last n % kLanes).
  static void add_scalar(float grad, float before, float after, Block& b) {
    stats::add_scalar(b.grad, grad);
    stats::add_scalar(b.weight, after);
    const float d = after - before;
    if (std::isfinite(d * d)) b.exact_sq += double(d * d);
    else exact(double(before), double(after), b);
  }
  // The block's chain into `b`, and a new chain. (Small and always inlined: the chain's
  // address must not leave the loop, or it lives in memory.)
  [[gnu::always_inline]] void flush(Block& b) {
    g_.flush(b.grad);
    w_.flush(b.weight);
    g_.finish(b.grad);
    w_.finish(b.weight);
    b.chain_sq += simd::lane_sum(sq_);
    g_.reset();
    w_.reset();
    sq_ = simd::VecF{};
  }
  // A flushed block's sums into `total`; its n gradients and new values again on the
  // exact path where their sums are not finite (a NaN/Inf, or a float sum that
  // overflowed). Then a new block.
  static void end_block(Block& b, const float* grad, const float* after, int64_t n, ParamSums& total) {
    Bands moments;
    moments.light = true;
    if (sums_finite(b.grad)) total.grad.merge(b.grad);
    else add_values(grad, n, moments, total.grad);
    if (sums_finite(b.weight)) total.weight.merge(b.weight);
    else add_values(after, n, moments, total.weight);
    total.update.sq += b.chain_sq + b.exact_sq;
    total.update.nonfinite += b.nonfinite;
    b = Block{};
  }

 private:
  // The change in double (exact for floats): its square where finite, else counted.
  static void exact(double before, double after, Block& b) {
    const double d = after - before;
    if (std::isfinite(d)) b.exact_sq += d * d;
    else ++b.nonfinite;
  }
  // (Inline: a call in the loop, even on its cold path, would make the compiler keep the
  // chain in memory, every vector register being the callee's to clobber.)
  static void exact(simd::VecF before, simd::VecF after, Block& b) {
    for (int j = 0; j < simd::kLanes; ++j) exact(double(before[j]), double(after[j]), b);
  }

  simd::Moments<1> g_, w_;
  simd::VecF sq_ = {};
};

}  // namespace dl::rt::stats
