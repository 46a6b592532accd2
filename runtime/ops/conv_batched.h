// The batched Conv path's layout moves (runtime/ops/conv.cpp, small output maps): the
// product buffer holds `maps` rows of `images` x P columns (image j at column j*P), the
// tensors NCHW planes of P positions. And the light statistics read from that buffer.
#pragma once

#include <algorithm>
#include <cstdint>

#include "runtime/value_simd.h"

namespace dl::rt {

// Y planes (maps of image j at y + j * image_stride) = buffer (+ bias[map]).
inline void batched_to_images(const float* buf, int64_t maps, int64_t images, int64_t P, const float* bias,
                              float* y, int64_t image_stride) {
  const int64_t cols = images * P;
  for (int64_t j = 0; j < images; ++j)
    for (int64_t i = 0; i < maps; ++i) {
      const float* src = buf + i * cols + j * P;
      float* dst = y + j * image_stride + i * P;
      if (bias) {
        const float b = bias[i];
        for (int64_t p = 0; p < P; ++p) dst[p] = src[p] + b;
      } else {
        std::copy_n(src, P, dst);
      }
    }
}

// The buffer = dY planes (maps of image j at dy + j * image_stride).
inline void images_to_batched(const float* dy, int64_t maps, int64_t images, int64_t P, int64_t image_stride,
                              float* buf) {
  const int64_t cols = images * P;
  for (int64_t j = 0; j < images; ++j)
    for (int64_t i = 0; i < maps; ++i) std::copy_n(dy + j * image_stride + i * P, P, buf + i * cols + j * P);
}

// The light statistics (runtime/value_simd.h) of rows x cols values buf (+ bias[row]),
// the values Y gets: from the product's buffer, contiguous rows still in cache.
inline void light_rows(const float* buf, int64_t rows, int64_t cols, const float* bias, simd::LightSums& out) {
  for (int64_t i = 0; i < rows; ++i)
    bias ? out.put_row_plus(buf + i * cols, cols, bias[i]) : out.put_row(buf + i * cols, cols);
}

}  // namespace dl::rt
