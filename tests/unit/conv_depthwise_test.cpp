// Conv's direct depthwise kernel (runtime/ops/depthwise.h; group = C): forward, dX, dW
// and dB against a direct double-precision reference for strides, padding, dilation and
// a channel multiplier, and the same bits on 1 and 2 threads.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "runtime/attrs.h"
#include "runtime/ops/gemm_kernel.h"
#include "runtime/parallel.h"
#include "tests/unit/op_harness.h"
#include "tests/unit/parallel_test_util.h"

namespace {

using dl::rt::Tensor;
using dl::test::OpRun;
using dl::test::random_values;

struct Geometry {
  int64_t n, c, mult, h, w, k, stride, pad, dil;
  int64_t oh() const { return (h + 2 * pad - dil * (k - 1) - 1) / stride + 1; }
  int64_t ow() const { return (w + 2 * pad - dil * (k - 1) - 1) / stride + 1; }
  int64_t m() const { return c * mult; }
};

// y, dx, dw, db of a depthwise convolution, in double: output channel o reads input
// channel o / mult.
struct Reference {
  std::vector<double> y, dx, dw, db;
  Reference(const Geometry& g, const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b,
            const std::vector<float>& dy)
      : y(size_t(g.n * g.m() * g.oh() * g.ow())), dx(x.size()), dw(w.size()), db(b.size()) {
    for (int64_t i = 0; i < g.n; ++i)
      for (int64_t o = 0; o < g.m(); ++o) {
        const int64_t ci = o / g.mult;
        for (int64_t r = 0; r < g.oh(); ++r)
          for (int64_t q = 0; q < g.ow(); ++q) {
            const size_t yi = size_t(((i * g.m() + o) * g.oh() + r) * g.ow() + q);
            double s = b[size_t(o)];
            db[size_t(o)] += dy[yi];
            for (int64_t u = 0; u < g.k; ++u)
              for (int64_t v = 0; v < g.k; ++v) {
                const int64_t ih = r * g.stride - g.pad + u * g.dil, iw = q * g.stride - g.pad + v * g.dil;
                if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) continue;
                const size_t xi = size_t(((i * g.c + ci) * g.h + ih) * g.w + iw);
                const size_t wi = size_t((o * g.k + u) * g.k + v);
                s += double(w[wi]) * x[xi];
                dx[xi] += double(w[wi]) * dy[yi];
                dw[wi] += double(x[xi]) * dy[yi];
              }
            y[yi] = s;
          }
      }
  }
};

void check_close(const std::vector<float>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    REQUIRE(std::fabs(got[i] - want[i]) <= tol * (1.0 + std::fabs(want[i])));
  }
}

// Runs the op forward and backward; returns y, dx, dw, db.
std::vector<std::vector<float>> run_conv(const Geometry& g, const std::vector<float>& x, const std::vector<float>& w,
                                         const std::vector<float>& b, const Tensor& dy) {
  auto node = dl::rt::sample_node("Conv", 3, 1,
                                  {{"group", dl::rt::attr_i(g.c)},
                                   {"pads", dl::rt::attr_ints({g.pad, g.pad, g.pad, g.pad})},
                                   {"strides", dl::rt::attr_ints({g.stride, g.stride})},
                                   {"dilations", dl::rt::attr_ints({g.dil, g.dil})}},
                                  11);
  OpRun run(node,
            {Tensor::floats({g.n, g.c, g.h, g.w}, x), Tensor::floats({g.m(), 1, g.k, g.k}, w),
             Tensor::floats({g.m()}, b)},
            true);
  run.forward();
  std::vector<Tensor> d = run.backward({&dy}, {true, true, true});
  return {run.outputs[0].fvec(), d[0].fvec(), d[1].fvec(), d[2].fvec()};
}

}  // namespace

TEST_CASE("Conv depthwise: reference values for strides, padding, dilation and a channel multiplier") {
  const Geometry cases[] = {
      {2, 5, 1, 9, 7, 3, 1, 1, 1},   // MobileNet's 3x3, stride 1
      {3, 4, 1, 10, 9, 3, 2, 1, 1},  // stride 2, odd width
      {2, 3, 2, 11, 12, 3, 1, 2, 2}, // channel multiplier 2, dilation 2
      {1, 2, 1, 5, 17, 5, 3, 0, 1},  // 5x5, stride 3 (the strided row loops), no padding
      {2, 3, 1, 4, 4, 3, 1, 3, 1},   // padding wider than the kernel reach: edge rows read nothing
  };
  unsigned seed = 10;
  for (const Geometry& g : cases) {
    CAPTURE(g.c);
    CAPTURE(g.stride);
    CAPTURE(g.dil);
    const std::vector<float> x = random_values(g.n * g.c * g.h * g.w, seed++);
    const std::vector<float> w = random_values(g.m() * g.k * g.k, seed++), b = random_values(g.m(), seed++);
    const int64_t ny = g.n * g.m() * g.oh() * g.ow();
    const Tensor dy = Tensor::floats({g.n, g.m(), g.oh(), g.ow()}, random_values(ny, seed++));
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
  const Geometry g{32, 128, 1, 16, 16, 3, 1, 1, 1};
  std::vector<std::vector<float>> by_threads[2];
  dl::test::on_two_then_one([&](int threads) {
    if (threads == 2) REQUIRE(dl::rt::gemm_threads(g.m(), g.n * g.oh() * g.ow(), g.k * g.k) == 2);
    const Tensor dy = Tensor::floats({g.n, g.m(), g.oh(), g.ow()}, random_values(g.n * g.m() * g.oh() * g.ow(), 4));
    by_threads[threads - 1] = run_conv(g, random_values(g.n * g.c * g.h * g.w, 1), random_values(g.m() * 9, 2),
                                       random_values(g.m(), 3), dy);
  });
  for (size_t i = 0; i < 4; ++i) CHECK(by_threads[0][i] == by_threads[1][i]);
}
