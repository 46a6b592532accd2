#include "runtime/ops/depthwise.h"

#include <algorithm>

#include "runtime/simd_transpose.h"

namespace dl::rt {
namespace {

// Calls f(output row pointer offset, input row offset, kernel row offset) for each
// output row (od, oh) and each kernel row (kd, kh) that reads an in-range input row.
template <class F>
void for_each_row_pair(const Window& w, const PoolTaps& t, F f) {
  for (int64_t od = 0; od < w.out[0]; ++od) {
    const PoolTaps::Axis& a0 = t.axis[0][static_cast<size_t>(od)];
    for (int64_t oh = 0; oh < w.out[1]; ++oh) {
      const PoolTaps::Axis& a1 = t.axis[1][static_cast<size_t>(oh)];
      const int64_t yrow = (od * w.out[1] + oh) * w.out[2];
      for (int64_t kd = a0.lo; kd < a0.hi; ++kd) {
        const int64_t id = a0.first + kd * w.dil[0];
        for (int64_t kh = a1.lo; kh < a1.hi; ++kh) {
          const int64_t ih = a1.first + kh * w.dil[1];
          f(yrow, (id * w.in[1] + ih) * w.in[2], (kd * w.k[1] + kh) * w.k[2]);
        }
      }
    }
  }
}

// sum over ow in [lo, hi) of a[ow] * b[ow * stride + off], in 8 fixed lanes (vectorised,
// and the same order every time).
float dot_strided(const float* a, const float* b, int64_t lo, int64_t hi, int64_t stride, int64_t off) {
  constexpr int kLanes = 8;
  float lane[kLanes] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t ow = lo;
  if (stride == 1) {
    for (; ow + kLanes <= hi; ow += kLanes)
      for (int j = 0; j < kLanes; ++j) lane[j] += a[ow + j] * b[ow + j + off];
  }
  for (; ow < hi; ++ow) lane[0] += a[ow] * b[ow * stride + off];
  float s = 0;
  for (int j = 0; j < kLanes; ++j) s += lane[j];
  return s;
}

}  // namespace

void depthwise_forward(const Window& w, const PoolTaps& t, const float* x, const float* wk, float* y) {
  const int64_t s = w.stride[2];
  for_each_row_pair(w, t, [&](int64_t yrow, int64_t xrow, int64_t krow) {
    float* yr = y + yrow;
    const float* xr = x + xrow;
    for (int64_t kw = 0; kw < w.k[2]; ++kw) {
      const PoolTaps::RowTap& r = t.row[static_cast<size_t>(kw)];
      const float wv = wk[krow + kw];
      if (s == 1) {
        const float* xs = xr + r.offset;
        for (int64_t ow = r.lo; ow < r.hi; ++ow) yr[ow] += wv * xs[ow];
      } else {
        for (int64_t ow = r.lo; ow < r.hi; ++ow) yr[ow] += wv * xr[ow * s + r.offset];
      }
    }
  });
}

void depthwise_backward(const Window& w, const PoolTaps& t, const float* x, const float* wk, const float* dy,
                        float* dx, float* dw) {
  const int64_t s = w.stride[2];
  for_each_row_pair(w, t, [&](int64_t yrow, int64_t xrow, int64_t krow) {
    const float* dyr = dy + yrow;
    for (int64_t kw = 0; kw < w.k[2]; ++kw) {
      const PoolTaps::RowTap& r = t.row[static_cast<size_t>(kw)];
      if (r.lo >= r.hi) continue;
      if (dw) dw[krow + kw] += dot_strided(dyr, x + xrow, r.lo, r.hi, s, r.offset);
      if (!dx) continue;
      const float wv = wk[krow + kw];
      float* dxr = dx + xrow;
      if (s == 1) {
        float* ds = dxr + r.offset;
        for (int64_t ow = r.lo; ow < r.hi; ++ow) ds[ow] += wv * dyr[ow];
      } else {
        for (int64_t ow = r.lo; ow < r.hi; ++ow) dxr[ow * s + r.offset] += wv * dyr[ow];
      }
    }
  });
}

// ---- Channel-blocked kernels (depthwise.h) ----

namespace {

using simd::loadv;
using simd::storev;
using simd::VecF;
constexpr int64_t kL = simd::kLanes;

// The blocked kernels' scratch, per image part of a Conv (up to 8: 4 MiB together, as
// Conv's column buffers): 3x3 maps up to about 52x52 (AVX-512; 73x73 with AVX2's 8
// lanes). On the Zen 4 machine
// (dl_micro_bench BM_Depthwise, 16 x 96 channels, 3x3 pad 1, forward / backward GFLOP/s):
// per-plane 2.6 / 2.3 at 4x4, 3.8 / 3.0 at 16x16, 7.0 / 7.8 at 32x32, 10.0 / 11.6 at 56x56;
// blocked 17.4 / 19.1, 14.3 / 18.8, 11.6 / 12.1, 13.8 / 13.9. Larger maps keep the
// per-plane kernels, whose long rows vectorise and which need no scratch.
constexpr int64_t kBlockedScratch = int64_t{1} << 17;

// b[p * kL + j] = planes[j * n + p] for the block's nc channels, 0 in the lanes beyond.
void gather(const float* planes, int64_t n, int64_t nc, float* b) {
  if (n == 1) {  // 1x1 maps: the block is one contiguous run
    for (int64_t j = 0; j < kL; ++j) b[j] = j < nc ? planes[j] : 0.0f;
    return;
  }
  int64_t p0 = 0;
  for (; p0 + kL <= n; p0 += kL) {
    VecF r[kL];
    for (int64_t j = 0; j < kL; ++j) r[j] = j < nc ? loadv(planes + j * n + p0) : VecF{};
    simd::transpose(r);
    for (int64_t i = 0; i < kL; ++i) storev(b + (p0 + i) * kL, r[i]);
  }
  for (int64_t p = p0; p < n; ++p)
    for (int64_t j = 0; j < kL; ++j) b[p * kL + j] = j < nc ? planes[j * n + p] : 0.0f;
}

// planes[j * n + p] = b[p * kL + j] for the block's nc channels.
void scatter(const float* b, int64_t n, int64_t nc, float* planes) {
  if (n == 1) {
    std::copy(b, b + nc, planes);
    return;
  }
  int64_t p0 = 0;
  for (; p0 + kL <= n; p0 += kL) {
    VecF r[kL];
    for (int64_t i = 0; i < kL; ++i) r[i] = loadv(b + (p0 + i) * kL);
    simd::transpose(r);
    for (int64_t j = 0; j < nc; ++j) storev(planes + j * n + p0, r[j]);
  }
  for (int64_t p = p0; p < n; ++p)
    for (int64_t j = 0; j < nc; ++j) planes[j * n + p] = b[p * kL + j];
}

// The scratch of one call: the block's input, output and kernel (and their gradients).
struct Blocks {
  float *x, *y, *w, *dx, *dw;
  Blocks(const Window& win, float* s)
      : x(s), y(x + win.in_size() * kL), w(y + win.out_size() * kL), dx(w + win.k_size() * kL),
        dw(dx + win.in_size() * kL) {}
};

}  // namespace

int64_t depthwise_blocked_scratch(const Window& w) { return (2 * w.in_size() + w.out_size() + 2 * w.k_size()) * kL; }

bool depthwise_prefers_blocked(const Window& w) { return depthwise_blocked_scratch(w) <= kBlockedScratch; }

void depthwise_forward_blocked(const Window& w, const PoolTaps& t, int64_t images, int64_t channels, const float* x,
                               const float* wk, const float* bias, float* y, float* scratch) {
  const int64_t in = w.in_size(), out = w.out_size(), K = w.k_size(), s = w.stride[2];
  const Blocks b(w, scratch);
  for (int64_t c0 = 0; c0 < channels; c0 += kL) {
    const int64_t nc = std::min(kL, channels - c0);
    gather(wk + c0 * K, K, nc, b.w);
    // Each output starts as its bias (or 0), as Conv fills Y before the per-plane kernel.
    VecF start{};
    for (int64_t j = 0; j < nc && bias; ++j) start[j] = bias[c0 + j];
    for (int64_t n = 0; n < images; ++n) {
      gather(x + (n * channels + c0) * in, in, nc, b.x);
      for (int64_t p = 0; p < out; ++p) storev(b.y + p * kL, start);
      for_each_row_pair(w, t, [&](int64_t yrow, int64_t xrow, int64_t krow) {
        for (int64_t kw = 0; kw < w.k[2]; ++kw) {
          const PoolTaps::RowTap& r = t.row[static_cast<size_t>(kw)];
          if (r.lo >= r.hi) continue;
          const VecF wv = loadv(b.w + (krow + kw) * kL);
          float* yv = b.y + (yrow + r.lo) * kL;
          const float* xv = b.x + (xrow + r.lo * s + r.offset) * kL;
          for (int64_t ow = r.lo; ow < r.hi; ++ow, yv += kL, xv += s * kL) storev(yv, loadv(yv) + wv * loadv(xv));
        }
      });
      scatter(b.y, out, nc, y + (n * channels + c0) * out);
    }
  }
}

void depthwise_backward_blocked(const Window& w, const PoolTaps& t, int64_t images, int64_t channels, const float* x,
                                const float* wk, const float* dy, float* dx, float* dw, float* scratch) {
  const int64_t in = w.in_size(), out = w.out_size(), K = w.k_size(), s = w.stride[2];
  const Blocks b(w, scratch);
  for (int64_t c0 = 0; c0 < channels; c0 += kL) {
    const int64_t nc = std::min(kL, channels - c0);
    if (dw) gather(dw + c0 * K, K, nc, b.dw);
    if (dx) gather(wk + c0 * K, K, nc, b.w);
    // Image by image, as the per-plane kernel runs them: dW's sums in the same order.
    for (int64_t n = 0; n < images; ++n) {
      const int64_t xoff = (n * channels + c0) * in;
      gather(dy + (n * channels + c0) * out, out, nc, b.y);
      if (dw) gather(x + xoff, in, nc, b.x);
      if (dx) gather(dx + xoff, in, nc, b.dx);
      for_each_row_pair(w, t, [&](int64_t yrow, int64_t xrow, int64_t krow) {
        const float* dyr = b.y + yrow * kL;
        for (int64_t kw = 0; kw < w.k[2]; ++kw) {
          const PoolTaps::RowTap& r = t.row[static_cast<size_t>(kw)];
          if (r.lo >= r.hi) continue;
          if (dw) {  // dot_strided's eight lanes and order, per channel
            const float* xr = b.x + xrow * kL;
            VecF lane[8] = {};
            int64_t ow = r.lo;
            if (s == 1)
              for (; ow + 8 <= r.hi; ow += 8)
                for (int j = 0; j < 8; ++j)
                  lane[j] += loadv(dyr + (ow + j) * kL) * loadv(xr + (ow + j + r.offset) * kL);
            for (; ow < r.hi; ++ow) lane[0] += loadv(dyr + ow * kL) * loadv(xr + (ow * s + r.offset) * kL);
            VecF sum{};
            for (int j = 0; j < 8; ++j) sum += lane[j];
            float* dwv = b.dw + (krow + kw) * kL;
            storev(dwv, loadv(dwv) + sum);
          }
          if (!dx) continue;
          const VecF wv = loadv(b.w + (krow + kw) * kL);
          float* dxv = b.dx + (xrow + r.lo * s + r.offset) * kL;
          const float* dyv = dyr + r.lo * kL;
          for (int64_t ow = r.lo; ow < r.hi; ++ow, dyv += kL, dxv += s * kL)
            storev(dxv, loadv(dxv) + wv * loadv(dyv));
        }
      });
      if (dx) scatter(b.dx, in, nc, dx + xoff);
    }
    if (dw) scatter(b.dw, K, nc, dw + c0 * K);
  }
}

}  // namespace dl::rt
