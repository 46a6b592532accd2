// The one-channel Conv kernels (runtime/ops/conv_direct.h) called directly against a
// double-precision reference, for row widths 1 to 32 (every count of vectors per row and
// every tail of runtime/ops/row_vec.h's widths), 1 to 11 maps (every chunk size),
// kernels 1 to 7 wide with and without padding, and 1-D windows; and that builds with
// AVX-512 or AVX2 + FMA take them (DL_ROW_VEC).
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "runtime/ops/conv_direct.h"
#include "runtime/ops/row_vec.h"
#include "tests/unit/parallel_test_util.h"

namespace {

using dl::rt::Window;
using dl::test::random_values;

Window window(int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t ph, int64_t pw) {
  dl::rt::WindowAttrs a;
  a.pads = {ph, pw, ph, pw};
  return dl::rt::plan_window("test", a, {1, 1, h, w}, {kh, kw});
}

// Checks single_channel_forward and single_channel_dw on w against a direct sum in double.
void check_window(const Window& w, int64_t maps, unsigned seed) {
  const int64_t ks = w.k_size(), plane = w.out_size();
  const std::vector<float> x = random_values(w.in_size(), seed), wt = random_values(maps * ks, seed + 1),
                           b = random_values(maps, seed + 2), dy = random_values(maps * plane, seed + 3);
  std::vector<float> y(size_t(maps * plane), NAN), dw(size_t(maps * ks), 0.5f);
  dl::rt::single_channel_forward(w, maps, x.data(), wt.data(), b.data(), y.data());
  dl::rt::single_channel_dw(w, maps, x.data(), dy.data(), dw.data());
  for (int64_t m = 0; m < maps; ++m) {
    for (int64_t oh = 0; oh < w.out[1]; ++oh)
      for (int64_t ow = 0; ow < w.out[2]; ++ow) {
        double s = b[size_t(m)];
        for (int64_t kh = 0; kh < w.k[1]; ++kh)
          for (int64_t kw = 0; kw < w.k[2]; ++kw) {
            const int64_t ih = oh + kh - w.pad_begin[1], iw = ow + kw - w.pad_begin[2];
            if (ih >= 0 && ih < w.in[1] && iw >= 0 && iw < w.in[2])
              s += double(wt[size_t((m * w.k[1] + kh) * w.k[2] + kw)]) * x[size_t(ih * w.in[2] + iw)];
          }
        CHECK(y[size_t(m * plane + oh * w.out[2] + ow)] == doctest::Approx(s).epsilon(1e-5));
      }
    for (int64_t kh = 0; kh < w.k[1]; ++kh)
      for (int64_t kw = 0; kw < w.k[2]; ++kw) {
        double s = 0.5;
        for (int64_t oh = 0; oh < w.out[1]; ++oh)
          for (int64_t ow = 0; ow < w.out[2]; ++ow) {
            const int64_t ih = oh + kh - w.pad_begin[1], iw = ow + kw - w.pad_begin[2];
            if (ih >= 0 && ih < w.in[1] && iw >= 0 && iw < w.in[2])
              s += double(dy[size_t(m * plane + oh * w.out[2] + ow)]) * x[size_t(ih * w.in[2] + iw)];
          }
        CHECK(dw[size_t((m * w.k[1] + kh) * w.k[2] + kw)] == doctest::Approx(s).epsilon(1e-5));
      }
  }
}

}  // namespace

TEST_CASE("Conv one-channel direct kernels: forward and dW against the definition, every row width and chunk") {
  unsigned seed = 40;
  for (int64_t width = 1; width <= 32; ++width) {
    CAPTURE(width);
    check_window(window(5, width, 3, 3, 1, 1), 1 + width % 11, seed);    // 'same' 3x3
    check_window(window(4, width + 4, 2, 5, 0, 0), 1 + (width + 5) % 11, seed + 4);  // 5 wide, unpadded
    seed += 8;
  }
  for (int64_t maps = 1; maps <= 11; ++maps) {
    CAPTURE(maps);
    check_window(window(28, 28, 5, 5, 2, 2), maps, seed++);  // LeNet-5's first Conv
    check_window(window(9, 13, 7, 7, 0, 0), maps, seed++);   // 7x7 without padding, 7-wide rows
  }
  dl::rt::WindowAttrs a;  // 1-D: a row of 30, kernel 7, padding 3
  a.pads = {3, 3};
  check_window(dl::rt::plan_window("test", a, {1, 1, 30}, {7}), 5, seed);
}

TEST_CASE("Conv one-channel direct kernels: taken where the target has AVX-512 or AVX2 + FMA") {
  const Window lenet = window(28, 28, 5, 5, 2, 2);
#if defined(DL_ROW_VEC)
  CHECK(dl::rt::single_channel_direct(lenet));
  CHECK_FALSE(dl::rt::single_channel_direct(window(4, 33, 3, 3, 1, 1)));  // rows over 32 values
  CHECK_FALSE(dl::rt::single_channel_direct(window(4, 20, 3, 17, 0, 8)));  // kernel rows over 16 taps
#else
  CHECK_FALSE(dl::rt::single_channel_direct(lenet));
#endif
}
