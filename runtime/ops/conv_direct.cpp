// See conv_direct.h.
#include "runtime/ops/conv_direct.h"

#include <algorithm>
#include <type_traits>

#include "runtime/ops/row_vec.h"

namespace dl::rt {

#if defined(DL_ROW_VEC)
namespace {

using namespace rowvec;
constexpr int64_t kMaxRow = 32, kMaxKw = 16;
constexpr int kMaxVecs = kMaxRow / kLanes;  // vectors per output row: 2 (AVX-512) or 4 (AVX2)
// Accumulators a chunk of maps keeps in registers (the rest hold the loads): the forward
// pass's maps x vectors, and dW's maps x kernel columns with the maps' dY rows.
constexpr int kForwardAcc = kRegisters == 32 ? 16 : 12;
constexpr int kForwardMaps = 8;
constexpr int dw_maps() { return kRegisters == 32 ? 3 : 2; }
constexpr int dw_cols(int nv) { return kRegisters == 32 ? 5 : std::min(5, (15 - 2 * nv) / 2); }

// Per kernel column kw: the output positions of a row (lanes of up to kMaxVecs vectors)
// whose input is inside the row (others read padding: masked loads give 0), and the
// input column read by output position 0 (kw - pad).
struct RowTaps {
  Mask in[kMaxKw][kMaxVecs];
  int64_t shift[kMaxKw];
  Mask out[kMaxVecs];  // the row's output positions
  int full;            // vectors wholly inside the row (plain stores)
  int vecs;            // vectors that cover the row
  explicit RowTaps(const Window& w) {
    for (int64_t kw = 0; kw < w.k[2]; ++kw) {
      int64_t lo, hi;
      w.valid_range(2, kw, lo, hi);
      for (int v = 0; v < kMaxVecs; ++v) in[kw][v] = lanes(lo - kLanes * v, hi - kLanes * v);
      shift[kw] = kw - w.pad_begin[2];
    }
    for (int v = 0; v < kMaxVecs; ++v) out[v] = lanes(-kLanes * v, w.out[2] - kLanes * v);
    full = static_cast<int>(w.out[2] / kLanes);
    vecs = static_cast<int>((w.out[2] + kLanes - 1) / kLanes);
  }
};

// Maps [0, NM) of the chunk, rows of NV vectors: one output row at a time, NM * NV
// accumulators. Each output sums bias + its taps in kernel order (rows, then columns).
template <int NM, int NV>
void forward_maps(const Window& w, const RowTaps& t, const float* x, const float* wt, const float* bias, float* y) {
  const int64_t oh_n = w.out[1], ow_n = w.out[2], kh_n = w.k[1], kw_n = w.k[2], ks = kh_n * kw_n;
  for (int64_t oh = 0; oh < oh_n; ++oh) {
    Vec acc[NM][NV];
    for (int j = 0; j < NM; ++j)
      for (int v = 0; v < NV; ++v) acc[j][v] = set1(bias ? bias[j] : 0.0f);
    for (int64_t kh = 0; kh < kh_n; ++kh) {
      const int64_t ih = oh + kh - w.pad_begin[1];
      if (ih < 0 || ih >= w.in[1]) continue;
      const float* xr = x + ih * w.in[2];
      for (int64_t kw = 0; kw < kw_n; ++kw) {
        Vec xv[NV];
        for (int v = 0; v < NV; ++v) xv[v] = load(t.in[kw][v], xr + t.shift[kw] + kLanes * v);
        for (int j = 0; j < NM; ++j) {
          const Vec wv = set1(wt[j * ks + kh * kw_n + kw]);
          for (int v = 0; v < NV; ++v) acc[j][v] = fmadd(xv[v], wv, acc[j][v]);
        }
      }
    }
    for (int j = 0; j < NM; ++j) {
      float* yr = y + (j * oh_n + oh) * ow_n;
      for (int v = 0; v < NV; ++v) {
        if (v < t.full) store(yr + kLanes * v, acc[j][v]);
        else store(yr + kLanes * v, t.out[v], acc[j][v]);
      }
    }
  }
}

// dw[map j][kh][kw0 + i] += the sum over rows and positions of dy (map j) times x at tap
// (kh, kw0 + i), for NM maps and NK kernel columns, rows of NV vectors: each input load
// serves NM maps, each dY load NK taps (NM * NK accumulators).
template <int NM, int NK, int NV>
void dw_taps(const Window& w, const RowTaps& t, const float* x, const float* dy, int64_t kh, int64_t kw0, float* dw) {
  // Rows in blocks of kRows (56 products per lane and block): the blocks' sums are added
  // at their end, so no lane's running sum grows over more than ~56 terms whatever the width.
  constexpr int64_t kRows = std::max(1, 56 / NV);
  Vec total[NM][NK];
  for (int j = 0; j < NM; ++j)
    for (int i = 0; i < NK; ++i) total[j][i] = zero();
  const int64_t ow_n = w.out[2], plane = w.out_size(), ks = w.k_size();
  for (int64_t oh0 = 0; oh0 < w.out[1]; oh0 += kRows) {
    Vec acc[NM][NK];
    for (int j = 0; j < NM; ++j)
      for (int i = 0; i < NK; ++i) acc[j][i] = zero();
    for (int64_t oh = oh0; oh < std::min(oh0 + kRows, w.out[1]); ++oh) {
      const int64_t ih = oh + kh - w.pad_begin[1];
      if (ih < 0 || ih >= w.in[1]) continue;
      const float* xr = x + ih * w.in[2];
      Vec d[NM][NV];
      for (int j = 0; j < NM; ++j)
        for (int v = 0; v < NV; ++v) d[j][v] = load(t.out[v], dy + j * plane + oh * ow_n + kLanes * v);
      for (int i = 0; i < NK; ++i) {
        const int64_t kw = kw0 + i;
        for (int v = 0; v < NV; ++v) {
          const Vec xv = load(t.in[kw][v], xr + t.shift[kw] + kLanes * v);
          for (int j = 0; j < NM; ++j) acc[j][i] = fmadd(d[j][v], xv, acc[j][i]);
        }
      }
    }
    for (int j = 0; j < NM; ++j)
      for (int i = 0; i < NK; ++i) total[j][i] = add(total[j][i], acc[j][i]);
  }
  for (int j = 0; j < NM; ++j)
    for (int i = 0; i < NK; ++i) dw[j * ks + kh * w.k[2] + kw0 + i] += lane_sum(total[j][i]);
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
  const int64_t ks = w.k_size(), plane = w.out_size();
  dispatch<kMaxVecs>(t.vecs, [&](auto nv) {
    constexpr int NV = decltype(nv)::value;
    constexpr int64_t kChunk = std::min(kForwardMaps, kForwardAcc / NV);
    for (int64_t m0 = 0; m0 < maps; m0 += kChunk)
      dispatch<kChunk>(std::min(kChunk, maps - m0), [&](auto nm) {
        forward_maps<decltype(nm)::value, NV>(w, t, x, wt + m0 * ks, bias ? bias + m0 : nullptr, y + m0 * plane);
      });
  });
}

void single_channel_dw(const Window& w, int64_t maps, const float* x, const float* dy, float* dw) {
  const RowTaps t(w);
  const int64_t ks = w.k_size(), plane = w.out_size();
  dispatch<kMaxVecs>(t.vecs, [&](auto nv) {
    constexpr int NV = decltype(nv)::value;
    constexpr int64_t kMaps = dw_maps(), kCols = dw_cols(NV);
    for (int64_t m0 = 0; m0 < maps; m0 += kMaps)
      for (int64_t kh = 0; kh < w.k[1]; ++kh)
        for (int64_t kw0 = 0; kw0 < w.k[2]; kw0 += kCols)
          dispatch<kMaps>(std::min(kMaps, maps - m0), [&](auto nm) {
            dispatch<kCols>(std::min(kCols, w.k[2] - kw0), [&](auto nk) {
              dw_taps<decltype(nm)::value, decltype(nk)::value, NV>(w, t, x, dy + m0 * plane, kh, kw0, dw + m0 * ks);
            });
          });
  });
}

#else  // without AVX-512 or AVX2 + FMA the GEMM path runs these convolutions (the loops below are correct, not taken)

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
