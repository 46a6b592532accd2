// See im2col.h.
#include "runtime/ops/im2col.h"

#include <algorithm>

#include "runtime/ops/row_vec.h"
#include "runtime/parallel.h"

namespace dl::rt {
namespace {

// Walks the column matrix of output rows [r0, r1): one matrix row per (channel, kernel
// offset; ld floats apart), one column per output position of those rows. Calls f(col_row, input_row,
// start, lo, hi, step) for each output row: col_row[ow] <-> input_row[ow * step + start]
// for ow in [lo, hi); positions that read padding go to pad(col_row, from, to) (entries
// [from, to)). X is const float (im2col) or float (col2im).
//
// Order: kernel offsets outermost, then channels, then output rows. For col2im's
// read-modify-writes of input rows (interleaved), even rows first, then odd ones:
// consecutive writes then land at least two input rows apart, and a row is revisited (at
// the next kernel offset) only after a whole channel sweep: a masked vector store
// followed by a load of an overlapping 64-byte window (adjacent rows) cannot be forwarded
// and stalls. Otherwise rows in order, and within a row pad(0, lo), f, pad(hi, out W): a
// matrix row's entries are then written at increasing addresses, and f gets `room`, the
// floats from its first entry to the end of the rows' block (a store past the row's end
// is overwritten by the writes that follow).
template <class X, class F, class Pad>
void walk_columns(const Window& w, const RowOrigins& o, int64_t channels, int64_t r0, int64_t r1, float* col,
                  int64_t ld, X* x, bool interleaved, F f, Pad pad) {
  const int64_t ow_n = w.out[2], ksize = w.k_size();
  int64_t tap = 0;
  for (int64_t kd = 0; kd < w.k[0]; ++kd)
    for (int64_t kh = 0; kh < w.k[1]; ++kh)
      for (int64_t kw = 0; kw < w.k[2]; ++kw, ++tap) {
        int64_t wlo, whi;
        w.valid_range(2, kw * w.dil[2], wlo, whi);
        const int64_t start = kw * w.dil[2] - w.pad_begin[2];
        const int64_t dd = kd * w.dil[0], dh = kh * w.dil[1];
        for (int64_t c = 0; c < channels; ++c) {
          X* xc = x + c * w.in_size();
          float* rows = col + (c * ksize + tap) * ld;
          const int64_t step = interleaved ? 2 : 1;
          for (int64_t parity = 0; parity < step; ++parity)
            for (int64_t rr = r0 + parity; rr < r1; rr += step) {
              float* r = rows + (rr - r0) * ow_n;
              const int64_t id = o.id[size_t(rr)] + dd, ih = o.ih[size_t(rr)] + dh;
              if (id < 0 || id >= w.in[0] || ih < 0 || ih >= w.in[1]) {
                pad(r, 0, ow_n);
                continue;
              }
              pad(r, 0, wlo);
              f(r, xc + (id * w.in[1] + ih) * w.in[2], start, wlo, whi, w.stride[2], (r1 - rr) * ow_n - wlo);
              pad(r, whi, ow_n);
            }
        }
      }
}

// Rows are short (the output width, 10 to 28 values in LeNet), so per-row overhead is
// what im2col costs: rows are copied in vectors of the target's width (runtime/ops/row_vec.h)
// with masked loads and stores for the tail (no memmove/memset call, no scalar
// epilogue), or plain loops.
#if defined(DL_ROW_VEC)
using namespace rowvec;
inline void copy_row(float* dst, const float* src, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store(dst + i, load(src + i));
  if (i < n) {
    const Mask m = head(n - i);
    store(dst + i, m, load(m, src + i));
  }
}
// copy_row, allowed to store up to `room` floats (>= n) from dst: the tail is one full
// store when it fits (a masked store costs more), the lanes past n are zeros.
inline void copy_row_room(float* dst, const float* src, int64_t n, int64_t room) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store(dst + i, load(src + i));
  if (i < n) {
    const Mask m = head(n - i);
    const Vec v = load(m, src + i);
    if (i + kLanes <= room) store(dst + i, v);
    else store(dst + i, m, v);
  }
}
inline void zero_row(float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store(dst + i, zero());
  if (i < n) store(dst + i, head(n - i), zero());
}
inline void add_row(float* dst, const float* src, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store(dst + i, add(load(dst + i), load(src + i)));
  if (i < n) {
    const Mask m = head(n - i);
    store(dst + i, m, add(load(m, dst + i), load(m, src + i)));
  }
}
#else
#if defined(__GNUC__) && !defined(__clang__)
#define DL_NO_LIBCALLS __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define DL_NO_LIBCALLS
#endif
DL_NO_LIBCALLS inline void copy_row(float* __restrict dst, const float* __restrict src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
}
inline void copy_row_room(float* dst, const float* src, int64_t n, int64_t) { copy_row(dst, src, n); }
DL_NO_LIBCALLS inline void zero_row(float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = 0.0f;
}
inline void add_row(float* __restrict dst, const float* __restrict src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
}
#endif

// Stride 1 along H and W and an output as wide as the input (a "same" convolution or a
// pointwise one), 2-D or 1-D: a tap's column entries for output rows [r0, r1) read one
// contiguous span of the input plane, shifted by the tap's offset. span(col, x, n) moves
// that span in one piece; edge(col, n) handles the entries of the span that read the
// neighbouring row instead of padding (each row's first wlo and last out W - whi), and
// the rows that read padding only. With edges_first, edge() runs before span() (col2im
// zeroes those entries so that the span adds nothing there), else after (im2col
// overwrites them with zeros). Taps outermost, as in walk_columns.
bool contiguous_rows(const Window& w) {
  return w.in[0] == 1 && w.out[0] == 1 && w.k[0] == 1 && w.stride[1] == 1 && w.stride[2] == 1 && w.out[2] == w.in[2];
}

template <class X, class Span, class Edge>
void walk_planes(const Window& w, int64_t channels, int64_t r0, int64_t r1, float* col, int64_t ld, X* x,
                 bool edges_first, Span span, Edge edge) {
  const int64_t W = w.out[2], ksize = w.k_size(), p0 = r0 * W, p1 = r1 * W;
  int64_t tap = 0;
  for (int64_t kh = 0; kh < w.k[1]; ++kh)
    for (int64_t kw = 0; kw < w.k[2]; ++kw, ++tap) {
      int64_t wlo, whi, hlo, hhi;
      w.valid_range(2, kw * w.dil[2], wlo, whi);
      w.valid_range(1, kh * w.dil[1], hlo, hhi);
      hlo = std::max(hlo, r0);
      hhi = std::min(hhi, r1);
      // x index of output position q (= oh * W + ow): q + shift.
      const int64_t shift = (kh * w.dil[1] - w.pad_begin[1]) * W + kw * w.dil[2] - w.pad_begin[2];
      const bool none = hlo >= hhi || wlo >= whi;
      const int64_t q0 = none ? p1 : hlo * W + wlo, q1 = none ? p1 : (hhi - 1) * W + whi;
      for (int64_t c = 0; c < channels; ++c) {
        float* rows = col + (c * ksize + tap) * ld - p0;  // rows[q] for q in [p0, p1)
        auto edges = [&] {
          edge(rows + p0, q0 - p0);
          for (int64_t oh = hlo; !none && oh + 1 < hhi; ++oh) edge(rows + oh * W + whi, W - whi + wlo);
          edge(rows + q1, p1 - q1);
        };
        if (edges_first) edges();
        if (q1 > q0) span(rows + q0, x + c * w.in_size() + q0 + shift, q1 - q0);
        if (!edges_first) edges();
      }
    }
}

// Stride 1 and no padding, 2-D or 1-D (LeNet-5's second Conv): every column entry reads
// the input, a tap's output row r is input row r + kh * dilation from column kw * dilation.
bool unpadded_rows(const Window& w) {
  for (int a = 1; a < 3; ++a)
    if (w.stride[a] != 1 || w.pad_begin[a] != 0 || w.pad_end[a] != 0) return false;
  return w.in[0] == 1 && w.k[0] == 1;
}

void im2col_unpadded(const Window& w, int64_t channels, int64_t r0, int64_t r1, const float* x, float* col,
                     int64_t ld) {
  const int64_t ow_n = w.out[2], iw_n = w.in[2], ksize = w.k_size(), n = (r1 - r0) * ow_n;
  int64_t tap = 0;
  for (int64_t kh = 0; kh < w.k[1]; ++kh)
    for (int64_t kw = 0; kw < w.k[2]; ++kw, ++tap)
      for (int64_t c = 0; c < channels; ++c) {
        float* r = col + (c * ksize + tap) * ld;
        const float* src = x + c * w.in_size() + (r0 + kh * w.dil[1]) * iw_n + kw * w.dil[2];
        for (int64_t q = 0; q < n; q += ow_n, src += iw_n) copy_row_room(r + q, src, ow_n, n - q);
      }
}

// col2im_add for unpadded_rows windows: even output rows first, then odd ones (see
// walk_columns: no masked store followed by a load of the adjacent input row).
void col2im_unpadded(const Window& w, int64_t channels, int64_t r0, int64_t r1, const float* dcol, float* dx,
                     int64_t ld) {
  const int64_t ow_n = w.out[2], iw_n = w.in[2], ksize = w.k_size(), rows = r1 - r0;
  int64_t tap = 0;
  for (int64_t kh = 0; kh < w.k[1]; ++kh)
    for (int64_t kw = 0; kw < w.k[2]; ++kw, ++tap)
      for (int64_t c = 0; c < channels; ++c) {
        const float* r = dcol + (c * ksize + tap) * ld;
        float* dst = dx + c * w.in_size() + (r0 + kh * w.dil[1]) * iw_n + kw * w.dil[2];
        for (int64_t parity = 0; parity < 2; ++parity)
          for (int64_t q = parity; q < rows; q += 2) add_row(dst + q * iw_n, r + q * ow_n, ow_n);
      }
}

}  // namespace

