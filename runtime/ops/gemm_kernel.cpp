// See gemm_kernel.h. The threads come from runtime/parallel.h (not OpenMP: see there).
#include "runtime/ops/gemm_kernel.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "runtime/ops/eigen_map.h"
#include "runtime/ops/gemm_scratch.h"
#include "runtime/parallel.h"

namespace dl::rt {
namespace {

using Index = Eigen::Index;

// Products below this many multiply-adds run on the calling thread: waking a helper
// (a futex wake-up, tens of microseconds on a busy machine) would cost more than it saves.
constexpr double kParallelMacs = double(1 << 22);
// Large products are cut into up to four blocks per thread (one more per kFineMacs
// multiply-adds), so a helper that runs late or slow (sharing its core) leaves less work
// to wait for: the caller takes the blocks it has not started. Each block repacks one
// operand, which bounds how fine the cut can usefully be.
constexpr double kFineMacs = double(1 << 27);

// Packing buffers of the calling thread, grown to the largest product it has run.
struct Scratch {
  ScratchBuffer a, b;
};

Scratch& thread_scratch() {
  thread_local Scratch s;
  return s;
}

#if EIGEN_VERSION_AT_LEAST(3, 3, 90)
// Eigen's blocking sizes for a product (what its serial GEMM computes), on this
// thread's packing buffers instead of a fresh allocation per call.
class Blocking : public Eigen::internal::level3_blocking<float, float> {
 public:
  Blocking(Index rows, Index cols, Index depth) {
    this->m_mc = rows;
    this->m_nc = cols;
    this->m_kc = depth;
    Eigen::internal::computeProductBlockingSizes<float, float, 1, Index>(this->m_kc, this->m_mc, this->m_nc, Index(1));
    Scratch& s = thread_scratch();
    this->m_blockA = s.a.reserve(size_t(this->m_mc * this->m_kc));
    this->m_blockB = s.b.reserve(size_t(this->m_kc * this->m_nc));
  }
};

// res (rows x cols, column-major, leading dimension res_stride) += alpha * lhs * rhs.
template <int LhsOrder, int RhsOrder>
void gebp(Index rows, Index cols, Index depth, const float* lhs, Index lhs_stride, const float* rhs, Index rhs_stride,
          float* res, Index res_stride, float alpha) {
  Blocking blocking(rows, cols, depth);
  Eigen::internal::general_matrix_matrix_product<Index, float, LhsOrder, false, float, RhsOrder, false, Eigen::ColMajor,
                                                 1>::run(rows, cols, depth, lhs, lhs_stride, rhs, rhs_stride, res, 1,
                                                         res_stride, alpha, blocking, nullptr);
}
#endif

// The public product on maps: Eigen's GEMV for vector shapes (never threaded), and
// the fallback for Eigen releases without the 3.4 kernel interface.
void expr_product(Index rows, Index cols, Index depth, const float* l, Index ls, bool l_row, const float* r, Index rs,
                  bool r_row, float* out, Index os, float alpha) {
  using ColMap = Eigen::Map<Eigen::MatrixXf, 0, Eigen::OuterStride<>>;
  using CColMap = Eigen::Map<const Eigen::MatrixXf, 0, Eigen::OuterStride<>>;
  using CRowMap =
      Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0, Eigen::OuterStride<>>;
  ColMap o(out, rows, cols, Eigen::OuterStride<>(os));
  auto go = [&](const auto& L, const auto& R) { o.noalias() += alpha * (L * R); };
  if (l_row) {
    CRowMap L(l, rows, depth, Eigen::OuterStride<>(ls));
    if (r_row) go(L, CRowMap(r, depth, cols, Eigen::OuterStride<>(rs)));
    else go(L, CColMap(r, depth, cols, Eigen::OuterStride<>(rs)));
  } else {
    CColMap L(l, rows, depth, Eigen::OuterStride<>(ls));
    if (r_row) go(L, CRowMap(r, depth, cols, Eigen::OuterStride<>(rs)));
    else go(L, CColMap(r, depth, cols, Eigen::OuterStride<>(rs)));
  }
}

// out (rows x cols, column-major) += alpha * lhs (rows x depth) * rhs (depth x cols).
void multiply(Index rows, Index cols, Index depth, const float* l, Index ls, bool l_row, const float* r, Index rs,
              bool r_row, float* out, Index os, float alpha) {
#if EIGEN_VERSION_AT_LEAST(3, 3, 90)
  if (rows > 1 && cols > 1) {
    if (l_row) {
      if (r_row) gebp<Eigen::RowMajor, Eigen::RowMajor>(rows, cols, depth, l, ls, r, rs, out, os, alpha);
      else gebp<Eigen::RowMajor, Eigen::ColMajor>(rows, cols, depth, l, ls, r, rs, out, os, alpha);
    } else {
      if (r_row) gebp<Eigen::ColMajor, Eigen::RowMajor>(rows, cols, depth, l, ls, r, rs, out, os, alpha);
      else gebp<Eigen::ColMajor, Eigen::ColMajor>(rows, cols, depth, l, ls, r, rs, out, os, alpha);
    }
    return;
  }
#endif
  expr_product(rows, cols, depth, l, ls, l_row, r, rs, r_row, out, os, alpha);
}

// A product in Eigen's column-major terms: C^T (n x m) = op(B)^T (n x k) * op(A)^T (k x m).
struct Product {
  Index rows, cols, depth;  // n, m, k
  const float* lhs;         // op(B)^T
  Index lhs_stride;
  bool lhs_row_major;  // B stored transposed
  const float* rhs;    // op(A)^T
  Index rhs_stride;
  bool rhs_row_major;  // A stored transposed
  float* res;
  Index res_stride;
  float alpha;
  bool accumulate;
  const float* bias;  // when not accumulating: C's rows start as this row (n values), else as zeros
  bool split_rows;  // blocks of lhs rows (C columns) rather than rhs columns (C rows)
  Index block;      // rows (or columns) per block
  Index blocks;

