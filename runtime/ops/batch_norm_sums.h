// The probes' light sums (runtime/value_sums.h) of a BatchNormalization channel's input X
// and output Y = X * a + b, from what its forward pass computes anyway with batch
// statistics: the sum s of X's n values, the sum ss of (x - m)^2 about the float mean m
// it normalises with, and X's extremes (one more min and max per vector of the pass that
// sums X). No pass over Y and no moments of X of their own: a light iteration's
// BatchNormalization reports both tensors for about a quarter of the work of reducing
// one (mobilenet_v2, shufflenet_v2, resnet18 at 32x32 have 8x8 to 1x1 maps, where the
// per-channel loops are short; bench/README.md run 29).
//
// The sums equal a reduction of the values up to rounding (in double, centred on m so
// that a large mean does not cancel); the extremes are exact: y = x * a + b as the op
// computes it (rounded twice, or once when contracted to a fused multiply-add) is
// monotonic in x. A Y value that overflowed, or a, b not finite, make
// the sum NaN, so that the probe reduces the tensor in full and counts what is not finite.
// Without batch statistics, on long channels, the loop that writes Y sums X and Y from its
// registers instead (normalize_summing).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "runtime/value_simd.h"
#include "runtime/value_sums.h"

namespace dl::rt::bn_sums {

struct Channel {
  double n = 0, s = 0, ss = 0;  // values, sum x, sum (x - m)^2
  float m = 0;                  // the mean the op normalised with
  float lo = 0, hi = 0;         // min and max x (NaN never taken: then s is NaN)
};

inline stats::Sums of_x(const Channel& c) {
  stats::Sums r;
  const double m = c.m, d = c.s - c.n * m;  // sum (x - m)
  r.sum = c.s;
  r.sumsq = c.ss + 2.0 * m * d + c.n * m * m;
  r.mn = c.lo, r.mx = c.hi;
  return r;
}

inline stats::Sums of_y(const Channel& c, float a, float b) {
  stats::Sums r;
  // (The op's expression for y: the compiler contracts both alike, to one fused
  // multiply-add where the target has one, so each extreme is the op's y bit for bit.)
  const float y_lo = c.lo * a + b, y_hi = c.hi * a + b;
  const double m = c.m, d = c.s - c.n * m;
  const double A = a, beta = A * m + b;  // y = A (x - m) + beta
  r.sum = A * d + c.n * beta;
  r.sumsq = A * A * c.ss + 2.0 * A * beta * d + c.n * beta * beta;
  r.mn = a >= 0 ? y_lo : y_hi;
  r.mx = a >= 0 ? y_hi : y_lo;
  if (!std::isfinite(y_lo) || !std::isfinite(y_hi)) r.sum = std::numeric_limits<double>::quiet_NaN();
  return r;
}

// A channel's Y = X * a + b (`rows` rows of `inner` values, `stride` apart), putting the
// light sums of Y into *y_sums and of X into *x_sums (each when not null) from the loop's
// registers: the light probe sinks of a BatchNormalization without batch statistics, on
// long channels. (Apart from the op's plain loop, not inlined: its accumulators, 1.3 KB
// each with AVX-512, had GCC clear their storage on every channel's way, 6% of a 4x4 map's
// forward, bench/README.md run 59.)
__attribute__((noinline)) inline void normalize_summing(const float* x, float* y, int64_t rows, int64_t stride,
                                                        int64_t inner, float a, float b, stats::Sums* y_sums,
                                                        stats::Sums* x_sums) {
  std::optional<simd::LightSums> in_holder, holder;
  simd::LightSums* in_acc = x_sums ? &in_holder.emplace() : nullptr;
  simd::LightSums* acc = y_sums ? &holder.emplace() : nullptr;
  for (int64_t n = 0; n < rows; ++n) {
    const float* xp = x + n * stride;
    float* yp = y + n * stride;
    // (The vector lanes and the scalar tail compute the same expression, contracted
    // alike.)
    using simd::VecF;
    constexpr int kL = simd::kLanes;
    const VecF av = simd::splat(a), bv = simd::splat(b);
    const auto y_of = [&](int64_t at) {
      const VecF w = simd::loadv(xp + at) * av + bv;
      simd::storev(yp + at, w);
      return w;
    };
    int64_t k = 0;
    for (; k + 4 * kL <= inner; k += 4 * kL) {
      const VecF w0 = y_of(k), w1 = y_of(k + kL), w2 = y_of(k + 2 * kL), w3 = y_of(k + 3 * kL);
      if (acc) acc->put4(w0, w1, w2, w3);
      if (in_acc) in_acc->put_row(xp + k, 4 * kL);
    }
    for (; k + kL <= inner; k += kL) {
      const VecF w = y_of(k);
      if (acc) acc->put(w);
      if (in_acc) in_acc->put(simd::loadv(xp + k));
    }
    for (; k < inner; ++k) {
      yp[k] = xp[k] * a + b;
      if (in_acc) in_acc->put_scalar(xp[k]);
      if (acc) acc->put_scalar(yp[k]);
    }
  }
  if (acc) *y_sums = acc->finish();
  if (in_acc) *x_sums = in_acc->finish();
}

// The channels' sums, in channel order, as one report of the whole tensor's n values.
template <class Sink>
void report(const std::vector<stats::Sums>& per_channel, Sink* sink, int64_t n) {
  stats::Sums total;
  for (const stats::Sums& s : per_channel) total.merge(s);
  sink->add_sums(0, total, n);
}

}  // namespace dl::rt::bn_sums
