#include "runtime/ops/depthwise.h"

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

}  // namespace dl::rt
