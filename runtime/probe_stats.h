// The statistics kernels behind the probes (runtime/probes.h): one pass over a float
// tensor, or over one optimizer chunk of a parameter, to the sums a fixed-size
// an::TensorStats record is finished from. Vectorised with GCC/Clang vector types; a
// chunk holding NaN/Inf is reduced again on an exact scalar path that counts them.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "analysis/trace.h"
#include "runtime/op.h"
#include "runtime/tensor.h"

namespace dl::rt {

// Reduces a float tensor in one pass. `desc` supplies the dead zone / saturation
// bands; `unit_flags` is scratch of at least shape[1] entries (per-unit dead count).
an::TensorStats reduce_stats(const Tensor& t, const an::OpDescription* desc, std::vector<uint8_t>* unit_flags);

namespace stats {

// What to count besides the moments: the op's dead zone (values <= dead_at) and
// saturation bands. `nonneg` (the op's outputs are >= 0) lets the vector path take
// |x| = x and, for a dead zone at 0, the dead values = the zeros; a chunk whose minimum
// contradicts it is reduced again without the shortcut.
//
// `light`: the sum, the sum of squares, min and max only (mean, std, L2 norm and the
// extremes; NaN/Inf show in them): for the iterations whose step statistics carry the
// rest, every reduction of a plain step probe and a parameter's (runtime/probes.h).
// sumabs, zeros, dead and sat stay 0. A chunk holding NaN/Inf
// (or whose float sums overflow) is reduced on the exact path, which counts everything.
struct Bands {
  bool dead = false, sat = false, nonneg = false, light = false;
  // Masked logits (attention scores that only softmaxes read): a -inf value is a masked
  // position (probability 0), not an overflow: left out of every statistic and counted
  // in Sums::masked, so the record's count is the other values'. NaN and +inf count as ever.
  bool masked = false;
  float dead_at = 0, sat_lo = 0, sat_hi = 0;
  static Bands of(const an::OpDescription* desc);  // none for null
};

// The change of one parameter, gathered chunk by chunk: sum of squares of the finite
// differences and the count of the others.
struct UpdateSums {
  double sq = 0;
  uint32_t nonfinite = 0;
};

// Whether sums taken on the fast paths are all finite (else a NaN/Inf or an overflowed
// float sum: the chunk goes again on the exact path).
// (Inline: a caller whose sums live beside its vector chains keeps them in registers.)
inline bool sums_finite(const Sums& s) {
  return std::isfinite(s.sum) && std::isfinite(s.sumsq) && std::isfinite(s.sumabs) && std::isfinite(s.mn) &&
         std::isfinite(s.mx);
}

// Adds n values to `total`: every statistic.
void add_values(const float* x, int64_t n, const Bands& b, Sums& total);

// add_values over the fixed parts of a large tensor (elementwise_parts, on 4096-value
// block boundaries, runtime/parallel.h), merged in part order: the same sums for any
// thread count. From kParallelStats values on the compute threads: the pass reduces ~8
// values per cycle, so below that a helper's wake-up and spin cost more CPU than its
// share of the pass (the transformer's ~200 tensors of 2K to 262K values a step: probe
// overhead +8.6% -> +2.9% at 2 threads, bench/README.md run 27). Small tensors: add_values.
constexpr int64_t kParallelStats = int64_t{1} << 20;
void add_values_parallel(const float* x, int64_t n, const Bands& b, Sums& total);

// The update after - before of one chunk (sum of squares).
void add_update(const float* before, const float* after, int64_t n, UpdateSums& update);

// One optimizer chunk of a parameter: the moments and extremes of its gradient and of
// its new values (no sum of |x|, no zeros: Bands::light's), and the update's sum of
// squares, in one pass over the three streams (runtime/param_stats.cpp). The same
// extremes and NaN/Inf counts as add_values (light) and add_update; the sums differ from
// theirs in rounding only.
struct ParamSums {
  Sums grad, weight;
  UpdateSums update;
};
void add_param_chunk(const float* grad, const float* before, const float* after, int64_t n, ParamSums& total);

an::TensorStats finish(const Sums& r, int64_t n);

}  // namespace stats

// The statistics record of tensor t from its sums r taken under bands b: finish() plus,
// for a dead zone, the fraction of dead units (a pass over t, skipped when no value is
// dead or unit_flags is null).
an::TensorStats stats_of(const Tensor& t, const stats::Sums& r, const stats::Bands& b, std::vector<uint8_t>* unit_flags);

// A ValueSink (runtime/op.h): the sums of a tensor as an op reports it, part by part
// (distinct parts may come from different threads), merged in part order: the same
// for any thread count. Each part's sums and count sit on cache lines of their own, so
// threads reporting different parts never share one.
class SinkSums final : public ValueSink {
 public:
  void reset(const stats::Bands& bands);
  void add(int64_t part, const float* x, int64_t n) override;
  bool light() const override { return bands_.light; }
  void add_sums(int64_t part, const stats::Sums& sums, int64_t n) override;
  // Values reported since reset() (read after the op returned); the op reported the
  // whole tensor when it is numel().
  int64_t reported() const;
  stats::Sums total() const;

 private:
  struct alignas(128) Part {
    stats::Sums sums;
    int64_t count = 0;
  };
  stats::Bands bands_;
  Part parts_[kParts];
};

namespace stats {

// Fraction of units (axis 1) in the dead zone for every sample and position. `alive` is
// scratch of `units` bytes.
float dead_unit_fraction(const float* x, int64_t batch, int64_t units, int64_t inner, float dead_at,
                         std::vector<uint8_t>& alive);

}  // namespace stats
}  // namespace dl::rt