void RowOrigins::plan(const Window& w) {
  const int64_t rows = w.out[0] * w.out[1];
  id.resize(static_cast<size_t>(rows));
  ih.resize(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    id[size_t(r)] = (r / w.out[1]) * w.stride[0] - w.pad_begin[0];
    ih[size_t(r)] = (r % w.out[1]) * w.stride[1] - w.pad_begin[1];
  }
}

void im2col(const Window& w, const RowOrigins& o, int64_t channels, int64_t r0, int64_t r1, const float* x, float* col,
            int64_t ld) {
  if (unpadded_rows(w)) {
    im2col_unpadded(w, channels, r0, r1, x, col, ld);
    return;
  }
  if (contiguous_rows(w)) {
    walk_planes(
        w, channels, r0, r1, col, ld, x, false, [](float* c, const float* xs, int64_t n) { copy_row(c, xs, n); },
        [](float* c, int64_t n) {
          if (n > 0) zero_row(c, n);
        });
    return;
  }
  walk_columns(
      w, o, channels, r0, r1, col, ld, x, false,
      [](float* r, const float* xr, int64_t start, int64_t lo, int64_t hi, int64_t s, int64_t room) {
        if (s == 1) {
          copy_row_room(r + lo, xr + start + lo, hi - lo, room);
        } else {
          for (int64_t o = lo; o < hi; ++o) r[o] = xr[o * s + start];
        }
      },
      [](float* r, int64_t from, int64_t to) {
        if (to > from) zero_row(r + from, to - from);
      });
}

