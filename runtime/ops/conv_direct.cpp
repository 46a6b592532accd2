// See conv_direct.h.
#include "runtime/ops/conv_direct.h"

#include <algorithm>
#include <type_traits>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace dl::rt {

#if defined(__AVX512F__)
namespace {

constexpr int64_t kMaxRow = 32, kMaxKw = 16;

inline __mmask16 lanes(int64_t from, int64_t to) {  // lanes [from, to) of 16, clamped
  from = std::max<int64_t>(from, 0);
  to = std::min<int64_t>(to, 16);
  return to > from ? static_cast<__mmask16>(((1u << (to - from)) - 1u) << from) : __mmask16(0);
}

// Per kernel column kw: the output positions of a row (lanes of two vectors) whose input
// is inside the row (others read padding: masked loads give 0), and the input column
// read by output position 0 (kw - pad).
struct RowTaps {
  __mmask16 in[kMaxKw][2];
  int64_t shift[kMaxKw];
  __mmask16 out[2];  // the row's output positions
  explicit RowTaps(const Window& w) {
    for (int64_t kw = 0; kw < w.k[2]; ++kw) {
      int64_t lo, hi;
      w.valid_range(2, kw, lo, hi);
      for (int v = 0; v < 2; ++v) in[kw][v] = lanes(lo - 16 * v, hi - 16 * v);
      shift[kw] = kw - w.pad_begin[2];
    }
    for (int v = 0; v < 2; ++v) out[v] = lanes(-16 * v, w.out[2] - 16 * v);
  }
};

// The 16 lanes of v added pairwise, in a fixed order.
inline float lane_sum(__m512 v) {
  alignas(64) float l[16];
  _mm512_store_ps(l, v);
  for (int w = 8; w > 0; w /= 2)
    for (int j = 0; j < w; ++j) l[j] += l[j + w];
  return l[0];
}

// Maps [0, NM) of the chunk: one output row at a time, 2 * NM accumulators.
template <int NM>
void forward_maps(const Window& w, const RowTaps& t, const float* x, const float* wt, const float* bias, float* y) {
  const int64_t oh_n = w.out[1], ow_n = w.out[2], kh_n = w.k[1], kw_n = w.k[2], ks = kh_n * kw_n;
  for (int64_t oh = 0; oh < oh_n; ++oh) {
    __m512 acc[NM][2];
    for (int j = 0; j < NM; ++j) acc[j][0] = acc[j][1] = _mm512_set1_ps(bias ? bias[j] : 0.0f);
    for (int64_t kh = 0; kh < kh_n; ++kh) {
      const int64_t ih = oh + kh - w.pad_begin[1];
      if (ih < 0 || ih >= w.in[1]) continue;
      const float* xr = x + ih * w.in[2];
      for (int64_t kw = 0; kw < kw_n; ++kw) {
        const __m512 x0 = _mm512_maskz_loadu_ps(t.in[kw][0], xr + t.shift[kw]);
        const __m512 x1 = _mm512_maskz_loadu_ps(t.in[kw][1], xr + t.shift[kw] + 16);
        for (int j = 0; j < NM; ++j) {
          const __m512 wv = _mm512_set1_ps(wt[j * ks + kh * kw_n + kw]);
          acc[j][0] = _mm512_fmadd_ps(x0, wv, acc[j][0]);
          acc[j][1] = _mm512_fmadd_ps(x1, wv, acc[j][1]);
        }
      }
    }
    for (int j = 0; j < NM; ++j) {
      float* yr = y + (j * oh_n + oh) * ow_n;
      _mm512_mask_storeu_ps(yr, t.out[0], acc[j][0]);
      _mm512_mask_storeu_ps(yr + 16, t.out[1], acc[j][1]);
    }
  }
}

// dw[map j][kh][kw0 + i] += the sum over rows and positions of dy (map j) times x at tap
// (kh, kw0 + i), for NM maps and NK kernel columns: each input load serves NM maps, each
// dY load NK taps (NM * NK accumulators).
template <int NM, int NK>
void dw_taps(const Window& w, const RowTaps& t, const float* x, const float* dy, int64_t kh, int64_t kw0, float* dw) {
  __m512 acc[NM][NK];
  for (int j = 0; j < NM; ++j)
    for (int i = 0; i < NK; ++i) acc[j][i] = _mm512_setzero_ps();
  const int64_t ow_n = w.out[2], plane = w.out_size(), ks = w.k_size();
  for (int64_t oh = 0; oh < w.out[1]; ++oh) {
    const int64_t ih = oh + kh - w.pad_begin[1];
    if (ih < 0 || ih >= w.in[1]) continue;
    const float* xr = x + ih * w.in[2];
    __m512 d[NM][2];
    for (int j = 0; j < NM; ++j) {
      d[j][0] = _mm512_maskz_loadu_ps(t.out[0], dy + j * plane + oh * ow_n);
      d[j][1] = _mm512_maskz_loadu_ps(t.out[1], dy + j * plane + oh * ow_n + 16);
    }
    for (int i = 0; i < NK; ++i) {
      const int64_t kw = kw0 + i;
      const __m512 x0 = _mm512_maskz_loadu_ps(t.in[kw][0], xr + t.shift[kw]);
      const __m512 x1 = _mm512_maskz_loadu_ps(t.in[kw][1], xr + t.shift[kw] + 16);
      for (int j = 0; j < NM; ++j) acc[j][i] = _mm512_fmadd_ps(d[j][1], x1, _mm512_fmadd_ps(d[j][0], x0, acc[j][i]));
    }
  }
  for (int j = 0; j < NM; ++j)
    for (int i = 0; i < NK; ++i) dw[j * ks + kh * w.k[2] + kw0 + i] += lane_sum(acc[j][i]);
}

template <int N, class F>
void dispatch(int64_t n, F f) {  // f(std::integral_constant<int, n>) for n in [1, N]
  if constexpr (N > 1)
    if (n < N) return dispatch<N - 1>(n, f);
  f(std::integral_constant<int, N>());
}

}  // namespace

