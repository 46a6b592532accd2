// A kLanes x kLanes block of floats transposed in registers (runtime/value_simd.h's
// native vectors): log2(kLanes) stages, stage H swapping the off-diagonal H x H blocks of
// every 2H x 2H block, two two-source shuffles per pair of rows (vpermt2ps with AVX-512).
// Exact: values are only moved. For the depthwise kernels' channel blocks
// (runtime/ops/depthwise.cpp) and Transpose's tiles (runtime/ops/transpose.cpp).
#pragma once

#include <cstddef>
#include <utility>

#include "runtime/value_simd.h"

namespace dl::rt::simd {

namespace transpose_detail {
template <int H, size_t... I>
VecF shuffle_low(VecF a, VecF b, std::index_sequence<I...>) {  // a's blocks, then b's first
#if defined(__clang__)
  return __builtin_shufflevector(a, b, (I & H ? int(kLanes + I - H) : int(I))...);
#else
  return __builtin_shuffle(a, b, VecI{(I & H ? int(kLanes + I - H) : int(I))...});
#endif
}
template <int H, size_t... I>
VecF shuffle_high(VecF a, VecF b, std::index_sequence<I...>) {
#if defined(__clang__)
  return __builtin_shufflevector(a, b, (I & H ? int(kLanes + I) : int(I + H))...);
#else
  return __builtin_shuffle(a, b, VecI{(I & H ? int(kLanes + I) : int(I + H))...});
#endif
}
template <int H>
void stage(VecF* r) {
  for (int i = 0; i < kLanes; ++i) {
    if (i & H) continue;
    const VecF a = r[i], b = r[i + H];
    r[i] = shuffle_low<H>(a, b, std::make_index_sequence<kLanes>());
    r[i + H] = shuffle_high<H>(a, b, std::make_index_sequence<kLanes>());
  }
  if constexpr (H > 1) stage<H / 2>(r);
}
}  // namespace transpose_detail

// r[i][j] <- r[j][i]
inline void transpose(VecF* r) { transpose_detail::stage<kLanes / 2>(r); }

}  // namespace dl::rt::simd