void col2im_add(const Window& w, const RowOrigins& o, int64_t channels, int64_t r0, int64_t r1, float* dcol, float* dx,
                int64_t ld) {
  if (unpadded_rows(w)) {
    col2im_unpadded(w, channels, r0, r1, dcol, dx, ld);
    return;
  }
  if (contiguous_rows(w)) {
    walk_planes(
        w, channels, r0, r1, dcol, ld, dx, true, [](float* c, float* xs, int64_t n) { add_row(xs, c, n); },
        [](float* c, int64_t n) {
          if (n > 0) zero_row(c, n);
        });
    return;
  }
  walk_columns(
      w, o, channels, r0, r1, dcol, ld, dx, true,
      [](float* r, float* dr, int64_t start, int64_t lo, int64_t hi, int64_t s, int64_t) {
        if (s == 1) {
          add_row(dr + start + lo, r + lo, hi - lo);
        } else {
          for (int64_t o = lo; o < hi; ++o) dr[o * s + start] += r[o];
        }
      },
      [](float*, int64_t, int64_t) {});
}

}  // namespace dl::rt

namespace dl::rt {

void LiveTaps::plan(const Window& w) {
  win = w;
  full = w.k_size();
  for (int a = 0; a < 3; ++a) full_k[a] = w.k[a];
  for (int a = 0; a < 3; ++a) {
    int64_t first = -1, last = -1;
    for (int64_t t = 0; t < w.k[a]; ++t) {
      int64_t olo, ohi;
      w.valid_range(a, t * w.dil[a], olo, ohi);
      if (olo < ohi) {
        if (first < 0) first = t;
        last = t;
      }
    }
    if (first < 0) {  // no tap reads the input at all (outputs are the bias): keep the kernel
      win = w;
      reduced = false;
      origins.plan(win);
      for (int64_t& l : lo) l = 0;
      taps.resize(size_t(full));
      for (int64_t t = 0; t < full; ++t) taps[size_t(t)] = t;
      return;
    }
    lo[a] = first;
    win.k[a] = last - first + 1;
    win.pad_begin[a] = w.pad_begin[a] - first * w.dil[a];
  }
  reduced = win.k_size() < full;
  origins.plan(win);
  taps.clear();  // the box's taps as offsets into the full kernel, in the box's order
  for (int64_t d = 0; d < win.k[0]; ++d)
    for (int64_t h = 0; h < win.k[1]; ++h)
      for (int64_t x = 0; x < win.k[2]; ++x) taps.push_back(((lo[0] + d) * full_k[1] + lo[1] + h) * full_k[2] + lo[2] + x);
}

namespace {

// f(first row, end row) over n rows of `width` floats of W (or dW), in parts on the
// compute threads when W is large: these passes only move memory (resnet18's layer4 at
// 32x32 inputs reads all 9.4 MB of a 3x3 kernel for its centre taps), and a second core
// moves more of it. Rows are disjoint, so the result does not depend on the split.
template <class F>
void over_rows(int64_t n, int64_t width, F f) {
  constexpr int64_t kParts = 8, kParallelFloats = int64_t{1} << 18;
  const int64_t parts = std::min(kParts, n);
  if (parts <= 1) {
    f(int64_t{0}, n);
    return;
  }
  struct Ctx {
    int64_t n, parts;
    F* f;
  } ctx{n, parts, &f};
  parallel_blocks(parts, loop_threads(n * width, kParallelFloats), [](const void* p, int64_t part) {
    const Ctx& c = *static_cast<const Ctx*>(p);
    int64_t r0, r1;
    even_range(c.n, c.parts, part, r0, r1);
    (*c.f)(r0, r1);
  }, &ctx);
}

}  // namespace

void LiveTaps::gather(const float* wt, int64_t rows, int64_t channels, float* out) const {
  const int64_t ks = int64_t(taps.size());
  over_rows(rows * channels, full, [&](int64_t r0, int64_t r1) {
    if (ks == 1) {  // the common case (a 1x1 map): one strided column
      const float* src = wt + taps[0];
      for (int64_t r = r0; r < r1; ++r) out[r] = src[r * full];
      return;
    }
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t t = 0; t < ks; ++t) out[r * ks + t] = wt[r * full + taps[size_t(t)]];
  });
}

void LiveTaps::scatter_add(const float* d, int64_t rows, int64_t channels, float* dw) const {
  const int64_t ks = int64_t(taps.size());
  over_rows(rows * channels, full, [&](int64_t r0, int64_t r1) {
    if (ks == 1) {
      float* dst = dw + taps[0];
      for (int64_t r = r0; r < r1; ++r) dst[r * full] += d[r];
      return;
    }
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t t = 0; t < ks; ++t) dw[r * full + taps[size_t(t)]] += d[r * ks + t];
  });
}

void LiveTaps::scatter_set(const float* d, int64_t rows, int64_t channels, float* dw) const {
  const int64_t ks = int64_t(taps.size());
  over_rows(rows * channels, full, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* row = dw + r * full;
      std::fill_n(row, full, 0.0f);
      for (int64_t t = 0; t < ks; ++t) row[taps[size_t(t)]] = 0.0f + d[r * ks + t];  // the bits of adding onto zeros
    }
  });
}

}  // namespace dl::rt
