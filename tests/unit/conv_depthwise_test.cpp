// Conv's direct depthwise kernel (runtime/ops/depthwise.h; group = C): forward, dX, dW
// and dB against a direct double-precision reference for strides, padding, dilation and
// a channel multiplier, and the same bits on 1 and 2 threads.
#include <doctest/doctest.h>

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

TEST_CASE("Conv depthwise: reference values for strides, padding, dilation and a channel multiplier") {
  const Geometry cases[] = {
      depthwise(2, 5, 1, 9, 7, 3, 1, 1, 1),   // MobileNet's 3x3, stride 1
      depthwise(3, 4, 1, 10, 9, 3, 2, 1, 1),  // stride 2, odd width
      depthwise(2, 3, 2, 11, 12, 3, 1, 2, 2), // channel multiplier 2, dilation 2
      depthwise(1, 2, 1, 5, 17, 5, 3, 0, 1),  // 5x5, stride 3 (the strided row loops), no padding
      depthwise(2, 3, 1, 4, 4, 3, 1, 3, 1),   // padding wider than the kernel reach: edge rows read nothing
  };
  unsigned seed = 10;
  for (const Geometry& g : cases) {
    CAPTURE(g.c);
    CAPTURE(g.m);
    CAPTURE(g.stride);
    CAPTURE(g.dil);
    const std::vector<float> x = random_values(g.n * g.c * g.h * g.w, seed++);
    const std::vector<float> w = random_values(g.m * g.k * g.k, seed++), b = random_values(g.m, seed++);
    const int64_t ny = g.n * g.m * g.oh() * g.ow();
    const Tensor dy = Tensor::floats({g.n, g.m, g.oh(), g.ow()}, random_values(ny, seed++));
    const Reference ref(g, x, w, b, dy.fvec());
    const auto got = run_conv(g, x, w, b, dy);
    check_close(got[0], ref.y, 1e-5);
    check_close(got[1], ref.dx, 1e-5);
    check_close(got[2], ref.dw, 1e-5);
    check_close(got[3], ref.db, 1e-5);
  }
}

TEST_CASE("Conv depthwise: the same bits on 1 and 2 threads") {
  // Big enough for run_parts to use two threads (batch 32, 128 channels of 16x16).
  const Geometry g = depthwise(32, 128, 1, 16, 16, 3, 1, 1, 1);
  std::vector<std::vector<float>> by_threads[2];
  dl::test::on_two_then_one([&](int threads) {
    if (threads == 2) REQUIRE(dl::rt::gemm_threads(g.m, g.n * g.oh() * g.ow(), g.k * g.k) == 2);
    const Tensor dy = Tensor::floats({g.n, g.m, g.oh(), g.ow()}, random_values(g.n * g.m * g.oh() * g.ow(), 4));
    by_threads[threads - 1] = run_conv(g, random_values(g.n * g.c * g.h * g.w, 1), random_values(g.m * 9, 2),
                                       random_values(g.m, 3), dy);
  });
  for (size_t i = 0; i < 4; ++i) CHECK(by_threads[0][i] == by_threads[1][i]);
}
