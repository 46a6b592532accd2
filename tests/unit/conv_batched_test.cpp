// Conv's batched-image path (runtime/ops/conv.cpp: small output maps, the columns of
// several images in one GEMM) and LeNet-5's per-image shapes:
// forward, dX, dW and dB against a direct double-precision reference for groups, strides,
// padding, dilation, 1x1 maps, strided 1x1 kernels, pointwise kernels and batches that
// leave a partial last batch of images; and the same bits on 1 and 2 threads.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/attrs.h"
#include "runtime/ops/gemm_kernel.h"
#include "runtime/parallel.h"
#include "tests/unit/conv_reference.h"
#include "tests/unit/op_harness.h"
#include "tests/unit/parallel_test_util.h"

namespace {

using dl::rt::Tensor;
using dl::test::OpRun;
using dl::test::random_values;
using namespace dl::test::conv;

}  // namespace

TEST_CASE("Conv batched images: reference values for groups, strides, padding, dilation and small maps") {
  const Geometry cases[] = {
      {38, 6, 8, 1, 6, 10, 3, 1, 1, 1},  // 6x10 maps: 35 images per GEMM, a last batch of 3
      {5, 6, 8, 1, 8, 8, 3, 1, 1, 1},    // 8x8 maps, 8 maps: not batched (kThinMaps), one image per GEMM
      {5, 8, 6, 2, 4, 5, 3, 2, 1, 1},    // groups 2, stride 2, odd width
      {3, 4, 4, 1, 6, 6, 3, 1, 2, 2},    // dilation 2, padding 2
      {7, 5, 9, 1, 1, 1, 3, 1, 1, 1},    // 1x1 maps, 3x3 kernel (only the centre tap reads the input)
      {6, 6, 4, 1, 5, 5, 1, 2, 0, 1},    // a strided 1x1 kernel (resnet's downsample), odd map
      {4, 6, 6, 3, 3, 4, 1, 1, 0, 1},    // pointwise, groups 3
      {3, 2, 3, 1, 4, 4, 5, 3, 3, 1},    // a kernel wider than the map, stride 3, edge rows read padding only
      {4, 1, 6, 1, 28, 28, 5, 1, 2, 1},  // LeNet-5's Convs: 'same' 5x5 on one channel (conv_direct.h),
      {3, 1, 11, 1, 20, 30, 3, 1, 1, 1},  // one channel: 30-wide rows, 11 maps (a chunk of 8 and one of 3)
      {2, 1, 4, 1, 9, 13, 7, 1, 0, 1},    // one channel: 7x7 kernel without padding, 7-wide rows
      {4, 6, 16, 1, 14, 14, 5, 1, 0, 1},  // and 5x5 without padding (10-wide rows, in order)
      {2, 3, 4, 1, 9, 9, 3, 1, 0, 2},     // dilation 2 without padding (5x5 maps: batched)
      {3, 2, 4, 1, 9, 5, 5, 1, 1, 1},    // 5x5, pad 1 on 9x5: 3-wide rows with padded edges, in order (batched)
  };
  unsigned seed = 20;
  for (const Geometry& g : cases) {
    CAPTURE(g.n);
    CAPTURE(g.h);
    CAPTURE(g.k);
    CAPTURE(g.group);
    const std::vector<float> x = random_values(g.n * g.c * g.h * g.w, seed++);
    const std::vector<float> w = random_values(g.m * g.cg() * g.k * g.k, seed++), b = random_values(g.m, seed++);
    const Tensor dy = Tensor::floats({g.n, g.m, g.oh(), g.ow()}, random_values(g.n * g.m * g.oh() * g.ow(), seed++));
    const Reference ref(g, x, w, b, dy.fvec());
    const auto got = run_conv(g, x, w, b, dy);
    check_close(got[0], ref.y, 1e-5);
    check_close(got[1], ref.dx, 1e-5);
    // dW sums n * oh * ow products per weight: float32 rounding grows with sqrt of that count
    // (LeNet-5's 4 x 28 x 28 = 3136 terms are 2.3e-5 off on a portable SSE2 build's GEMM), and
    // with the order of the sums, which Eigen's blocking takes from the CPU's cache sizes at
    // run time: the first case's 38 x 60 terms were 2.3e-5 off on a Zen 4 machine (2026-12-04)
    // where the bound of sqrt(count) / 32 allowed 1.9e-5 at that weight (1.5e-5 x (1 + |dW|)),
    // which CI's machines had kept within.
    check_close(got[2], ref.dw, 1e-5 * std::max(1.0, std::sqrt(double(g.n * g.oh() * g.ow())) / 16));
    check_close(got[3], ref.db, 1e-5);
  }
}

TEST_CASE("Conv batched images: the same bits on 1 and 2 threads") {
  // resnet18's shapes at batch 16: 4x4 maps (one part, its GEMMs split over the threads)
  // and 8x8 maps (one part of 16 images); 6x10 maps, 16 maps, batched in two parts of 35;
  // LeNet-5's first Conv (one channel: conv_direct.h, 8 parts of 8 images); 2x2 maps
  // with more input channels than maps, 4x4 maps with many maps, a 5x5 kernel on 2x2 maps
  // (9 of its 25 taps live: LiveTaps) and two groups (the copies around the GEMMs split by
  // channel or map blocks, Conv::batch_blocks: an image's 4 or 16 columns per row; all
  // but the first reach its threshold for im2col and col2im, the third and the last also
  // for dY's copy); 3 input channels on 8x8 maps (fewer channels than blocks: images
  // split too).
  const Geometry shapes[] = {{16, 64, 64, 1, 4, 4, 3, 1, 1, 1},
                             {16, 136, 96, 1, 2, 2, 3, 1, 1, 1},
                             {16, 72, 272, 1, 4, 4, 3, 1, 1, 1},
                             {16, 136, 96, 1, 2, 2, 5, 1, 2, 1},
                             {16, 272, 544, 2, 4, 4, 3, 1, 1, 1},
                             {16, 3, 64, 1, 8, 8, 7, 1, 3, 1},
                             {16, 32, 32, 1, 8, 8, 3, 1, 1, 1},
                             {70, 16, 16, 1, 6, 10, 3, 1, 1, 1},
                             {64, 1, 6, 1, 28, 28, 5, 1, 2, 1}};
  for (const Geometry& g : shapes) {
    CAPTURE(g.h);
    std::vector<std::vector<float>> by_threads[2];
    dl::test::on_two_then_one([&](int threads) {
      if (threads == 2 && g.h == 4)
        REQUIRE(dl::rt::gemm_threads(g.m, g.n * g.oh() * g.ow(), g.c * g.k * g.k) == 2);
      by_threads[threads - 1] = run_random(g, 7);
    });
    for (size_t i = 0; i < 4; ++i) CHECK(by_threads[0][i] == by_threads[1][i]);
  }
}