  // Computes block t: its part of C, first zeroed (or set to the bias rows) unless
  // accumulating.
  void run_block(Index t) const {
    const bool last = t + 1 == blocks;  // takes the rest (see gemm(): never a one-wide tail)
    const Index r0 = split_rows ? t * block : 0, r1 = split_rows ? (last ? rows : std::min(rows, r0 + block)) : rows;
    const Index c0 = split_rows ? 0 : t * block, c1 = split_rows ? cols : (last ? cols : std::min(cols, c0 + block));
    if (r1 <= r0 || c1 <= c0) return;
    float* out = res + r0 + c0 * res_stride;
    if (!accumulate && bias)
      for (Index c = c0; c < c1; ++c) std::memcpy(res + r0 + c * res_stride, bias + r0, size_t(r1 - r0) * sizeof(float));
    else if (!accumulate)
      for (Index c = c0; c < c1; ++c) std::memset(res + r0 + c * res_stride, 0, size_t(r1 - r0) * sizeof(float));
    const float* l = lhs + (lhs_row_major ? r0 * lhs_stride : r0);
    const float* r = rhs + (rhs_row_major ? c0 : c0 * rhs_stride);
    multiply(r1 - r0, c1 - c0, depth, l, lhs_stride, lhs_row_major, r, rhs_stride, rhs_row_major, out, res_stride,
             alpha);
  }
};

// Which way to cut a product into `blocks` blocks: along C's columns (true) or its rows.
// Each block packs all of the operand it does not cut: op(A) (m x k) per column block,
// op(B) (k x n) per row block. Column blocks also share every row of C: each row's
// boundary cache lines go back and forth between the cores (their prefetchers read
// ahead into the neighbour's part), about as costly as packing kBoundaryFloats values per
// row and boundary. So: columns when m (k + kBoundaryFloats (blocks - 1) / blocks) < k n.
// Measured on a 2-core Zen 5 (bench/README.md, run 47): a 1x1 Conv's dW (m 320, n 960,
// k 16) took 161 us cut by columns and 42 cut by rows (64 on one thread). With two
// blocks, columns need n > m (1 + 256 / k): wide products (the MLP's 64 x 784 x 256)
// still go by columns; square ones now go by rows.
bool split_columns(int64_t m, int64_t n, int64_t k, int64_t blocks) {
  constexpr double kBoundaryFloats = 512;
  if (blocks <= 1) return m <= n;
  const double b = double(blocks);
  return double(m) * (double(k) + kBoundaryFloats * (b - 1) / b) < double(k) * double(n);
}

}  // namespace

int gemm_threads(int64_t m, int64_t n, int64_t k) {
  const double macs = double(m) * double(n) * double(k);
  if (macs < kParallelMacs) return 1;
  const int budget = compute_threads();
  if (budget == 1) return 1;
  // Only products cut in several blocks per thread gain from a helper that shares its core.
  if (macs < 2 * kFineMacs && helpers_congested()) return 1;
  return budget;
}

namespace {

void product(int64_t m, int64_t n, int64_t k, float alpha, MatRef a, MatRef b, const float* bias, float* c,
             int64_t ldc, bool accumulate) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    if (!accumulate)
      for (int64_t i = 0; i < m; ++i) {
        if (bias) std::memcpy(c + i * ldc, bias, size_t(n) * sizeof(float));
        else std::memset(c + i * ldc, 0, size_t(n) * sizeof(float));
      }
    return;
  }
  Product p;
  p.rows = n;
  p.cols = m;
  p.depth = k;
  // op(B)^T (n x k): B stored k x n row-major is column-major n x k; stored n x k
  // (transposed) it is row-major.
  p.lhs = b.p;
  p.lhs_stride = b.ld;
  p.lhs_row_major = b.trans;
  p.rhs = a.p;
  p.rhs_stride = a.ld;
  p.rhs_row_major = a.trans;
  p.res = c;
  p.res_stride = ldc;
  p.alpha = alpha;
  p.accumulate = accumulate;
  p.bias = bias;
  const int threads = gemm_threads(m, n, k);
  const double macs = double(m) * double(n) * double(k);
  const Index per_thread = std::min<Index>(4, std::max<Index>(1, Index(macs / kFineMacs)));
  Index blocks = threads == 1 ? 1 : Index(threads) * per_thread;
  p.split_rows = split_columns(m, n, k, blocks);
  const Index extent = p.split_rows ? p.rows : p.cols;
  const Index align = p.split_rows ? 48 : 4;  // GEBP's register block (rows x columns)
  Index per = (extent + blocks - 1) / blocks;
  per = (per + align - 1) / align * align;
  blocks = std::max<Index>(1, (extent + per - 1) / per);
  // A one-wide last block would take Eigen's GEMV path, which sums in another order than
  // the unsplit product: the block before it takes that row or column as well.
  if (blocks > 1 && extent - (blocks - 1) * per == 1) --blocks;
  p.block = blocks == 1 ? extent : per;
  p.blocks = blocks;
  if (blocks == 1) {
    p.run_block(0);
    return;
  }
  parallel_blocks(blocks, threads, [](const void* ctx, int64_t t) { static_cast<const Product*>(ctx)->run_block(t); },
                  &p);
}

}  // namespace

void gemm(int64_t m, int64_t n, int64_t k, float alpha, MatRef a, MatRef b, float* c, int64_t ldc, bool accumulate) {
  product(m, n, k, alpha, a, b, nullptr, c, ldc, accumulate);
}

void gemm_bias(int64_t m, int64_t n, int64_t k, float alpha, MatRef a, MatRef b, const float* bias, float* c,
               int64_t ldc) {
  product(m, n, k, alpha, a, b, bias, c, ldc, false);
}

}  // namespace dl::rt
