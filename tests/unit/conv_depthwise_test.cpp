// Conv's direct depthwise kernels (runtime/ops/depthwise.h; group = C): forward, dX, dW
// and dB against a direct double-precision reference for strides, padding, dilation and
// a channel multiplier, the same bits on 1 and 2 threads, and the channel-blocked
// kernels against the per-plane ones.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/attrs.h"
#include "runtime/ops/depthwise.h"
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
  // Big enough for run_parts to use two threads: batch 32, 128 channels of 16x16 (the
  // channel-blocked kernels), and batch 2, 64 channels of 112x112 (the per-plane ones,
  // whatever the vector width: the blocked kernels' scratch would pass their bound).
  for (const Geometry& g : {depthwise(32, 128, 1, 16, 16, 3, 1, 1, 1), depthwise(2, 64, 1, 112, 112, 3, 1, 1, 1)}) {
    CAPTURE(g.h);
    dl::rt::WindowAttrs wa;
    wa.pads = {1, 1, 1, 1};
    const bool blocked = g.h == 16;
    REQUIRE(dl::rt::depthwise_prefers_blocked(dl::rt::plan_window("test", wa, {g.n, g.c, g.h, g.w}, {3, 3})) == blocked);
    std::vector<std::vector<float>> by_threads[2];
    dl::test::on_two_then_one([&](int threads) {
      if (threads == 2 && !blocked) REQUIRE(dl::rt::gemm_threads(g.m, g.n * g.oh() * g.ow(), g.k * g.k) == 2);
      if (threads == 2 && blocked) REQUIRE(dl::rt::loop_threads(g.n * g.c * (g.h * g.w + g.oh() * g.ow()), 1 << 14) == 2);
      const Tensor dy = Tensor::floats({g.n, g.m, g.oh(), g.ow()}, random_values(g.n * g.m * g.oh() * g.ow(), 4));
      by_threads[threads - 1] = run_conv(g, random_values(g.n * g.c * g.h * g.w, 1), random_values(g.m * 9, 2),
                                         random_values(g.m, 3), dy);
    });
    for (size_t i = 0; i < 4; ++i) CHECK(by_threads[0][i] == by_threads[1][i]);
  }
}

namespace {

// Runs the per-plane kernels (depthwise.h) image by image and channel by channel, as
// Conv did before the blocked ones, on the same starting dX and dW.
struct DepthwiseRun {
  std::vector<float> y, dx, dw;
};

DepthwiseRun per_plane(const dl::rt::Window& w, const dl::rt::PoolTaps& t, int64_t n, int64_t c,
                       const std::vector<float>& x, const std::vector<float>& wk, const std::vector<float>& b,
                       const std::vector<float>& dy, DepthwiseRun r) {
  const int64_t in = w.in_size(), out = w.out_size(), K = w.k_size();
  r.y.assign(size_t(n * c * out), 0.0f);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch) {
      float* y = r.y.data() + (i * c + ch) * out;
      std::fill_n(y, out, b[size_t(ch)]);
      dl::rt::depthwise_forward(w, t, x.data() + (i * c + ch) * in, wk.data() + ch * K, y);
      dl::rt::depthwise_backward(w, t, x.data() + (i * c + ch) * in, wk.data() + ch * K, dy.data() + (i * c + ch) * out,
                                 r.dx.data() + (i * c + ch) * in, r.dw.data() + ch * K);
    }
  return r;
}

}  // namespace

TEST_CASE("Conv depthwise: the channel-blocked kernels give the per-plane kernels' bits") {
  using dl::rt::Shape;
  struct Case {
    Shape x;
    std::vector<int64_t> k, strides, dil, pads;
  };
  // Channel counts off the vector width (5, 21, 37), strides 1 to 3, dilation, 1x1 and
  // 1-wide maps, padding beyond the kernel's reach, 1-D and 3-D windows.
  const Case cases[] = {
      {{3, 21, 8, 8}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      {{2, 37, 9, 11}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},
      {{2, 16, 1, 1}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      {{1, 5, 13, 17}, {5, 5}, {3, 3}, {1, 1}, {2, 2, 2, 2}},
      {{2, 24, 12, 10}, {3, 3}, {1, 1}, {2, 2}, {2, 2, 2, 2}},
      {{2, 7, 4, 4}, {3, 3}, {1, 1}, {1, 1}, {3, 3, 3, 3}},
      {{2, 19, 6, 1}, {3, 1}, {1, 1}, {1, 1}, {1, 0, 1, 0}},
      {{2, 9, 30}, {7}, {1}, {1}, {3, 3}},
      {{2, 18, 4, 5, 6}, {3, 3, 3}, {1, 2, 1}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}},
  };
  unsigned seed = 40;
  for (const Case& cs : cases) {
    CAPTURE(dl::rt::shape_str(cs.x));
    dl::rt::WindowAttrs wa;
    wa.strides = cs.strides;
    wa.dilations = cs.dil;
    wa.pads = cs.pads;
    const dl::rt::Window w = dl::rt::plan_window("test", wa, cs.x, cs.k);
    dl::rt::PoolTaps t;
    t.plan(w);
    const int64_t n = cs.x[0], c = cs.x[1], in = w.in_size(), out = w.out_size(), K = w.k_size();
    const std::vector<float> x = random_values(n * c * in, seed++), wk = random_values(c * K, seed++),
                             b = random_values(c, seed++), dy = random_values(n * c * out, seed++);
    DepthwiseRun start;  // dX and dW accumulate onto what is there
    start.dx = random_values(n * c * in, seed++);
    start.dw = random_values(c * K, seed++);
    const DepthwiseRun want = per_plane(w, t, n, c, x, wk, b, dy, start);
    DepthwiseRun got = start;
    got.y.assign(want.y.size(), -1.0f);
    std::vector<float> scratch(size_t(dl::rt::depthwise_blocked_scratch(w)), 7.0f);
    dl::rt::depthwise_forward_blocked(w, t, n, c, x.data(), wk.data(), b.data(), got.y.data(), scratch.data());
    dl::rt::depthwise_backward_blocked(w, t, n, c, x.data(), wk.data(), dy.data(), got.dx.data(), got.dw.data(),
                                       scratch.data());
    CHECK(got.y == want.y);
    CHECK(got.dx == want.dx);
    // dW within the rounding of a few products: GCC vectorises the per-plane kernel's
    // row-tail sums (all of a strided row) as products rounded apart from their in-order
    // sum, except in a scalar tail, so its bits depend on the target (the same bits as the
    // blocked kernel's at stride 1 with AVX-512, not with AVX2); the blocked kernel fuses
    // every multiply-add.
    for (size_t i = 0; i < got.dw.size(); ++i)
      CHECK(std::fabs(got.dw[i] - want.dw[i]) <= 1e-5f * (1 + std::fabs(want.dw[i])));
    // Without a bias, dX or dW: zeros, and the others untouched.
    std::vector<float> y0(want.y.size(), -1.0f), dx_only = start.dx;
    dl::rt::depthwise_forward_blocked(w, t, n, c, x.data(), wk.data(), nullptr, y0.data(), scratch.data());
    std::vector<float> zero_b(size_t(c), 0.0f);
    DepthwiseRun plain = per_plane(w, t, n, c, x, wk, zero_b, dy, start);
    CHECK(y0 == plain.y);
    dl::rt::depthwise_backward_blocked(w, t, n, c, x.data(), wk.data(), dy.data(), dx_only.data(), nullptr,
                                       scratch.data());
    CHECK(dx_only == want.dx);
  }
}