bool single_channel_direct(const Window& w) {
  return w.in[0] == 1 && w.k[0] == 1 && w.stride[1] == 1 && w.stride[2] == 1 && w.dil[1] == 1 && w.dil[2] == 1 &&
         w.out[2] <= kMaxRow && w.k[2] <= kMaxKw;
}

void single_channel_forward(const Window& w, int64_t maps, const float* x, const float* wt, const float* bias,
                            float* y) {
  const RowTaps t(w);
  constexpr int64_t kChunk = 8;  // 16 accumulators
  const int64_t ks = w.k_size(), plane = w.out_size();
  for (int64_t m0 = 0; m0 < maps; m0 += kChunk)
    dispatch<kChunk>(std::min(kChunk, maps - m0), [&](auto nm) {
      forward_maps<decltype(nm)::value>(w, t, x, wt + m0 * ks, bias ? bias + m0 : nullptr, y + m0 * plane);
    });
}

void single_channel_dw(const Window& w, int64_t maps, const float* x, const float* dy, float* dw) {
  const RowTaps t(w);
  constexpr int64_t kMaps = 3, kCols = 5;  // up to 15 accumulators
  const int64_t ks = w.k_size(), plane = w.out_size();
  for (int64_t m0 = 0; m0 < maps; m0 += kMaps)
    for (int64_t kh = 0; kh < w.k[1]; ++kh)
      for (int64_t kw0 = 0; kw0 < w.k[2]; kw0 += kCols)
        dispatch<kMaps>(std::min(kMaps, maps - m0), [&](auto nm) {
          dispatch<kCols>(std::min(kCols, w.k[2] - kw0), [&](auto nk) {
            dw_taps<decltype(nm)::value, decltype(nk)::value>(w, t, x, dy + m0 * plane, kh, kw0, dw + m0 * ks);
          });
        });
}

#else  // without AVX-512 the GEMM path runs these convolutions (the loops below are correct, not taken)

bool single_channel_direct(const Window&) { return false; }

void single_channel_forward(const Window& w, int64_t maps, const float* x, const float* wt, const float* bias,
                            float* y) {
  for (int64_t m = 0; m < maps; ++m)
    for (int64_t oh = 0; oh < w.out[1]; ++oh)
      for (int64_t ow = 0; ow < w.out[2]; ++ow) {
        float s = bias ? bias[m] : 0.0f;
        for (int64_t kh = 0; kh < w.k[1]; ++kh)
          for (int64_t kw = 0; kw < w.k[2]; ++kw) {
            const int64_t ih = oh + kh - w.pad_begin[1], iw = ow + kw - w.pad_begin[2];
            if (ih >= 0 && ih < w.in[1] && iw >= 0 && iw < w.in[2])
              s += wt[(m * w.k[1] + kh) * w.k[2] + kw] * x[ih * w.in[2] + iw];
          }
        y[(m * w.out[1] + oh) * w.out[2] + ow] = s;
      }
}

void single_channel_dw(const Window& w, int64_t maps, const float* x, const float* dy, float* dw) {
  for (int64_t m = 0; m < maps; ++m)
    for (int64_t kh = 0; kh < w.k[1]; ++kh)
      for (int64_t kw = 0; kw < w.k[2]; ++kw) {
        float s = 0.0f;
        for (int64_t oh = 0; oh < w.out[1]; ++oh)
          for (int64_t ow = 0; ow < w.out[2]; ++ow) {
            const int64_t ih = oh + kh - w.pad_begin[1], iw = ow + kw - w.pad_begin[2];
            if (ih >= 0 && ih < w.in[1] && iw >= 0 && iw < w.in[2])
              s += dy[(m * w.out[1] + oh) * w.out[2] + ow] * x[ih * w.in[2] + iw];
          }
        dw[(m * w.k[1] + kh) * w.k[2] + kw] += s;
      }
}

#endif

}  // namespace dl::rt
