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
#include <cstring>

#include "runtime/value_simd.h"

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
// The same bits for n < kLanes, without the tree's additions of empty lanes: adding an
// empty lane's +0 to a value that is not a zero leaves it as it is, and the whole tree,
// which adds at least one empty lane, never ends at -0: so + 0 at the end. (Lane j holds
// 0 + term(j), which a contracted product term, fma(a, b, 0), can leave at -0.)
// (GlobalAveragePool over 1x1 maps sums one value per plane: mobilenet_v2's 20480
// planes took 0.38 ms a step through the whole tree.)
template <class Term>
inline float short_lane_sum(int64_t n, Term term) {
  float acc[kLanes];
  for (int64_t j = 0; j < n; ++j) acc[j] = 0.0f + term(j);
  int64_t live = n;  // lanes [live, kLanes) hold +0
  for (int w = kLanes / 2; w > 0; w /= 2) {
    for (int j = 0; j < w && j + w < live; ++j) acc[j] += acc[j + w];
    live = live < w ? live : w;
  }
  return live > 0 ? acc[0] + 0.0f : 0.0f;
}
// The tree over the kLanes lanes held in native vectors (lane j in acc[j / simd::kLanes],
// at j % simd::kLanes), each lane j < w adding lane j + w for w = 8, 4, 2, 1: the scalar
// loop's pairs and order, in registers (the scalar loop over an array stored the vectors
// and read them back lane by lane: a stalled load per lane; BatchNormalization's 4x4 maps
// sum two 16-value rows per channel and image, bench/README.md run 59).
constexpr int kParts = kLanes / simd::kLanes;  // 1 (AVX-512), 2 (AVX) or 4 vectors
using Lanes = simd::VecF[kParts];
static_assert(sizeof(Lanes) == kLanes * sizeof(float), "the lanes fill their vectors");
inline float fold(const Lanes& acc) {
#if defined(__AVX512F__) || defined(__AVX__)
#if defined(__AVX512F__)
  // (Halves by a vector shuffle: GCC 12's _mm512_extractf64x4_pd warns of an undefined value.)
  typedef float V8 __attribute__((vector_size(32)));
  const V8 lo8 = __builtin_shufflevector(acc[0], acc[0], 0, 1, 2, 3, 4, 5, 6, 7),
           hi8 = __builtin_shufflevector(acc[0], acc[0], 8, 9, 10, 11, 12, 13, 14, 15);
  const __m256 lo = reinterpret_cast<const __m256&>(lo8), hi = reinterpret_cast<const __m256&>(hi8);
#else
  const __m256 lo = reinterpret_cast<const __m256&>(acc[0]), hi = reinterpret_cast<const __m256&>(acc[1]);
#endif
  const __m256 h = _mm256_add_ps(lo, hi);                                                 // w = 8
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));          // w = 4
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));                                                 // w = 2
  q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));                                             // w = 1
  return _mm_cvtss_f32(q);
#else
  float l[kLanes];
  std::memcpy(l, acc, sizeof l);
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int j = 0; j < w; ++j) l[j] += l[j + w];
  return l[0];
#endif
}
// Loads for a lane sum's vector term (vterm(k, load): the term of the values load
// reads at k): whole vectors, or a row's last values (HeadLoad: the first `live`
// lanes from memory, 0 in the others, which no fault or read past the row touches).
struct FullLoad {
  simd::VecF operator()(const float* p) const { return simd::loadv(p); }
};
#if defined(__AVX512F__)
struct HeadLoad {
  __mmask16 live;
  simd::VecF operator()(const float* p) const { return (simd::VecF)_mm512_maskz_loadu_ps(live, p); }
};
#elif defined(__AVX__)
struct HeadLoad {
  __m256i live;
  simd::VecF operator()(const float* p) const { return (simd::VecF)_mm256_maskload_ps(p, live); }
};
// All ones in the first 8, then 0: the mask of the first `live` lanes starts at 8 - live.
alignas(64) inline constexpr int32_t kHeadMask[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
#endif
// Adds the terms of the last n - k < kLanes values to lanes 0, 1, ... (as the vector
// loop would have): each live lane adds its term as the loop adds a vector's, and the
// others keep their bits (a blend, not an add of 0: -0 + 0 is +0). In registers with
// AVX-512 and AVX (the lanes stored and reloaded around scalar adds had each such row
// wait for its stores: BatchNormalization's 7x7 and 14x14 maps, bench/README.md run
// 60); value by value through memory otherwise.
template <class VTerm, class Term>
inline void add_tail(Lanes& acc, int64_t k, int64_t n, VTerm vterm, Term term) {
  if (k >= n) return;
#if defined(__AVX512F__)
  (void)term;
  const __mmask16 live = __mmask16((1u << (n - k)) - 1);
  const simd::VecF sum = acc[0] + vterm(k, HeadLoad{live});
  acc[0] = (simd::VecF)_mm512_mask_blend_ps(live, (__m512)acc[0], (__m512)sum);
#elif defined(__AVX__)
  (void)term;
  for (int q = 0; q < kParts && k < n; ++q, k += simd::kLanes) {
    const int64_t count = n - k < simd::kLanes ? n - k : simd::kLanes;
    const __m256i live = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kHeadMask + simd::kLanes - count));
    const simd::VecF sum = acc[q] + vterm(k, HeadLoad{live});
    acc[q] = (simd::VecF)_mm256_blendv_ps((__m256)acc[q], (__m256)sum, _mm256_castsi256_ps(live));
  }
