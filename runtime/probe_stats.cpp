#include "runtime/probe_stats.h"

#include "runtime/parallel.h"
#include "runtime/value_simd.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstring>

namespace dl::rt {

namespace stats {
namespace {

// Native-width vectors (value_simd.h). The moments and extremes in stats::Moments<4> (4
// vectors per loop iteration; with 2 chains the loop ran at ~8 values per cycle,
// BM_SinkChunk in bench/micro_bench.cpp), the counts in 2 chains, summed within blocks of
// kBlock values and in double across blocks. NaN and Inf are not tested per value: a
// non-finite value makes the sums (or min/max) non-finite, and only then is the chunk
// reduced again on the exact scalar path that counts them. So the common, finite case
// costs a few vector instructions per vector and no branches.
using simd::kLanes;
using simd::lane_sum;  // (VecF, value_simd.h) next to the integer ones
using simd::loadv;
using simd::Moments;
using simd::VecF;
using simd::VecI;
using simd::VecU;
inline int64_t lane_sum(VecI v) {
  int64_t s = 0;
  for (int j = 0; j < kLanes; ++j) s += v[j];
  return s;
}
inline int64_t lane_sum(VecU v) {
  int64_t s = 0;
  for (int j = 0; j < kLanes; ++j) s += v[j];
  return s;
}

// kNonNeg: |x| = x (no abs, the sum is the sum of |x|). The zeros are counted as the
// values whose magnitude bits are 0 (min(bits, 1) summed gives the non-zeros: two
// integer operations, against a compare, a mask expansion and a subtraction). The sums
// and extremes are light_pass's, bit for bit (the same Moments, blocks and tail).
template <bool kDead, bool kSat, bool kNonNeg>
Sums fast_sums(const float* x, int64_t n, const Bands& b) {
  const VecU abs_mask = VecU{} + 0x7fffffffu, one = VecU{} + 1u;
  const VecF dead_v = simd::splat(b.dead_at), lo_v = simd::splat(b.sat_lo), hi_v = simd::splat(b.sat_hi);
  Moments<4> m;
  Sums out;
  int64_t k = 0;
  const int64_t vec_end = n - n % kLanes;
  while (k < vec_end) {
    const int64_t block_start = k, block_end = std::min(vec_end, k + kBlock);
    VecF a[4] = {};
    VecU nz[2] = {};
    VecI d[2] = {}, t[2] = {};
    // One vector into chain c (v: the kLanes values at x + k + kLanes * c).
    const auto add = [&](int c, VecF v) {
      m.add(c, v);
      const VecU av = (VecU)v & abs_mask;
      if (!kNonNeg) a[c] += (VecF)av;
      nz[c & 1] += simd::umin(av, one);
      if (kDead) d[c & 1] -= (v <= dead_v);  // comparisons give -1 per true lane
      if (kSat) t[c & 1] -= ((v <= lo_v) | (v >= hi_v));
    };
    for (; k + 4 * kLanes <= block_end; k += 4 * kLanes)
      for (int c = 0; c < 4; ++c) add(c, loadv(x + k + kLanes * c));
    for (; k < block_end; k += kLanes) add(0, loadv(x + k));  // the last block's remaining vectors
    const double block_sum = m.flush(out);
    out.sumabs += kNonNeg ? block_sum : lane_sum((a[0] + a[1]) + (a[2] + a[3]));
    out.zeros += (block_end - block_start) - lane_sum(nz[0] + nz[1]);
    if (kDead) out.dead += lane_sum(d[0] + d[1]);
    if (kSat) out.sat += lane_sum(t[0] + t[1]);
  }
  m.finish(out);
  for (; k < n; ++k) {
    const float v = x[k];
    add_scalar(out, v);
    out.sumabs += std::fabs(v);
    out.zeros += v == 0.0f;
    if (kDead) out.dead += v <= b.dead_at;
    if (kSat) out.sat += (v <= b.sat_lo) | (v >= b.sat_hi);
  }
  return out;
}

// Bands::light (value_sums.h).
Sums light_sums(const float* x, int64_t n) {
  Sums out;
  simd::light_pass(n, [x](int64_t k) { return loadv(x + k); }, [x](int64_t k) { return x[k]; }, out);
  return out;
}

// Exact path: counts NaN/Inf and reduces the finite values in double.
Sums exact_sums(const float* x, int64_t n, const Bands& b) {
  Sums r;
  for (int64_t k = 0; k < n; ++k) {
    const float v = x[k];
    if (std::isnan(v)) { ++r.nan; continue; }
    if (b.masked && v == -std::numeric_limits<float>::infinity()) { ++r.masked; continue; }
    if (std::isinf(v)) { ++r.inf; continue; }
    r.mn = v < r.mn ? v : r.mn;
    r.mx = v > r.mx ? v : r.mx;
    r.sum += v;
    r.sumsq += double(v) * v;
    r.sumabs += std::fabs(v);
    r.zeros += v == 0.0f;
    if (b.dead) r.dead += v <= b.dead_at;
    if (b.sat) r.sat += (v <= b.sat_lo) | (v >= b.sat_hi);
  }
  return r;
}

// Bands::masked: fast_sums' statistics leaving the -inf out (counted in Sums::masked):
// a masked lane adds 0 to the sums and +inf to the minimum (and -inf never raises the
// maximum), and the bands' counts, which a -inf would be in, take the masked count off.
// NaN and +inf make the sums non-finite, and the exact path (which leaves -inf out too)
// counts them. kLight (Bands::light): the sum, the sum of squares, the extremes and the
// masked count only, as light_sums.
template <bool kLight>
Sums masked_sums(const float* x, int64_t n, const Bands& b) {
  const VecF neg_inf = VecF{} - INFINITY, pos_inf = VecF{} + INFINITY;
  const VecU abs_mask = VecU{} + 0x7fffffffu;
  const VecF dead_v = simd::splat(b.dead_at), lo_v = simd::splat(b.sat_lo), hi_v = simd::splat(b.sat_hi);
  const bool dead_band = !kLight && b.dead, sat_band = !kLight && b.sat;
  VecF mn[2] = {pos_inf, pos_inf}, mx[2] = {neg_inf, neg_inf};
  Sums out;
  int64_t k = 0;
  const int64_t vec_end = n - n % kLanes;
  while (k < vec_end) {
    const int64_t block_end = std::min(vec_end, k + kBlock);
    VecF s[2] = {}, q[2] = {}, a[2] = {};
    VecI masked[2] = {}, zeros[2] = {}, dead[2] = {}, sat[2] = {};
    const auto add = [&](int c, VecF v) {
      const VecI m = v == neg_inf;  // -1 per masked lane
      const VecF v0 = (VecF)((VecU)v & ~(VecU)m);
      s[c] += v0, q[c] += v0 * v0;
      mn[c] = simd::vmin(mn[c], (VecF)((VecU)v0 | ((VecU)pos_inf & (VecU)m)));
      mx[c] = simd::vmax(mx[c], v);
      masked[c] -= m;
      if (kLight) return;
      a[c] += (VecF)((VecU)v0 & abs_mask);
      zeros[c] -= v == 0.0f;
      if (dead_band) dead[c] -= v <= dead_v;
      if (sat_band) sat[c] -= (v <= lo_v) | (v >= hi_v);
    };
    for (; k + 2 * kLanes <= block_end; k += 2 * kLanes) add(0, loadv(x + k)), add(1, loadv(x + k + kLanes));
    for (; k < block_end; k += kLanes) add(0, loadv(x + k));
    out.sum += lane_sum(s[0] + s[1]);
    out.sumsq += lane_sum(q[0] + q[1]);
    const int64_t m = lane_sum(masked[0] + masked[1]);
    out.masked += m;
    if (kLight) continue;
    out.sumabs += lane_sum(a[0] + a[1]);
    out.zeros += lane_sum(zeros[0] + zeros[1]);
    if (dead_band) out.dead += lane_sum(dead[0] + dead[1]) - m;  // (-inf <= dead_at)
    if (sat_band) out.sat += lane_sum(sat[0] + sat[1]) - m;      // (-inf <= sat_lo)
  }
  const VecF lo = simd::vmin(mn[0], mn[1]), hi = simd::vmax(mx[0], mx[1]);
  for (int j = 0; j < kLanes; ++j) out.mn = std::min(out.mn, lo[j]), out.mx = std::max(out.mx, hi[j]);
  if (k < n) {  // (the tail: under kLanes values)
    Sums tail = exact_sums(x + k, n - k, b);
    if (kLight) tail.sumabs = 0, tail.zeros = tail.dead = tail.sat = 0;
    out.merge(tail);
  }
  return out;
}

template <bool kNonNeg>
Sums fast_sums_bands(const float* x, int64_t n, const Bands& b, bool dead) {
  return dead ? (b.sat ? fast_sums<true, true, kNonNeg>(x, n, b) : fast_sums<true, false, kNonNeg>(x, n, b))
              : (b.sat ? fast_sums<false, true, kNonNeg>(x, n, b)
                       : fast_sums<false, false, kNonNeg>(x, n, b));
}

void update_exact(const float* before, const float* after, int64_t n, UpdateSums& u) {
  for (int64_t i = 0; i < n; ++i) {
    const double d = double(after[i]) - double(before[i]);
    if (std::isfinite(d)) u.sq += d * d;
    else ++u.nonfinite;
  }
}

}  // namespace

Bands Bands::of(const an::OpDescription* desc) {
  Bands b;
  if (!desc) return b;
  b.dead = desc->has_dead_zone;
  b.sat = desc->saturates && std::isfinite(desc->out_lo) && std::isfinite(desc->out_hi);
  b.nonneg = desc->out_lo >= 0.0;
  if (b.sat) {
    b.sat_lo = float(desc->out_lo + 1e-3 * (desc->out_hi - desc->out_lo));
    b.sat_hi = float(desc->out_hi - 1e-3 * (desc->out_hi - desc->out_lo));
  }
  if (b.dead) b.dead_at = float(desc->out_lo);
  return b;
}

// The fast path, or the exact one when the chunk is not finite (or a float lane sum
// overflowed). With non-negative outputs and a dead zone at 0 the dead values are the
// zeros; a negative minimum (an op outside its declared range) takes the general path.
void add_values(const float* x, int64_t n, const Bands& b, Sums& total) {
  Sums part;
  if (b.masked) {
    part = b.light ? masked_sums<true>(x, n, b) : masked_sums<false>(x, n, b);
    // (every value masked: no extremes, min and max stay at +inf and -inf; a causal mask's
    // long rows have whole chunks of -inf)
    const bool finite = part.masked == n ? std::isfinite(part.sum) && std::isfinite(part.sumsq) &&
                                               std::isfinite(part.sumabs)
                                         : sums_finite(part);
    if (!finite) part = exact_sums(x, n, b);
    total.merge(part);
    return;
  }
  if (b.light) {
    part = light_sums(x, n);
    if (!sums_finite(part)) part = exact_sums(x, n, b);
    total.merge(part);
    return;
  }
  const bool dead_is_zero = b.nonneg && b.dead && b.dead_at == 0.0f;
  bool general = !b.nonneg;
  if (b.nonneg) {
    part = fast_sums_bands<true>(x, n, b, b.dead && !dead_is_zero);
    if (dead_is_zero) part.dead = part.zeros;
    general = part.mn < 0.0f;
  }
  if (general) part = fast_sums_bands<false>(x, n, b, b.dead);
  if (!sums_finite(part)) part = exact_sums(x, n, b);
  total.merge(part);
}

void add_update(const float* before, const float* after, int64_t n, UpdateSums& update) {
  using simd::kLanes;
  using simd::loadv;
  simd::VecF acc0 = simd::VecF{}, acc1 = simd::VecF{};
  int64_t k = 0;
  for (; k + 2 * kLanes <= n; k += 2 * kLanes) {
    const simd::VecF d0 = loadv(after + k) - loadv(before + k),
                     d1 = loadv(after + k + kLanes) - loadv(before + k + kLanes);
    acc0 += d0 * d0, acc1 += d1 * d1;
  }
  double sq = simd::lane_sum(acc0 + acc1);
  for (; k < n; ++k) {
    const float d = after[k] - before[k];
    sq += double(d) * d;
  }
  if (std::isfinite(sq)) update.sq += sq;
  else update_exact(before, after, n, update);
}

void add_values_parallel(const float* x, int64_t n, const Bands& b, Sums& total) {
  static_assert(kChunk % kBlock == 0, "parts start on block boundaries: the same blocks as one pass");
  const int64_t parts = elementwise_parts(n);
  if (parts == 1) {
    add_values(x, n, b, total);
    return;
  }
  struct Ctx {
    const float* x;
    int64_t n, parts;
    const Bands* b;
    Sums* sums;
  } c{x, n, parts, &b, nullptr};
  Sums sums[kMaxElementwiseParts];
  c.sums = sums;
  parallel_blocks(parts, loop_threads(n, kParallelStats), [](const void* p, int64_t part) {
    const Ctx& c = *static_cast<const Ctx*>(p);
    int64_t lo, hi;
    part_range(c.n, c.parts, part, lo, hi);
    if (hi > lo) add_values(c.x + lo, hi - lo, *c.b, c.sums[part]);
  }, &c);
  for (int64_t p = 0; p < parts; ++p) total.merge(sums[p]);
}

an::TensorStats finish(const Sums& r, int64_t n) {
  an::TensorStats s;
  n -= r.masked;  // (masked logits: the other values are the record's)
  s.count = static_cast<uint32_t>(std::min<int64_t>(n, UINT32_MAX));
  if (n == 0) return s;
  const int64_t finite = n - r.nan - r.inf;
  s.nan = r.nan;
  s.inf = r.inf;
  if (finite > 0) {
    // +0 for a zero extreme whatever its sign: which of -0 and +0 a min keeps depends on
    // the order the values were met in (a copy's reused sums, a transposed read).
    s.min = r.mn == 0 ? 0.0f : r.mn;
    s.max = r.mx == 0 ? 0.0f : r.mx;
    const double mean = r.sum / double(finite);
    s.mean = float(mean);
    s.std = float(std::sqrt(std::max(0.0, r.sumsq / double(finite) - mean * mean)));
    s.mean_abs = float(r.sumabs / double(finite));
  }
  s.l2 = float(std::sqrt(r.sumsq));
  s.zero_frac = float(double(r.zeros) / double(n));
  s.dead_frac = float(double(r.dead) / double(n));
  s.sat_frac = float(double(r.sat) / double(n));
  return s;
}

float dead_unit_fraction(const float* x, int64_t batch, int64_t units, int64_t inner, float dead_at,
                         std::vector<uint8_t>& alive) {
  alive.assign(static_cast<size_t>(units), 0);
  uint8_t* a = alive.data();
  if (inner == 1) {  // dense: branch-free over the units of each sample
    for (int64_t b = 0; b < batch; ++b) {
      const float* row = x + b * units;
      for (int64_t u = 0; u < units; ++u) a[u] |= row[u] > dead_at;
    }
  } else {
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t u = 0; u < units; ++u) {
        if (a[u]) continue;
        const float* p = x + (b * units + u) * inner;
        uint8_t any = 0;
        for (int64_t i = 0; i < inner; ++i) any |= p[i] > dead_at;
        a[u] = any;
      }
  }
  int64_t dead = 0;
  for (int64_t u = 0; u < units; ++u) dead += !a[u];
  return float(double(dead) / double(units));
}

}  // namespace stats

