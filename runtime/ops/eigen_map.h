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
using StridedMatMap = Eigen::Map<Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0,
                                 Eigen::OuterStride<>>;
using CStridedMatMap = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0,
                                  Eigen::OuterStride<>>;
using CVecMap = Eigen::Map<const Eigen::ArrayXf>;

// Reductions over n contiguous floats. Eigen sums in SIMD lanes (a plain loop does not
// vectorise without -ffast-math), which is also more accurate than one serial sum.
inline float sum_of(const float* p, int64_t n) { return CVecMap(p, n).sum(); }
// sum (p[k] - m)^2
inline float sum_sq_dev(const float* p, int64_t n, float m) { return (CVecMap(p, n) - m).square().sum(); }
// sum g[k] * (p[k] - m)
inline float dot_dev(const float* g, const float* p, int64_t n, float m) {
  return (CVecMap(g, n) * (CVecMap(p, n) - m)).sum();
}

}  // namespace dl::rt