#else
  (void)vterm;
  float l[kLanes];
  std::memcpy(l, acc, sizeof l);
  for (int j = 0; k < n; ++k, ++j) l[j] += term(k);
  std::memcpy(acc, l, sizeof l);
#endif
}
// The lane sum of term over n values: vterm(k, load) is the vector of term(k), term(k +
// 1), ... from the values load reads (the same expression per lane, so the same bits as
// term's, contracted alike).
template <class VTerm, class Term>
inline float lane_sum(int64_t n, VTerm vterm, Term term) {
  if (n < kLanes) return short_lane_sum(n, term);
  Lanes acc = {};
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int q = 0; q < kParts; ++q) acc[q] += vterm(k + q * simd::kLanes, FullLoad{});
  add_tail(acc, k, n, vterm, term);
  return fold(acc);
}
}  // namespace reduce_detail

inline float sum_of(const float* p, int64_t n) {
  return reduce_detail::lane_sum(
      n, [p](int64_t k, auto load) { return load(p + k); }, [p](int64_t k) { return p[k]; });
}
// sum_of(p, n), the same bits, putting every value into `acc` (simd::LightSums or
// simd::Extremes) from the same loads (for an op that sums a tensor's rows a probe wants
// anyway: BatchNormalization's X and dY).
template <class Acc>
inline float sum_of_light(const float* p, int64_t n, Acc& acc) {
  using simd::VecF;
  constexpr int kL = simd::kLanes, kParts = reduce_detail::kParts;
  static_assert(kParts * kL == reduce_detail::kLanes && kParts <= 4, "sum_of's lanes are at most 4 vectors");
  reduce_detail::Lanes lane_acc = {};  // lane j of sum_of is lane j % kL of lane_acc[j / kL]
  int64_t k = 0;
  // 4 vectors at a time (whole groups of sum_of's 16 lanes: 4 * kL is a multiple of 16).
  for (; k + 4 * kL <= n; k += 4 * kL) {
    const VecF v0 = simd::loadv(p + k), v1 = simd::loadv(p + k + kL), v2 = simd::loadv(p + k + 2 * kL),
               v3 = simd::loadv(p + k + 3 * kL);
    lane_acc[0 % kParts] += v0;
    lane_acc[1 % kParts] += v1;
    lane_acc[2 % kParts] += v2;
    lane_acc[3 % kParts] += v3;
    acc.put4(v0, v1, v2, v3);
  }
  for (; k + reduce_detail::kLanes <= n; k += reduce_detail::kLanes)
    for (int q = 0; q < kParts; ++q) {
      const VecF v = simd::loadv(p + k + kL * q);
      lane_acc[q] += v;
      acc.put(v);
    }
  for (int64_t t = k; t < n; ++t) acc.put_scalar(p[t]);
  reduce_detail::add_tail(
      lane_acc, k, n, [p](int64_t t, auto load) { return load(p + t); }, [p](int64_t t) { return p[t]; });
  return reduce_detail::fold(lane_acc);
}
// row_sums[r] += sum_of(p + r * len, len) for each of `rows` rows (the same bits), and
// the light sums (sum, sum of squares, min, max; runtime/value_sums.h) of all rows * len
// values into `out`, from the same loads: for an op that sums the rows of a tensor a
// probe wants anyway (Conv's bias gradient over dY, the first read of dY). (Its own loop
// had counted each vector's chain at run time, which kept the chains in memory: LeNet-5's
// probe work +5.0% -> +2.7% of its instructions, bench/README.md run 50.)
inline void sum_rows_light(const float* p, int64_t rows, int64_t len, float* row_sums, stats::Sums& out) {
  simd::LightSums acc;
  for (int64_t r = 0; r < rows; ++r) row_sums[r] += sum_of_light(p + r * len, len, acc);
  out.merge(acc.finish());
}

// sum (p[k] - m)^2
inline float sum_sq_dev(const float* p, int64_t n, float m) {
  const simd::VecF mv = simd::splat(m);  // (m exactly, as term has it: -0 too)
  return reduce_detail::lane_sum(
      n,
      [p, mv](int64_t k, auto load) {
        const simd::VecF d = load(p + k) - mv;
        return d * d;
      },
      [p, m](int64_t k) {
        const float d = p[k] - m;
        return d * d;
      });
}
// sum g[k] * (p[k] - m)
inline float dot_dev(const float* g, const float* p, int64_t n, float m) {
  const simd::VecF mv = simd::splat(m);  // (m exactly, as term has it: -0 too)
  return reduce_detail::lane_sum(
      n, [g, p, mv](int64_t k, auto load) { return load(g + k) * (load(p + k) - mv); },
      [g, p, m](int64_t k) { return g[k] * (p[k] - m); });
}

}  // namespace dl::rt
