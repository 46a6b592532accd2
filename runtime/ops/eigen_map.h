// Eigen views of row-major float buffers for the matrix-product ops (Gemm, MatMul,
// Conv), and vectorised reductions for the nn ops. Maps wrap tensor storage without
// copying; products into them with noalias() run Eigen's GEMM/GEMV directly on the
// buffers.
#pragma once

// GCC 12 reports false -Wmaybe-uninitialized warnings inside Eigen's AVX-512 packet
// code (_mm512_undefined_ps); silence them for Eigen's headers only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <Eigen/Dense>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include <cstdint>

#include "runtime/value_sums.h"

namespace dl::rt {

using MatMap = Eigen::Map<Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
using CMatMap = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
// A block of columns of a row-major matrix: rows keep the parent's row stride.
using StridedMatMap =
    Eigen::Map<Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0, Eigen::OuterStride<>>;
using CStridedMatMap =
    Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0, Eigen::OuterStride<>>;
using CVecMap = Eigen::Map<const Eigen::ArrayXf>;

// Reductions over n contiguous floats, in kLanes interleaved partial sums (lane j takes
// the elements k with k % kLanes == j) combined pairwise in a fixed order: vectorised
// like Eigen's lane sums (a plain serial loop does not vectorise without -ffast-math) and
// as accurate, but independent of the buffer's address. Eigen's redux peels elements up
// to the first SIMD-aligned one, so its grouping (and the rounding) depended on where
// the heap put a tensor: a model trained twice in one process gave different losses.
namespace reduce_detail {
constexpr int kLanes = 16;
template <class Term>
inline float lane_sum(int64_t n, Term term) {
  float acc[kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += term(k + j);
  for (int j = 0; k < n; ++k, ++j) acc[j] += term(k);
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
  return acc[0];
}
}  // namespace reduce_detail

inline float sum_of(const float* p, int64_t n) {
  return reduce_detail::lane_sum(n, [p](int64_t k) { return p[k]; });
}
// row_sums[r] += sum_of(p + r * len, len) for each of `rows` rows (the same bits), and
// the light sums (sum, sum of squares, min, max; runtime/value_sums.h) of all rows * len
// values into `out`, from the same loads: for an op that sums the rows of a tensor a
// probe wants anyway (Conv's bias gradient over dY, the first read of dY).
inline void sum_rows_light(const float* p, int64_t rows, int64_t len, float* row_sums, stats::Sums& out) {
  using stats::F16;
  static_assert(reduce_detail::kLanes == sizeof(F16) / sizeof(float), "sum_of's lanes are one F16");
  stats::Moments<4> m;
  int64_t in_block = 0;  // values in the float sums since they were last added to `out`
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = p + r * len;
    F16 acc = F16{};  // sum_of's 16 lanes
    int64_t k = 0;
    for (; k + 64 <= len; k += 64) {
      for (int c = 0; c < 4; ++c) {
        const F16 v = stats::load16(row + k + 16 * c);
        acc += v;
        m.add(c, v);
      }
      in_block += 64;
    }
    for (; k + 16 <= len; k += 16) {
      const F16 v = stats::load16(row + k);
      acc += v;
      m.add(0, v);
      in_block += 16;
    }
    for (int j = 0; k < len; ++k, ++j) {
      acc[j] += row[k];
      stats::add_scalar(out, row[k]);
    }
    for (int w = reduce_detail::kLanes / 2; w > 0; w /= 2)
      for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
    row_sums[r] += acc[0];
    if (in_block >= stats::kBlock) m.flush(out), in_block = 0;
  }
  m.flush(out);
  m.finish(out);
}

// sum (p[k] - m)^2
inline float sum_sq_dev(const float* p, int64_t n, float m) {
  return reduce_detail::lane_sum(n, [p, m](int64_t k) {
    const float d = p[k] - m;
    return d * d;
  });
}
// sum g[k] * (p[k] - m)
inline float dot_dev(const float* g, const float* p, int64_t n, float m) {
  return reduce_detail::lane_sum(n, [g, p, m](int64_t k) { return g[k] * (p[k] - m); });
}

}  // namespace dl::rt