an::TensorStats stats_of(const Tensor& t, const stats::Sums& r, const stats::Bands& b, std::vector<uint8_t>* unit_flags) {
  const int64_t n = t.numel();
  an::TensorStats s = stats::finish(r, n);
  if (b.dead && unit_flags && t.rank() >= 2 && r.dead > 0) {
    const int64_t batch = t.dim(0), units = t.dim(1), inner = n / std::max<int64_t>(batch * units, 1);
    s.dead_units = stats::dead_unit_fraction(t.f(), batch, units, inner, b.dead_at, *unit_flags);
  }
  return s;
}

an::TensorStats reduce_stats(const Tensor& t, const an::OpDescription* desc, std::vector<uint8_t>* unit_flags) {
  const int64_t n = t.numel();
  if (n == 0 || t.dtype() != DType::kFloat32) {
    an::TensorStats s;
    s.count = static_cast<uint32_t>(std::min<int64_t>(n, UINT32_MAX));
    return s;
  }
  stats::Sums r;
  const stats::Bands b = stats::Bands::of(desc);
  stats::add_values_parallel(t.f(), n, b, r);
  return stats_of(t, r, b, unit_flags);
}

// Only the parts an op reported into since the last reset hold anything (an op reports
// one part, or a few of kParts, into a sink reset at each of ~1200 probes per
// iteration: clearing all parts' 1 KB each time was a fixed cost of every probe).
void SinkSums::reset(const stats::Bands& bands) {
  bands_ = bands;
  for (Part& p : parts_)
    if (p.count != 0) p = Part{};
}

void SinkSums::add(int64_t part, const float* x, int64_t n) {
  if (n <= 0) return;  // (reset() clears the parts that counted values)
  Part& p = parts_[part];
  stats::add_values(x, n, bands_, p.sums);
  p.count += n;
}

void SinkSums::add_sums(int64_t part, const stats::Sums& sums, int64_t n) {
  if (n <= 0) return;
  Part& p = parts_[part];
  p.sums.merge(sums);
  p.count += n;
}

int64_t SinkSums::reported() const {
  int64_t n = 0;
  for (const Part& p : parts_) n += p.count;
  return n;
}

stats::Sums SinkSums::total() const {
  stats::Sums r;
  for (const Part& p : parts_) r.merge(p.sums);
  return r;
}

}  // namespace dl::rt
