// Conv's limits (ConvLimits), and the batched Conv path's layout moves
// (runtime/ops/conv.cpp, small output maps): the product buffer holds `maps` rows of
// `images` x P columns (image j at column j*P), the tensors NCHW planes of P positions.
// And the light statistics read from that buffer.
#pragma once

#include <algorithm>
#include <cstdint>

#include "runtime/ops/window.h"
#include "runtime/value_simd.h"

namespace dl::rt {

// How Conv (runtime/ops/conv.cpp) sizes its scratch and batches its images; ConvTranspose
// caps its column buffer the same way.
struct ConvLimits {
  // Column buffer cap (floats): bounds each Conv's column buffers (4 MiB, and 4 MiB for
  // the parts' dW/dB sums) whatever the image size, while keeping GEMMs wide; one output
  // row is the minimum tile.
  static constexpr int64_t kColBudget = int64_t{1} << 20;
  // Image parts: up to kMaxParts, each with its own column buffer and dW/dB sums, while
  // the column buffers together and the sums together each stay within kColBudget floats
  // (large images and large kernels keep one part; their GEMMs are wide enough to be
  // split across threads themselves).
  static constexpr int64_t kMaxParts = 8;
  // Output maps smaller than this many positions batch their images until a GEMM has at
  // least this many columns (see the top of runtime/ops/conv.cpp; but kThinMaps).
  static constexpr int64_t kBatchCols = 2048;
  // Products with fewer than kThinMaps output maps per group batch only maps under
  // kBatchMaxPositions positions. From 64 on, a per-image product already fills GEBP's
  // 48-row register panels, and for so few maps batching costs more than it saves: Y and
  // dY copied through the product buffer, and a column buffer out of L2 (LeNet-5's second
  // Conv, 16 maps of 10x10: 21 images of 150 x 100 columns, 1.26 MB). LeNet-5 at batch
  // 64, 1 thread: 6.3 -> 4.8 ms CPU per step. Wider ones (resnet18) batch up to kBatchCols.
  static constexpr int64_t kBatchMaxPositions = 64, kThinMaps = 32;
};

// f(first row, end row, first position, positions) per tile of tile_rows whole output
// rows of w (flattened (od, oh)): Conv's im2col tiles, ConvTranspose's of X (its window
// runs over X).
template <class F>
void for_each_row_tile(const Window& w, int64_t tile_rows, F f) {
  const int64_t rows = w.out[0] * w.out[1];
  for (int64_t r0 = 0; r0 < rows; r0 += tile_rows) {
    const int64_t r1 = std::min(rows, r0 + tile_rows);
    f(r0, r1, r0 * w.out[2], (r1 - r0) * w.out[2]);
  }
}

// Image j's Y planes (maps at y, P apart) = its columns of the buffer (maps x cols,
// image j's P columns from j * P) (+ bias[map]).
inline void batched_to_image(const float* buf, int64_t maps, int64_t cols, int64_t j, int64_t P, const float* bias,
                             float* y) {
  for (int64_t i = 0; i < maps; ++i) {
    const float* src = buf + i * cols + j * P;
    float* dst = y + i * P;
    if (bias) {
      const float b = bias[i];
      for (int64_t p = 0; p < P; ++p) dst[p] = src[p] + b;
    } else {
      std::copy_n(src, P, dst);
    }
  }
}

// Image j's columns of the buffer = its dY planes (maps at dy, P apart).
inline void image_to_batched(const float* dy, int64_t maps, int64_t cols, int64_t j, int64_t P, float* buf) {
  for (int64_t i = 0; i < maps; ++i) std::copy_n(dy + i * P, P, buf + i * cols + j * P);
}

// The light statistics (runtime/value_simd.h) of rows x cols values buf (+ bias[row]),
// the values Y gets: from the product's buffer, contiguous rows still in cache.
inline void light_rows(const float* buf, int64_t rows, int64_t cols, const float* bias, simd::LightSums& out) {
  for (int64_t i = 0; i < rows; ++i)
    bias ? out.put_row_plus(buf + i * cols, cols, bias[i]) : out.put_row(buf + i * cols, cols);
}

}  // namespace dl::rt
