// Float vectors of the target's width with lane masks, for the kernels over short rows
// (runtime/ops/conv_direct.cpp, im2col.cpp, max_pool.cpp): one kernel source for
// AVX-512 (16 lanes, mask registers) and AVX2 + FMA (8 lanes, masks as vectors of
// all-ones lanes), so both kinds of x86 machine take the same fast paths. kRowVec is
// false on other targets (the kernels' callers then take their portable loops).
//
// DL_ROW_VEC is defined where the kernels are (kRowVec).
// Masked loads read nothing past their lanes (no fault), and give 0 in the other lanes.
#pragma once

#include <algorithm>
#include <cstdint>

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#define DL_ROW_VEC 1
#include <immintrin.h>
#endif

namespace dl::rt::rowvec {

#if defined(__AVX512F__)
constexpr bool kRowVec = true;
constexpr int kLanes = 16;
constexpr int kRegisters = 32;
using Vec = __m512;
using Mask = __mmask16;

// Lanes [from, to) (clamped to [0, kLanes)).
inline Mask lanes(int64_t from, int64_t to) {
  from = std::max<int64_t>(from, 0);
  to = std::min<int64_t>(to, kLanes);
  return to > from ? static_cast<Mask>(((1u << (to - from)) - 1u) << from) : Mask(0);
}
inline Vec zero() { return _mm512_setzero_ps(); }
inline Vec set1(float v) { return _mm512_set1_ps(v); }
inline Vec load(const float* p) { return _mm512_loadu_ps(p); }
inline void store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
inline Vec load(Mask m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
inline void store(float* p, Mask m, Vec v) { _mm512_mask_storeu_ps(p, m, v); }
inline Vec add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
inline Vec fmadd(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
// Lanes where a > b (ordered: false where either is NaN); b where m is off, a where on.
inline Mask greater(Vec a, Vec b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
inline Vec select(Mask m, Vec a, Vec b) { return _mm512_mask_mov_ps(b, m, a); }
inline Mask both(Mask a, Mask b) { return static_cast<Mask>(a & b); }
// The even and odd lanes of the 2 * kLanes values in (lo, hi), in order.
inline void deinterleave(Vec lo, Vec hi, Vec& even, Vec& odd) {
  const __m512i e = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  even = _mm512_permutex2var_ps(lo, e, hi);
  odd = _mm512_permutex2var_ps(lo, _mm512_add_epi32(e, _mm512_set1_epi32(1)), hi);
}
using VecI = __m512i;  // int32 lanes
inline VecI iota(int32_t from, int32_t step) {  // from, from + step, ...
  return _mm512_add_epi32(_mm512_set1_epi32(from),
                          _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                             _mm512_set1_epi32(step)));
}
inline VecI add(VecI a, int32_t b) { return _mm512_add_epi32(a, _mm512_set1_epi32(b)); }
inline VecI select(Mask m, VecI a, VecI b) { return _mm512_mask_mov_epi32(b, m, a); }
inline void store(int32_t* p, Mask m, VecI v) { _mm512_mask_storeu_epi32(p, m, v); }
inline void store(int32_t* p, VecI v) { _mm512_storeu_si512(p, v); }

#elif defined(__AVX2__) && defined(__FMA__)
constexpr bool kRowVec = true;
constexpr int kLanes = 8;
constexpr int kRegisters = 16;
using Vec = __m256;
using Mask = __m256i;  // all-ones lanes are on

inline Mask lanes(int64_t from, int64_t to) {
  from = std::clamp<int64_t>(from, 0, kLanes);
  to = std::clamp<int64_t>(to, 0, kLanes);
  const __m256i i = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  // from <= i < to: i > from - 1 and to > i
  return _mm256_and_si256(_mm256_cmpgt_epi32(i, _mm256_set1_epi32(static_cast<int>(from) - 1)),
                          _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(to)), i));
}
inline Vec zero() { return _mm256_setzero_ps(); }
inline Vec set1(float v) { return _mm256_set1_ps(v); }
inline Vec load(const float* p) { return _mm256_loadu_ps(p); }
inline void store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
inline Vec load(Mask m, const float* p) { return _mm256_maskload_ps(p, m); }
inline void store(float* p, Mask m, Vec v) { _mm256_maskstore_ps(p, m, v); }
inline Vec add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
inline Vec fmadd(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline Mask greater(Vec a, Vec b) { return _mm256_castps_si256(_mm256_cmp_ps(a, b, _CMP_GT_OQ)); }
inline Vec select(Mask m, Vec a, Vec b) { return _mm256_blendv_ps(b, a, _mm256_castsi256_ps(m)); }
inline Mask both(Mask a, Mask b) { return _mm256_and_si256(a, b); }
inline void deinterleave(Vec lo, Vec hi, Vec& even, Vec& odd) {
  // per 128-bit half: lo's then hi's even (odd) lanes; then the 64-bit pairs in order
  even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0))),
                                                _MM_SHUFFLE(3, 1, 2, 0)));
  odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1))),
                                               _MM_SHUFFLE(3, 1, 2, 0)));
}
using VecI = __m256i;
inline VecI iota(int32_t from, int32_t step) {
  return _mm256_add_epi32(_mm256_set1_epi32(from),
                          _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(step)));
}
inline VecI add(VecI a, int32_t b) { return _mm256_add_epi32(a, _mm256_set1_epi32(b)); }
inline VecI select(Mask m, VecI a, VecI b) {
  return _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(b), _mm256_castsi256_ps(a), _mm256_castsi256_ps(m)));
}
inline void store(int32_t* p, Mask m, VecI v) { _mm256_maskstore_epi32(p, m, v); }
inline void store(int32_t* p, VecI v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }

#else
constexpr bool kRowVec = false;
constexpr int kLanes = 1;
#endif

#if defined(DL_ROW_VEC)
// The lanes of v added pairwise (halves, then quarters, ...), a fixed order.
inline float lane_sum(Vec v) {
  alignas(64) float l[kLanes];
  store(l, v);
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int j = 0; j < w; ++j) l[j] += l[j + w];
  return l[0];
}
// The first n lanes (0 <= n <= kLanes).
inline Mask head(int64_t n) { return lanes(0, n); }
#endif

}  // namespace dl::rt::rowvec
