// The probes' statistics kernels on vectors of the target's native width: the light
// pass (sum, sum of squares, min, max) as a template, which the probes run over a
// tensor in memory (runtime/probe_stats.cpp) and ops whose loops hold the values in
// vector registers anyway run on those registers (ValueSink::add_sums, runtime/op.h),
// in the same blocks and order, so both give the same sums up to the rounding of where
// a chunk's last values join the running sums. The sums go to stats::Sums
// (runtime/value_sums.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "runtime/value_sums.h"

#if defined(__SSE__)
#include <immintrin.h>
#endif

namespace dl::rt::simd {

using stats::add_scalar;
using stats::kBlock;
using stats::Sums;

// The kernels' vectors are the target's native width: 16 floats with AVX-512, 8 with
// AVX/AVX2, 4 otherwise. (A 16-float vector on an AVX2 target is not a register type:
// GCC 12 keeps it in memory and runs min/max lane by lane, 13x slower per value on the
// AMD EPYC machines, bench/README.md run 13.) The lane count only decides how the
// probes' sums are grouped (their rounding), never what an op computes.
#if defined(__AVX512F__)
constexpr int kLanes = 16;
#elif defined(__AVX__)
constexpr int kLanes = 8;
#else
constexpr int kLanes = 4;
#endif
typedef float VecF __attribute__((vector_size(4 * kLanes)));
typedef int32_t VecI __attribute__((vector_size(4 * kLanes)));
typedef uint32_t VecU __attribute__((vector_size(4 * kLanes)));

inline VecF loadv(const float* p) {
  VecF v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void storev(float* p, VecF v) { std::memcpy(p, &v, sizeof v); }
// v in every lane, bit for bit (VecF{} + v would turn -0 into +0: +0 + -0 is +0).
inline VecF splat(float v) { return v - VecF{}; }
#if defined(__clang__)
inline VecF vmin(VecF a, VecF b) {
  const VecI m = a < b;
  return (VecF)(((VecI)a & m) | ((VecI)b & ~m));
}
inline VecF vmax(VecF a, VecF b) {
  const VecI m = a > b;
  return (VecF)(((VecI)a & m) | ((VecI)b & ~m));
}
inline VecU umin(VecU a, VecU b) {
  const VecU m = (VecU)(a < b);
  return (a & m) | (b & ~m);
}
#else
inline VecF vmin(VecF a, VecF b) { return a < b ? a : b; }
inline VecF vmax(VecF a, VecF b) { return a > b ? a : b; }
inline VecU umin(VecU a, VecU b) { return a < b ? a : b; }
#endif
// The correctly rounded square root in every lane (as std::sqrt on each).
inline VecF vsqrt(VecF v) {
#if defined(__AVX512F__)
  // (The masked form: GCC 12's _mm512_sqrt_ps warns of its own undefined source.)
  return (VecF)_mm512_mask_sqrt_ps((__m512)v, __mmask16(0xffff), (__m512)v);
#elif defined(__AVX__)
  return (VecF)_mm256_sqrt_ps((__m256)v);
#elif defined(__SSE__)
  return (VecF)_mm_sqrt_ps((__m128)v);
#else
  for (int j = 0; j < kLanes; ++j) v[j] = std::sqrt(v[j]);
  return v;
#endif
}
// v, as a value the compiler knows nothing about (an empty asm that may have changed
// it, in the register it is in: no instruction). Statistics taken inside another
// computation's loop reduce opaque copies, so the compiler shares no subexpression
// between the two (GCC contracts a * b + c into an FMA unless a * b is used elsewhere:
// the squares of a gradient the statistics sum would change an update's rounding).
template <class T>
inline T opaque(T v) {
#if defined(__x86_64__) || defined(__i386__)
  asm("" : "+v"(v));
  return v;
#elif defined(__aarch64__)
  asm("" : "+w"(v));
  return v;
#else
  volatile T copy = v;  // (through memory elsewhere)
  return copy;
#endif
}
// Whether every lane of v is below `limit` (false where NaN): a vector compare and a
// test of its mask.
inline bool all_below(VecF v, float limit) {
#if defined(__AVX512F__)
  return _mm512_cmp_ps_mask((__m512)v, _mm512_set1_ps(limit), _CMP_LT_OQ) == 0xffff;
#elif defined(__AVX__)
  return _mm256_movemask_ps(_mm256_cmp_ps((__m256)v, _mm256_set1_ps(limit), _CMP_LT_OQ)) == 0xff;
#elif defined(__SSE__)
  return _mm_movemask_ps(_mm_cmplt_ps((__m128)v, _mm_set1_ps(limit))) == 0xf;
#else
  for (int j = 0; j < kLanes; ++j)
    if (!(v[j] < limit)) return false;
  return true;
#endif
}
// |v| in every lane (the sign bit cleared, as std::fabs).
inline VecF vabs(VecF v) { return (VecF)((VecU)v & 0x7fffffffu); }
// 1.0 in every lane, read from a volatile so the compiler cannot fold v * 1 away: the
// kernels add sums as s + v * 1, which runs on the FMA units (v * 1 = v exactly, so the
// sum is the same as s + v) and leaves the adders to min and max.
inline VecF opaque_one() {
  static volatile float one = 1.0f;
  return VecF{} + one;
}
inline double lane_sum(VecF v) {
  double s = 0;
  for (int j = 0; j < kLanes; ++j) s += double(v[j]);
  return s;
}

// Sum, sum of squares, min and max of vectors in C independent chains (so the
// loop is not bound by the FMA and min/max latencies): the sum as s + v * 1 and the
// squares on the FMA units, the extremes on the adders. The sums stay in float within a
// block and go to `out` in double at flush(); the extremes go at finish(). Every kernel
// that reduces moments uses it, so the probes' own passes and the ops' loops sum alike.
template <int C>
struct Moments {
  VecF s[C], q[C], mn[C], mx[C];
  const VecF unit = opaque_one();  // (exact: v * 1 = v)
  Moments() { reset(); }
  void reset() {
    for (int c = 0; c < C; ++c) s[c] = q[c] = VecF{}, mn[c] = VecF{} + INFINITY, mx[c] = VecF{} - INFINITY;
  }
  void add(int c, VecF v) {
    s[c] += v * unit, q[c] += v * v;
    mn[c] = vmin(v, mn[c]), mx[c] = vmax(v, mx[c]);
  }
  // The block's sums (chains added pairwise in a fixed order) into `out`, and a new
  // block; returns the block's sum.
  double flush(Sums& out) {
    const double block_sum = lane_sum(tree(s));
    out.sum += block_sum;
    out.sumsq += lane_sum(tree(q));
    for (int c = 0; c < C; ++c) s[c] = q[c] = VecF{};
    return block_sum;
  }
  void finish(Sums& out) const {
    VecF lo = mn[0], hi = mx[0];
    for (int c = 1; c < C; ++c) lo = vmin(lo, mn[c]), hi = vmax(hi, mx[c]);
    for (int j = 0; j < kLanes; ++j) out.mn = std::min(out.mn, lo[j]), out.mx = std::max(out.mx, hi[j]);
  }

 private:
  static VecF tree(const VecF (&v)[C]) {
    if constexpr (C == 4) return (v[0] + v[1]) + (v[2] + v[3]);
    else if constexpr (C == 2) return v[0] + v[1];
    else return v[0];
  }
};

// The light pass over n values: vec(k) returns the kLanes values at k (k a multiple of
// kLanes), scalar(k) the value at k for the last n % kLanes; 4 chains (4 vectors per
// loop iteration).
// NaN/Inf are not counted: they make the sums non-finite. (The probes' own pass is bound
// by the loads: ~16 values per cycle in L1 with AVX-512. Inside an op's loop, on values already in
// registers, it costs about a tenth of that: BM_ReluChunks in bench/micro_bench.cpp.)
template <class Vec, class Scalar>
inline void light_pass(int64_t n, Vec vec, Scalar scalar, Sums& out) {
  Moments<4> m;
  int64_t k = 0;
  const int64_t vec_end = n - n % kLanes;
  while (k < vec_end) {
    const int64_t block_end = std::min(vec_end, k + kBlock);
    for (; k + 4 * kLanes <= block_end; k += 4 * kLanes)
      for (int c = 0; c < 4; ++c) m.add(c, vec(k + kLanes * c));
    for (; k < block_end; k += kLanes) m.add(0, vec(k));  // the last block's remaining vectors
    m.flush(out);
  }
  m.finish(out);
  for (; k < n; ++k) add_scalar(out, scalar(k));
}

// light_pass's sums of values that come in pieces (the rows of one channel, ...): four
// vectors at once through put4() (over the chains in turn: with constant chain indices
// the compiler keeps the chains in registers), single vectors through put() (chain 0),
// single values (a row's tail) through put_scalar() (kLanes at a time, as a vector);
// flushed every kBlock values or so;
// finish() once after the last piece. The grouping differs from one light_pass over
// the same values, so the sums differ in rounding only; count, min and max are the same.
class LightSums {
  // 4 chains hold 16 vectors of state: with AVX-512's 32 registers that leaves room for
  // the op's own values; AVX2 has 16, so 2 chains there (4 spilled the op's loop to the
  // stack: BatchNormalization's forward loop, bench/README.md run 13).
  static constexpr int kChains = kLanes >= 16 ? 4 : 2;

 public:
  void put4(VecF a, VecF b, VecF c, VecF d) {
    m_.add(0, a), m_.add(1 % kChains, b), m_.add(2 % kChains, c), m_.add(3 % kChains, d);
    counted(4 * kLanes);
  }
  void put(VecF v) {
    m_.add(0, v);
    counted(kLanes);
  }
  // Single values wait in a vector's worth of lanes and go in as one vector (short rows
  // (BatchNormalization over 2x2 maps, a row's tail) cost a few double adds per value
  // on one dependency chain when added one by one: mobilenet_v2's BatchNormalization
  // probes 0.7 ms a step, bench/README.md run 27); finish() adds what is left.
  void put_scalar(float v) {
    stage_[staged_] = v;
    if (++staged_ == kLanes) {
      put(loadv(stage_));
      staged_ = 0;
    }
  }
  // Every value of [p, p + n), in order.
  void put_row(const float* p, int64_t n) {
    int64_t k = 0;
    for (; k + 4 * kLanes <= n; k += 4 * kLanes)
      put4(loadv(p + k), loadv(p + k + kLanes), loadv(p + k + 2 * kLanes), loadv(p + k + 3 * kLanes));
    for (; k + kLanes <= n; k += kLanes) put(loadv(p + k));
    for (; k < n; ++k) put_scalar(p[k]);
  }
  // Every value of [p, p + n) plus b (an op's output computed as p[k] + b), in order.
  void put_row_plus(const float* p, int64_t n, float b) {
    const VecF bv = splat(b);
    int64_t k = 0;
    for (; k + 4 * kLanes <= n; k += 4 * kLanes)
      put4(loadv(p + k) + bv, loadv(p + k + kLanes) + bv, loadv(p + k + 2 * kLanes) + bv,
           loadv(p + k + 3 * kLanes) + bv);
    for (; k + kLanes <= n; k += kLanes) put(loadv(p + k) + bv);
    for (; k < n; ++k) put_scalar(p[k] + b);
  }
  const Sums& finish() {
    for (int j = 0; j < staged_; ++j) add_scalar(out_, stage_[j]);
    staged_ = 0;
    m_.flush(out_);
    m_.finish(out_);
    return out_;
  }

 private:
  void counted(int64_t n) {
    if ((in_block_ += n) >= kBlock) m_.flush(out_), in_block_ = 0;
  }
  Moments<kChains> m_;
  Sums out_;
  int64_t in_block_ = 0;
  float stage_[kLanes] = {};
  int staged_ = 0;
};

// The extremes alone of values that come in pieces, through LightSums' interface (put4,
// put, put_scalar): for an op whose probe sums come from moments it computes anyway
// (BatchNormalization's batch statistics) and need only min and max besides. Two
// chains per extreme; NaN is never taken (as Moments).
class Extremes {
 public:
  Extremes() { lo_[0] = lo_[1] = VecF{} + INFINITY, hi_[0] = hi_[1] = VecF{} - INFINITY; }
  void put4(VecF a, VecF b, VecF c, VecF d) {
    lo_[0] = vmin(a, lo_[0]), hi_[0] = vmax(a, hi_[0]), lo_[1] = vmin(b, lo_[1]), hi_[1] = vmax(b, hi_[1]);
    lo_[0] = vmin(c, lo_[0]), hi_[0] = vmax(c, hi_[0]), lo_[1] = vmin(d, lo_[1]), hi_[1] = vmax(d, hi_[1]);
  }
  void put(VecF v) { lo_[0] = vmin(v, lo_[0]), hi_[0] = vmax(v, hi_[0]); }
  void put_scalar(float v) {
    lo1_ = v < lo1_ ? v : lo1_;
    hi1_ = v > hi1_ ? v : hi1_;
  }
  float lo() const {
    const VecF l = vmin(lo_[0], lo_[1]);
    float r = lo1_;
    for (int j = 0; j < kLanes; ++j) r = std::min(r, l[j]);
    return r;
  }
  float hi() const {
    const VecF h = vmax(hi_[0], hi_[1]);
    float r = hi1_;
    for (int j = 0; j < kLanes; ++j) r = std::max(r, h[j]);
    return r;
  }

 private:
  VecF lo_[2], hi_[2];
  float lo1_ = INFINITY, hi1_ = -INFINITY;
};

// light_pass over two streams at once: vec(k, a, b) sets the kLanes values of each at
// k, scalar(k, a, b) the values at k for the last n % kLanes. 2 chains per stream and
// statistic (so the sums differ in rounding from light_pass's), for an op that holds
// both its input and its output in registers (an activation whose input, the previous
// step's output, a probe wants too).
template <class Vec, class Scalar>
inline void light_pass2(int64_t n, Vec vec, Scalar scalar, Sums& out_a, Sums& out_b) {
  Moments<2> a, b;
  int64_t k = 0;
  const int64_t vec_end = n - n % kLanes;
  while (k < vec_end) {
    const int64_t block_end = std::min(vec_end, k + kBlock);
    VecF va, vb;
    for (; k + 2 * kLanes <= block_end; k += 2 * kLanes)
      for (int c = 0; c < 2; ++c) {
        vec(k + kLanes * c, va, vb);
        a.add(c, va), b.add(c, vb);
      }
    for (; k < block_end; k += kLanes) {
      vec(k, va, vb);
      a.add(0, va), b.add(0, vb);
    }
    a.flush(out_a), b.flush(out_b);
  }
  a.finish(out_a), b.finish(out_b);
  for (; k < n; ++k) {
    float va, vb;
    scalar(k, va, vb);
    add_scalar(out_a, va), add_scalar(out_b, vb);
  }
}

}  // namespace dl::rt::simd
