// Eigen views of row-major float buffers for the matrix-product ops (Gemm, MatMul,
// Conv), and vectorised reductions for the nn ops. Maps wrap tensor storage without
// copying; products into them with noalias() run Eigen's GEMM/GEMV directly on the
// buffers.
#pragma once

// GCC 12 reports false -Wmaybe-uninitialized warnings inside Eigen's AVX-512 packet
// code (_mm512_undefined_ps); silence them for Eigen's headers only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Dense>
#pragma GCC diagnostic pop

#include <cstdint>

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
