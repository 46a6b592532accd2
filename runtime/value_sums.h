// The sums a probe's statistics record is finished from (runtime/probe_stats.h), the
// 16-float vector helpers its kernels use, and the light pass (sum, sum of squares,
// min, max) as a template: the probes run it over a tensor in memory, and ops whose
// loops hold the values in vector registers anyway run it on those registers
// (ValueSink::add_sums, runtime/op.h) in the same blocks and order, so both give the
// same sums up to the rounding of where a chunk's last values join the running sums.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace dl::rt::stats {

// Running sums over chunks of one tensor (merged in a fixed order: deterministic).
struct Sums {
  double sum = 0, sumsq = 0, sumabs = 0;
  float mn = std::numeric_limits<float>::infinity(), mx = -std::numeric_limits<float>::infinity();
  int64_t zeros = 0, dead = 0, sat = 0;
  uint32_t nan = 0, inf = 0;
  void merge(const Sums& o) {
    sum += o.sum, sumsq += o.sumsq, sumabs += o.sumabs;
    mn = std::min(mn, o.mn), mx = std::max(mx, o.mx);
    zeros += o.zeros, dead += o.dead, sat += o.sat;
    nan += o.nan, inf += o.inf;
  }
};

typedef float F16 __attribute__((vector_size(64)));
typedef int32_t I16 __attribute__((vector_size(64)));
typedef uint32_t U16 __attribute__((vector_size(64)));
// Values summed in float within blocks of this many, in double across blocks.
constexpr int64_t kBlock = 4096;

inline F16 load16(const float* p) {
  F16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store16(float* p, F16 v) { std::memcpy(p, &v, sizeof v); }
#if defined(__clang__)
inline F16 vmin(F16 a, F16 b) {
  const I16 m = a < b;
  return (F16)(((I16)a & m) | ((I16)b & ~m));
}
inline F16 vmax(F16 a, F16 b) {
  const I16 m = a > b;
  return (F16)(((I16)a & m) | ((I16)b & ~m));
}
inline U16 umin(U16 a, U16 b) {
  const U16 m = (U16)(a < b);
  return (a & m) | (b & ~m);
}
#else
inline F16 vmin(F16 a, F16 b) { return a < b ? a : b; }
inline F16 vmax(F16 a, F16 b) { return a > b ? a : b; }
inline U16 umin(U16 a, U16 b) { return a < b ? a : b; }
#endif
// 1.0 in every lane, read from a volatile so the compiler cannot fold v * 1 away: the
// kernels add sums as s + v * 1, which runs on the FMA units (v * 1 = v exactly, so the
// sum is the same as s + v) and leaves the adders to min and max.
inline F16 opaque_one() {
  static volatile float one = 1.0f;
  return F16{} + one;
}
inline double lane_sum(F16 v) {
  double s = 0;
  for (int j = 0; j < 16; ++j) s += double(v[j]);
  return s;
}

// Sum, sum of squares, min and max of 16-float vectors in C independent chains (so the
// loop is not bound by the FMA and min/max latencies): the sum as s + v * 1 and the
// squares on the FMA units, the extremes on the adders. The sums stay in float within a
// block and go to `out` in double at flush(); the extremes go at finish(). Every kernel
// that reduces moments uses it, so the probes' own passes and the ops' loops sum alike.
template <int C>
struct Moments {
  F16 s[C], q[C], mn[C], mx[C];
  const F16 unit = opaque_one();  // (exact: v * 1 = v)
  Moments() {
    for (int c = 0; c < C; ++c) s[c] = q[c] = F16{}, mn[c] = F16{} + INFINITY, mx[c] = F16{} - INFINITY;
  }
  void add(int c, F16 v) {
    s[c] += v * unit, q[c] += v * v;
    mn[c] = vmin(v, mn[c]), mx[c] = vmax(v, mx[c]);
  }
  // The block's sums (chains added pairwise in a fixed order) into `out`, and a new
  // block; returns the block's sum.
  double flush(Sums& out) {
    const double block_sum = lane_sum(tree(s));
    out.sum += block_sum;
    out.sumsq += lane_sum(tree(q));
    for (int c = 0; c < C; ++c) s[c] = q[c] = F16{};
    return block_sum;
  }
  void finish(Sums& out) const {
    F16 lo = mn[0], hi = mx[0];
    for (int c = 1; c < C; ++c) lo = vmin(lo, mn[c]), hi = vmax(hi, mx[c]);
    for (int j = 0; j < 16; ++j) out.mn = std::min(out.mn, lo[j]), out.mx = std::max(out.mx, hi[j]);
  }

 private:
  static F16 tree(const F16 (&v)[C]) {
    if constexpr (C == 4) return (v[0] + v[1]) + (v[2] + v[3]);
    else if constexpr (C == 2) return v[0] + v[1];
    else return v[0];
  }
};

// One value outside the vectors (a tail), in double.
inline void add_scalar(Sums& out, float v) {
  out.sum += v;
  out.sumsq += double(v) * v;
  out.mn = v < out.mn ? v : out.mn;
  out.mx = v > out.mx ? v : out.mx;
}

// The light pass over n values: vec(k) returns the 16 values at k (k a multiple of 16),
// scalar(k) the value at k for the last n % 16; 4 chains (64 values per loop iteration).
// NaN/Inf are not counted: they make the sums non-finite. (The probes' own pass is bound
// by the loads: ~16 values per cycle in L1. Inside an op's loop, on values already in
// registers, it costs about a tenth of that: BM_ReluChunks in bench/micro_bench.cpp.)
template <class Vec, class Scalar>
inline void light_pass(int64_t n, Vec vec, Scalar scalar, Sums& out) {
  Moments<4> m;
  int64_t k = 0;
  const int64_t vec_end = n - n % 16;
  while (k < vec_end) {
    const int64_t block_end = std::min(vec_end, k + kBlock);
    for (; k + 64 <= block_end; k += 64)
      for (int c = 0; c < 4; ++c) m.add(c, vec(k + 16 * c));
    for (; k < block_end; k += 16) m.add(0, vec(k));  // the last block's remaining vectors
    m.flush(out);
  }
  m.finish(out);
  for (; k < n; ++k) add_scalar(out, scalar(k));
}

// light_pass over two streams at once: vec(k, a, b) sets the 16 values of each at k,
// scalar(k, a, b) the values at k for the last n % 16. 2 chains per stream and
// statistic (so the sums differ in rounding from light_pass's), for an op that holds
// both its input and its output in registers (an activation whose input, the previous
// step's output, a probe wants too).
template <class Vec, class Scalar>
inline void light_pass2(int64_t n, Vec vec, Scalar scalar, Sums& out_a, Sums& out_b) {
  Moments<2> a, b;
  int64_t k = 0;
  const int64_t vec_end = n - n % 16;
  while (k < vec_end) {
    const int64_t block_end = std::min(vec_end, k + kBlock);
    F16 va, vb;
    for (; k + 32 <= block_end; k += 32)
      for (int c = 0; c < 2; ++c) {
        vec(k + 16 * c, va, vb);
        a.add(c, va), b.add(c, vb);
      }
    for (; k < block_end; k += 16) {
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

}  // namespace dl::rt::stats
