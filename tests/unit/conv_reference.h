// A direct double-precision reference for Conv (grouped, strided, padded, dilated; depthwise
// is group = C), and running the op forward and backward: shared by the Conv kernel tests
// (conv_batched_test.cpp, conv_depthwise_test.cpp).
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "runtime/attrs.h"
#include "tests/unit/op_harness.h"
#include "tests/unit/parallel_test_util.h"

namespace dl::test::conv {

using dl::rt::Tensor;
using dl::test::OpRun;
using dl::test::random_values;

struct Geometry {
  int64_t n, c, m, group, h, w, k, stride, pad, dil;
  int64_t oh() const { return (h + 2 * pad - dil * (k - 1) - 1) / stride + 1; }
  int64_t ow() const { return (w + 2 * pad - dil * (k - 1) - 1) / stride + 1; }
  int64_t cg() const { return c / group; }
};

// y, dx, dw, db of a grouped convolution, in double.
struct Reference {
  std::vector<double> y, dx, dw, db;
  Reference(const Geometry& g, const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b,
            const std::vector<float>& dy)
      : y(size_t(g.n * g.m * g.oh() * g.ow())), dx(x.size()), dw(w.size()), db(b.size()) {
    const int64_t mg = g.m / g.group;
    for (int64_t i = 0; i < g.n; ++i)
      for (int64_t o = 0; o < g.m; ++o) {
        const int64_t grp = o / mg;
        for (int64_t r = 0; r < g.oh(); ++r)
          for (int64_t q = 0; q < g.ow(); ++q) {
            const size_t yi = size_t(((i * g.m + o) * g.oh() + r) * g.ow() + q);
            double s = b[size_t(o)];
            db[size_t(o)] += dy[yi];
            for (int64_t ch = 0; ch < g.cg(); ++ch)
              for (int64_t u = 0; u < g.k; ++u)
                for (int64_t v = 0; v < g.k; ++v) {
                  const int64_t ih = r * g.stride - g.pad + u * g.dil, iw = q * g.stride - g.pad + v * g.dil;
                  if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) continue;
                  const size_t xi = size_t(((i * g.c + grp * g.cg() + ch) * g.h + ih) * g.w + iw);
                  const size_t wi = size_t(((o * g.cg() + ch) * g.k + u) * g.k + v);
                  s += double(w[wi]) * x[xi];
                  dx[xi] += double(w[wi]) * dy[yi];
                  dw[wi] += double(x[xi]) * dy[yi];
                }
            y[yi] = s;
          }
      }
  }
};

inline void check_close(const std::vector<float>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    REQUIRE(std::fabs(got[i] - want[i]) <= tol * (1.0 + std::fabs(want[i])));
  }
}

// Runs the op forward and backward; returns y, dx, dw, db.
inline std::vector<std::vector<float>> run_conv(const Geometry& g, const std::vector<float>& x, const std::vector<float>& w,
                                         const std::vector<float>& b, const Tensor& dy) {
  auto node = dl::rt::sample_node("Conv", 3, 1,
                                  {{"group", dl::rt::attr_i(g.group)},
                                   {"pads", dl::rt::attr_ints({g.pad, g.pad, g.pad, g.pad})},
                                   {"strides", dl::rt::attr_ints({g.stride, g.stride})},
                                   {"dilations", dl::rt::attr_ints({g.dil, g.dil})}},
                                  11);
  OpRun run(node,
            {Tensor::floats({g.n, g.c, g.h, g.w}, x), Tensor::floats({g.m, g.cg(), g.k, g.k}, w),
             Tensor::floats({g.m}, b)},
            true);
  run.forward();
  std::vector<Tensor> d = run.backward({&dy}, {true, true, true});
  return {run.outputs[0].fvec(), d[0].fvec(), d[1].fvec(), d[2].fvec()};
}

// run_conv on random x, w, b and dy drawn from `seed`.
inline std::vector<std::vector<float>> run_random(const Geometry& g, unsigned seed) {
  const Tensor dy =
      Tensor::floats({g.n, g.m, g.oh(), g.ow()}, random_values(g.n * g.m * g.oh() * g.ow(), seed + 3));
  return run_conv(g, random_values(g.n * g.c * g.h * g.w, seed), random_values(g.m * g.cg() * g.k * g.k, seed + 1),
                  random_values(g.m, seed + 2), dy);
}

// A depthwise convolution (group = C) of `mult` output channels per input channel.
inline Geometry depthwise(int64_t n, int64_t c, int64_t mult, int64_t h, int64_t w, int64_t k, int64_t stride,
                          int64_t pad, int64_t dil) {
  return Geometry{n, c, c * mult, c, h, w, k, stride, pad, dil};
}

}  // namespace dl::test::conv
