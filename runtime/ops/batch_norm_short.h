// BatchNormalization's loops over maps shorter than a vector (mobilenet_v2's and
// shufflenet_v2's 2x2 and 1x1 maps at 32x32 inputs, up to 1280 channels): every channel
// in one pass over the tensor, image by image and channel by channel, where the op's
// per-channel loops (runtime/ops/batch_normalization.cpp) paid a call, two double
// divisions and a square root per channel for 4 to 64 values (mobilenet_v2: 230 ns per
// channel of a 2x2 map, 40 ns here). Each channel's sums run over its values in image
// order in double, as those loops summed such rows, and every value takes the same float
// expression as there, so the results did not change bit for bit (bench/README.md run 43;
// input_grad adding onto another reader's dX: up to the last bit since run 58, see there).
#pragma once

#include <cstdint>
#include <type_traits>

namespace dl::rt::bn_short {

struct Dims {
  int64_t outer, channels, inner;  // X (outer, channels, inner...)
};

// f(std::integral_constant<int64_t, K>) with K = inner for 1x1 and 2x2 maps, else K = 0
// (then the loops read d.inner): with the row length known, the compiler vectorises the
// loops across channels (each channel's sums keep their order).
template <class F>
void with_inner(int64_t inner, F f) {
  if (inner == 1) f(std::integral_constant<int64_t, 1>{});
  else if (inner == 4) f(std::integral_constant<int64_t, 4>{});
  else f(std::integral_constant<int64_t, 0>{});
}

// mean[c] and var[c] (population, about the float mean) of each channel; 0 for none.
template <int64_t K>
void moments(const float* x, Dims d, double* mean, double* var) {
  const int64_t in = K ? K : d.inner;
  const double count = static_cast<double>(d.outer * in);
  for (int64_t c = 0; c < d.channels; ++c) mean[c] = var[c] = 0.0;
  for (int64_t n = 0; n < d.outer; ++n)
    for (int64_t c = 0; c < d.channels; ++c)
      for (int64_t k = 0; k < in; ++k) mean[c] += double(x[(n * d.channels + c) * in + k]);
  for (int64_t c = 0; c < d.channels; ++c) mean[c] = count > 0 ? mean[c] / count : 0.0;
  for (int64_t n = 0; n < d.outer; ++n)
    for (int64_t c = 0; c < d.channels; ++c) {
      const float m = float(mean[c]);
      for (int64_t k = 0; k < in; ++k) {
        const double dev = double(x[(n * d.channels + c) * in + k]) - m;
        var[c] += dev * dev;
      }
    }
  for (int64_t c = 0; c < d.channels; ++c) var[c] = count > 0 ? var[c] / count : 0.0;
}

// y = x * a[c] + b[c]
template <int64_t K>
void normalize(const float* x, Dims d, const float* a, const float* b, float* y) {
  const int64_t in = K ? K : d.inner;
  for (int64_t n = 0; n < d.outer; ++n)
    for (int64_t c = 0; c < d.channels; ++c) {
      const float* xp = x + (n * d.channels + c) * in;
      float* yp = y + (n * d.channels + c) * in;
      for (int64_t k = 0; k < in; ++k) yp[k] = xp[k] * a[c] + b[c];
    }
}

// s[c] = sum dy and sx[c] = sum dy * (x - mean[c]) over the channel, summed in double.
template <int64_t K>
void grad_sums(const float* dy, const float* x, Dims d, const float* mean, double* s, double* sx) {
  const int64_t in = K ? K : d.inner;
  for (int64_t c = 0; c < d.channels; ++c) s[c] = sx[c] = 0.0;
  for (int64_t n = 0; n < d.outer; ++n)
    for (int64_t c = 0; c < d.channels; ++c) {
      const int64_t off = (n * d.channels + c) * in;
      const float m = mean[c];
      for (int64_t k = 0; k < in; ++k) {
        s[c] += dy[off + k];
        sx[c] += double(dy[off + k]) * (x[off + k] - m);
      }
    }
}

// dx = (0 when `assign`, else dx) + a[c] * (dy - ms[c] - (x - mean[c]) * msx[c])
// (Each channel's coefficients are read once into locals: read through the pointers,
// which may alias dx for all the compiler knows, they were loaded again after every store
// and the 2x2 loop ran scalar: the whole backward on 2x2 maps took 3.2x to 3.6x as long,
// BM_BatchNorm, bench/README.md run 58. As the first writer (`assign`, training's usual
// case) the bits are unchanged. Adding onto another reader's dX, GCC had left element 0
// of each 2x2 row unfused (the product rounded, then added); all are now fused, so those
// values may differ from before in the last bit.)
template <int64_t K>
void input_grad(const float* dy, const float* x, Dims d, const float* a, const float* ms, const float* msx,
                const float* mean, float* dx, bool assign) {
  const int64_t in = K ? K : d.inner;
  const auto rows = [&](auto assign_c) {
    for (int64_t n = 0; n < d.outer; ++n)
      for (int64_t c = 0; c < d.channels; ++c) {
        const int64_t off = (n * d.channels + c) * in;
        const float* g = dy + off;
        const float* xp = x + off;
        float* o = dx + off;
        const float ac = a[c], msc = ms[c], mc = mean[c], msxc = msx[c];
        if constexpr (decltype(assign_c)::value)
          for (int64_t k = 0; k < in; ++k) o[k] = 0.0f + ac * (g[k] - msc - (xp[k] - mc) * msxc);
        else
          for (int64_t k = 0; k < in; ++k) o[k] += ac * (g[k] - msc - (xp[k] - mc) * msxc);
      }
  };
  if (assign) rows(std::true_type{});
  else rows(std::false_type{});
}

}  // namespace dl::rt::bn_short
