// The sums a probe's statistics record is finished from (runtime/probe_stats.h), merged
// in a fixed order. The kernels that produce them, on vectors of the target's native
// width, are in runtime/value_simd.h.
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
  int64_t masked = 0;  // -inf values left out under Bands::masked (runtime/probe_stats.h)
  void merge(const Sums& o) {
    sum += o.sum, sumsq += o.sumsq, sumabs += o.sumabs;
    mn = std::min(mn, o.mn), mx = std::max(mx, o.mx);
    zeros += o.zeros, dead += o.dead, sat += o.sat;
    nan += o.nan, inf += o.inf;
    masked += o.masked;
  }
};

// Values summed in float within blocks of this many, in double across blocks.
constexpr int64_t kBlock = 4096;

// One value outside the vectors (a tail), in double.
inline void add_scalar(Sums& out, float v) {
  out.sum += v;
  out.sumsq += double(v) * v;
  out.mn = v < out.mn ? v : out.mn;
  out.mx = v > out.mx ? v : out.mx;
}

}  // namespace dl::rt::stats
