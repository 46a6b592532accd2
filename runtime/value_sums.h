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
#include <utility>

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

// The light pass over n values: vec(k) returns the 16 values at k (k a multiple of 16),
// scalar(k) the value at k for the last n % 16. Sum and sum of squares on the FMA units,
// min and max on the adders, 4 chains each (64 values per loop iteration). NaN/Inf are
// not counted: they make the sums non-finite. (The probes' own pass is bound by the
// loads: ~16 values per cycle in L1. Inside an op's loop, on values already in
// registers, it costs about a tenth of that: BM_ReluChunks in bench/micro_bench.cpp.)
template <class Vec, class Scalar>
inline void light_pass(int64_t n, Vec vec, Scalar scalar, Sums& out) {
  const F16 inf = F16{} + INFINITY;
  const F16 unit = opaque_one();  // s + v * unit stays an FMA (exact: v * 1 = v)
  F16 mn[4] = {inf, inf, inf, inf}, mx[4] = {-inf, -inf, -inf, -inf};
  int64_t k = 0;
  const int64_t vec_end = n - n % 16;
  while (k < vec_end) {
    const int64_t block_end = std::min(vec_end, k + kBlock);
    F16 s[4] = {}, q[4] = {};
    const auto add = [&](int c, F16 v) {
      s[c] += v * unit, q[c] += v * v;
      mn[c] = vmin(v, mn[c]), mx[c] = vmax(v, mx[c]);
    };
    for (; k + 64 <= block_end; k += 64)
      for (int c = 0; c < 4; ++c) add(c, vec(k + 16 * c));
    for (; k < block_end; k += 16) add(0, vec(k));  // the last block's remaining vectors
    out.sum += lane_sum((s[0] + s[1]) + (s[2] + s[3]));
    out.sumsq += lane_sum((q[0] + q[1]) + (q[2] + q[3]));
  }
  const F16 lo = vmin(vmin(mn[0], mn[1]), vmin(mn[2], mn[3])), hi = vmax(vmax(mx[0], mx[1]), vmax(mx[2], mx[3]));
  for (int j = 0; j < 16; ++j) out.mn = std::min(out.mn, lo[j]), out.mx = std::max(out.mx, hi[j]);
  for (; k < n; ++k) {
    const float v = scalar(k);
    out.sum += v;
    out.sumsq += double(v) * v;
    out.mn = v < out.mn ? v : out.mn;
    out.mx = v > out.mx ? v : out.mx;
  }
}

// light_pass over two streams at once: vec(k, a, b) sets the 16 values of each at k,
// scalar(k, a, b) the values at k for the last n % 16. 2 chains per stream and
// statistic (so the sums differ in rounding from light_pass's), for an op that holds
// both its input and its output in registers (an activation whose input, the previous
// step's output, a probe wants too).
template <class Vec, class Scalar>
inline void light_pass2(int64_t n, Vec vec, Scalar scalar, Sums& out_a, Sums& out_b) {
  struct Chains {
    F16 s[2] = {}, q[2] = {}, mn[2], mx[2];
    Chains() { mn[0] = mn[1] = F16{} + INFINITY, mx[0] = mx[1] = F16{} - INFINITY; }
  } a, b;
  const F16 unit = opaque_one();  // s + v * unit stays an FMA (exact: v * 1 = v)
  const auto add = [&](Chains& ch, int c, F16 v) {
    ch.s[c] += v * unit, ch.q[c] += v * v;
    ch.mn[c] = vmin(v, ch.mn[c]), ch.mx[c] = vmax(v, ch.mx[c]);
  };
  const auto flush = [](Chains& ch, Sums& out) {
    out.sum += lane_sum(ch.s[0] + ch.s[1]);
    out.sumsq += lane_sum(ch.q[0] + ch.q[1]);
    ch.s[0] = ch.s[1] = ch.q[0] = ch.q[1] = F16{};
  };
  int64_t k = 0;
  const int64_t vec_end = n - n % 16;
  while (k < vec_end) {
    const int64_t block_end = std::min(vec_end, k + kBlock);
    F16 va, vb;
    for (; k + 32 <= block_end; k += 32)
      for (int c = 0; c < 2; ++c) {
        vec(k + 16 * c, va, vb);
        add(a, c, va), add(b, c, vb);
      }
    for (; k < block_end; k += 16) {
      vec(k, va, vb);
      add(a, 0, va), add(b, 0, vb);
    }
    flush(a, out_a), flush(b, out_b);
  }
  for (auto [ch, out] : {std::pair<Chains*, Sums*>{&a, &out_a}, {&b, &out_b}}) {
    const F16 lo = vmin(ch->mn[0], ch->mn[1]), hi = vmax(ch->mx[0], ch->mx[1]);
    for (int j = 0; j < 16; ++j) out->mn = std::min(out->mn, lo[j]), out->mx = std::max(out->mx, hi[j]);
  }
  for (; k < n; ++k) {
    float va, vb;
    scalar(k, va, vb);
    for (auto [v, out] : {std::pair<float, Sums*>{va, &out_a}, {vb, &out_b}}) {
      out->sum += v;
      out->sumsq += double(v) * v;
      out->mn = v < out->mn ? v : out->mn;
      out->mx = v > out->mx ? v : out->mx;
    }
  }
}

}  // namespace dl::rt::stats
