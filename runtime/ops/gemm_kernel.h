// The matrix product behind Gemm, MatMul and Conv: C (+)= alpha * op(A) * op(B) on
// row-major float buffers, run on Eigen's GEBP kernel directly (packing buffers reused
// per thread: no allocation per call) and split across the compute threads only when
// the product is large enough to pay for waking them.
//
// Threads: runtime/parallel.h (compute_threads(), parallel_blocks()); the kernel never
// starts OpenMP regions. Results do not depend on which thread computes a block: the
// blocks (and Eigen's blocking inside each) follow from the shapes and the thread
// budget only.
#pragma once

#include <cstdint>

namespace dl::rt {

// A row-major operand: element (i, j) of op(X) is p[i * ld + j], or p[j * ld + i]
// when trans (X is stored transposed).
struct MatRef {
  const float* p = nullptr;
  int64_t ld = 0;
  bool trans = false;
};

// C (m x n, row-major, leading dimension ldc) = alpha * op(A) * op(B) when !accumulate,
// C += alpha * op(A) * op(B) when accumulate. op(A) is m x k, op(B) is k x n. C must not
// overlap A or B.
void gemm(int64_t m, int64_t n, int64_t k, float alpha, MatRef a, MatRef b, float* c, int64_t ldc, bool accumulate);
// C = bias + alpha * op(A) * op(B), bias a row of n values added to every row: each block
// of C starts from the bias instead of zeros (no pass of its own over C). The bits of
// gemm() onto C holding the bias rows, with accumulate.
void gemm_bias(int64_t m, int64_t n, int64_t k, float alpha, MatRef a, MatRef b, const float* bias, float* c,
               int64_t ldc);

// Threads a product of m * n * k multiply-adds would use: 1 below the size that pays, and
// for mid-size products while helpers are congested (runtime/parallel.h).
int gemm_threads(int64_t m, int64_t n, int64_t k);

}  // namespace dl::rt
