// The batch-parallel paths of Conv (image parts) and MaxPool (plane parts, the 2x2
// stride-2 kernel): the same values as a direct reference, and bit-identical results
// for any thread count.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "runtime/attrs.h"
#include "runtime/ops/gemm_kernel.h"
#include "runtime/parallel.h"
#include "runtime/probe_stats.h"
#include "runtime/threads.h"
#include "tests/unit/op_harness.h"
#include "tests/unit/parallel_test_util.h"

namespace {

using dl::rt::Tensor;
using dl::test::OpRun;
using dl::test::on_two_then_one;
using dl::test::random_values;

// Direct 2-D convolution (stride 1, symmetric padding), NCHW, one group.
std::vector<double> conv_ref(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b,
                             int64_t n, int64_t c, int64_t h, int64_t wd, int64_t m, int64_t k, int64_t pad) {
  const int64_t oh = h + 2 * pad - k + 1, ow = wd + 2 * pad - k + 1;
  std::vector<double> y(static_cast<size_t>(n * m * oh * ow));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t o = 0; o < m; ++o)
      for (int64_t r = 0; r < oh; ++r)
        for (int64_t q = 0; q < ow; ++q) {
          double s = b[size_t(o)];
          for (int64_t ch = 0; ch < c; ++ch)
            for (int64_t u = 0; u < k; ++u)
              for (int64_t v = 0; v < k; ++v) {
                const int64_t ih = r + u - pad, iw = q + v - pad;
                if (ih < 0 || ih >= h || iw < 0 || iw >= wd) continue;
                s += double(x[size_t(((i * c + ch) * h + ih) * wd + iw)]) * w[size_t(((o * c + ch) * k + u) * k + v)];
              }
          y[size_t(((i * m + o) * oh + r) * ow + q)] = s;
        }
  return y;
}

}  // namespace

TEST_CASE("Conv image parts: reference values, and the same bits on 1 and 2 threads") {
  // LeNet's first layer (7.5M multiply-adds: above the size where the parts go to two
  // threads) with batch 61 (parts of 7 and 8 images) and 2 input channels.
  const int64_t n = 61, c = 2, h = 28, wd = 27, m = 6, k = 5, pad = 2;
  dl::rt::set_helper_policy(dl::rt::HelperPolicy::kAlways);
  dl::rt::set_compute_threads(2);
  REQUIRE(dl::rt::gemm_threads(m, n * h * wd, c * k * k) == 2);  // run_parts' rule: two threads
  dl::rt::set_compute_threads(0);
  dl::rt::set_helper_policy(dl::rt::HelperPolicy::kAuto);
  const std::vector<float> xv = random_values(n * c * h * wd, 1), wv = random_values(m * c * k * k, 2),
                           bv = random_values(m, 3);
  const std::vector<double> ref = conv_ref(xv, wv, bv, n, c, h, wd, m, k, pad);
  const Tensor dy = Tensor::floats({n, m, h, wd}, random_values(n * m * h * wd, 4));
  std::vector<std::vector<float>> results[3];  // y, dx, dw+db per thread count
  on_two_then_one([&](int threads) {
    auto node = dl::rt::sample_node("Conv", 3, 1, {{"pads", dl::rt::attr_ints({pad, pad, pad, pad})}}, 11);
    OpRun run(node, {Tensor::floats({n, c, h, wd}, xv), Tensor::floats({m, c, k, k}, wv), Tensor::floats({m}, bv)},
              true);
    run.forward();
    const std::vector<float> y = run.outputs[0].fvec();
    REQUIRE(y.size() == ref.size());
    for (size_t i = 0; i < y.size(); ++i) REQUIRE(std::fabs(y[i] - ref[i]) < 1e-4);
    std::vector<Tensor> g = run.backward({&dy}, {true, true, true});
    // dB = sum of dY over images and positions; dW checked against the reference's
    // finite form: sum over images of dY (x) X.
    std::vector<float> dwdb = g[1].fvec();
    for (int64_t o = 0; o < m; ++o) {
      double s = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t p = 0; p < h * wd; ++p) s += dy.fvec()[size_t((i * m + o) * h * wd + p)];
      CHECK(g[2].fvec()[size_t(o)] == doctest::Approx(s).epsilon(1e-4));
      dwdb.push_back(g[2].fvec()[size_t(o)]);
    }
    double dw0 = 0;  // dW[0, 0, 2, 2] (centre tap: no padding involved)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t p = 0; p < h * wd; ++p)
        dw0 += double(dy.fvec()[size_t((i * m) * h * wd + p)]) * xv[size_t(i * c * h * wd + p)];
    CHECK(g[1].fvec()[size_t(2 * k + 2)] == doctest::Approx(dw0).epsilon(1e-4));
    const size_t slot = threads == 2 ? 0 : 1;
    results[0].resize(2), results[1].resize(2), results[2].resize(2);
    results[0][slot] = y;
    results[1][slot] = g[0].fvec();
    results[2][slot] = dwdb;
  });
  for (auto& r : results) CHECK(r[0] == r[1]);
}

namespace {

// MaxPool 2x2 stride 2 by definition: maximum from -inf, strictly greater replaces (NaN
// skipped, first maximum in row-major order wins), index of the first tap otherwise.
void pool_ref(const std::vector<float>& x, int64_t planes, int64_t h, int64_t w, std::vector<float>& y,
              std::vector<int64_t>& idx) {
  const int64_t oh = (h - 2) / 2 + 1, ow = (w - 2) / 2 + 1;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t r = 0; r < oh; ++r)
      for (int64_t q = 0; q < ow; ++q) {
        float best = -std::numeric_limits<float>::infinity();
        int64_t arg = 2 * r * w + 2 * q;
        for (int64_t u = 0; u < 2; ++u)
          for (int64_t v = 0; v < 2; ++v) {
            const int64_t i = (2 * r + u) * w + 2 * q + v;
            if (x[size_t(p * h * w + i)] > best) best = x[size_t(p * h * w + i)], arg = i;
          }
        y.push_back(best);
        idx.push_back(p * h * w + arg);
      }
}

}  // namespace

TEST_CASE("MaxPool 2x2 stride 2: the vector path equals the definition (NaN, -inf, ties, odd and wide rows)") {
  for (int64_t w : {2, 5, 7, 28, 33, 70}) {
    // 256 planes: from width 28 on the forward pass (and at 70 the backward) is large
    // enough to run its parts on two threads.
    const int64_t n = 32, c = 8, h = 20;
    std::vector<float> xv = random_values(n * c * h * w, unsigned(w));
    const float inf = std::numeric_limits<float>::infinity();
    for (size_t i = 0; i < xv.size(); i += 7) xv[i] = std::round(xv[i] * 2) / 2;  // ties
    xv[0] = std::nanf("");
    xv[1] = -inf, xv[size_t(w)] = -inf, xv[size_t(w) + 1] = -inf;  // first window: NaN and -inf only
    xv[4 % xv.size()] = std::nanf("");
    xv[xv.size() - 1] = std::nanf("");
    std::vector<float> ry;
    std::vector<int64_t> ri;
    pool_ref(xv, n * c, h, w, ry, ri);
    on_two_then_one([&](int) {
      auto node = dl::rt::sample_node(
          "MaxPool", 1, 2, {{"kernel_shape", dl::rt::attr_ints({2, 2})}, {"strides", dl::rt::attr_ints({2, 2})}}, 12);
      OpRun run(node, {Tensor::floats({n, c, h, w}, xv)});
      run.forward();
      const std::vector<float> y = run.outputs[0].fvec();
      REQUIRE(y.size() == ry.size());
      for (size_t i = 0; i < y.size(); ++i) {
        INFO("width " << w << " output " << i);
        CHECK((y[i] == ry[i] || (std::isnan(y[i]) && std::isnan(ry[i]))));
      }
      CHECK(run.outputs[1].ivec() == ri);
      // The gradient goes to the recorded argmax.
      const Tensor dy = Tensor::floats(run.outputs[0].shape(), std::vector<float>(ry.size(), 1.0f));
      std::vector<Tensor> g = run.backward({&dy, nullptr}, {true});
      std::vector<float> want(xv.size(), 0.0f);
      for (int64_t i : ri) want[size_t(i)] += 1.0f;
      CHECK(g[0].fvec() == want);
    });
  }
}

TEST_CASE("MaxPool 1x2x2 on a 3-D input: every depth slice pooled (the general loop, not the 2-D kernel)") {
  const int64_t n = 2, c = 3, d = 4, h = 6, w = 10;
  const std::vector<float> xv = random_values(n * c * d * h * w, 31);
  std::vector<float> ry;
  std::vector<int64_t> ri;
  pool_ref(xv, n * c * d, h, w, ry, ri);  // each (n, c, depth) slice is a 2-D plane
  auto node = dl::rt::sample_node("MaxPool", 1, 2,
                                  {{"kernel_shape", dl::rt::attr_ints({1, 2, 2})}, {"strides", dl::rt::attr_ints({1, 2, 2})}},
                                  12);
  OpRun run(node, {Tensor::floats({n, c, d, h, w}, xv)});
  run.forward();
  CHECK(run.outputs[0].fvec() == ry);
  CHECK(run.outputs[1].ivec() == ri);
}

namespace {

struct PoolCase {
  std::vector<int64_t> k, s, pads, d;
  int64_t ceil;
};

// MaxPool on n x c planes of h x w against the definition: the maximum of the in-range
// taps from -inf, a strictly greater value replacing it (NaN skipped, the first maximum in
// row-major order wins), the index of the window's first in-range tap otherwise, and the
// lowest float and -1 for a window wholly in padding (counted into wholly_padding).
void check_pool(const PoolCase& cs, int64_t n, int64_t c, int64_t h, int64_t w, const std::vector<float>& xv,
                int64_t& wholly_padding) {
  const int64_t S = h * w;
  on_two_then_one([&](int) {
    auto node = dl::rt::sample_node("MaxPool", 1, 2,
                                    {{"kernel_shape", dl::rt::attr_ints(cs.k)},
                                     {"strides", dl::rt::attr_ints(cs.s)},
                                     {"pads", dl::rt::attr_ints(cs.pads)},
                                     {"dilations", dl::rt::attr_ints(cs.d)},
                                     {"ceil_mode", dl::rt::attr_i(cs.ceil)}},
                                    12);
    OpRun run(node, {Tensor::floats({n, c, h, w}, xv)});
    run.forward();
    const int64_t oh = run.outputs[0].dim(2), ow = run.outputs[0].dim(3);
    const std::vector<float> y = run.outputs[0].fvec();
    const std::vector<int64_t> idx = run.outputs[1].ivec();
    REQUIRE(int64_t(y.size()) == n * c * oh * ow);
    int64_t o = 0;
    for (int64_t pl = 0; pl < n * c; ++pl)
      for (int64_t r = 0; r < oh; ++r)
        for (int64_t q = 0; q < ow; ++q, ++o) {
          float best = -std::numeric_limits<float>::infinity();
          int64_t arg = -1;
          for (int64_t u = 0; u < cs.k[0]; ++u)
            for (int64_t v = 0; v < cs.k[1]; ++v) {
              const int64_t ih = r * cs.s[0] - cs.pads[0] + u * cs.d[0], iw = q * cs.s[1] - cs.pads[1] + v * cs.d[1];
              if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
              const float val = xv[size_t(pl * S + ih * w + iw)];
              if (arg < 0) arg = ih * w + iw;  // the first in-range tap, even if -inf or NaN
              if (val > best) best = val, arg = ih * w + iw;
            }
          if (arg < 0) best = std::numeric_limits<float>::lowest(), ++wholly_padding;
          INFO("output " << o << " of " << h << " x " << w);
          CHECK((y[size_t(o)] == best || (std::isnan(y[size_t(o)]) && std::isnan(best))));
          CHECK(idx[size_t(o)] == (arg < 0 ? -1 : pl * S + arg));
        }
  });
}

// Random values with ties, NaN and -inf among them.
std::vector<float> pool_input(int64_t n, unsigned seed) {
  std::vector<float> xv = random_values(n, seed);
  for (size_t i = 0; i < xv.size(); i += 5) xv[i] = std::round(xv[i] * 2) / 2;  // ties
  for (size_t i = 3; i < xv.size(); i += 97) xv[i] = std::nanf("");
  for (size_t i = 11; i < xv.size(); i += 89) xv[i] = -std::numeric_limits<float>::infinity();
  return xv;
}

}  // namespace

TEST_CASE("MaxPool with padding, dilation and ceil_mode: the definition (general and 3x3 stride 2 paths)") {
  // (kernel, strides, pads begin/end, dilations, ceil_mode) on 16 x 16 planes of 32 images x
  // 8 channels: large enough to run on two threads. resnet18's stem pool first.
  const PoolCase cases[] = {{{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0},
                            {{2, 2}, {1, 1}, {1, 1, 1, 1}, {2, 2}, 0},
                            {{3, 3}, {2, 2}, {1, 1, 0, 0}, {1, 1}, 1},
                            {{2, 3}, {3, 2}, {3, 1, 3, 1}, {2, 1}, 1}};  // first rows' windows wholly in padding
  const int64_t n = 32, c = 8, h = 16, w = 16;
  const std::vector<float> xv = pool_input(n * c * h * w, 77);
  for (const PoolCase& cs : cases) {
    CAPTURE(cs.k[1]);
    CAPTURE(cs.d[0]);
    int64_t wholly_padding = 0;
    check_pool(cs, n, c, h, w, xv, wholly_padding);
    if (cs.k[1] == 3 && cs.s[0] == 3) CHECK(wholly_padding > 0);
  }
}

TEST_CASE("MaxPool 3x3 stride 2 (its row-vector path): the definition on short, odd and wide rows, any padding") {
  // Rows shorter and longer than a vector's outputs, padding 0 to 3 on either side and
  // ceil_mode; pads of 3 give windows wholly in padding at a row's start or end (W of 1
  // and 2: every output in the padding but one or none). The 33 x 33 planes of 32 x 8
  // run on two threads.
  const PoolCase cases[] = {{{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0}, {{3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1},
                            {{3, 3}, {2, 2}, {0, 1, 1, 0}, {1, 1}, 0}, {{3, 3}, {2, 2}, {2, 2, 1, 1}, {1, 1}, 1},
                            {{3, 3}, {2, 2}, {1, 2, 1, 2}, {1, 1}, 1}, {{3, 3}, {2, 2}, {1, 3, 1, 0}, {1, 1}, 0},
                            {{3, 3}, {2, 2}, {3, 1, 0, 3}, {1, 1}, 0}};
  const int64_t sizes[][4] = {{2, 3, 3, 3}, {2, 3, 4, 5}, {2, 3, 7, 9}, {2, 3, 5, 34}, {2, 3, 9, 37},
                              {2, 3, 6, 70}, {2, 3, 3, 1}, {2, 3, 5, 2}, {32, 8, 33, 33}};
  unsigned seed = 5;
  int64_t wholly_padding = 0;
  for (const auto& sz : sizes)
    for (const PoolCase& cs : cases) {
      CAPTURE(sz[2]);
      CAPTURE(sz[3]);
      CAPTURE(cs.pads[1]);
      CAPTURE(cs.pads[3]);
      if (sz[2] + cs.pads[0] + cs.pads[2] < 3 || sz[3] + cs.pads[1] + cs.pads[3] < 3) continue;  // (no window fits)
      const std::vector<float> xv = pool_input(sz[0] * sz[1] * sz[2] * sz[3], ++seed);
      check_pool(cs, sz[0], sz[1], sz[2], sz[3], xv, wholly_padding);
    }
  CHECK(wholly_padding > 0);
}

TEST_CASE("MaxPool 1x3x3 stride 1x2x2 on a depth-1 3-D input: depth padding keeps it off the 2-D row path") {
  // Padding along depth gives two depth outputs, the first's windows wholly in padding.
  const int64_t n = 2, c = 3, h = 7, w = 9, S = h * w;
  const std::vector<float> xv = pool_input(n * c * S, 41);
  auto node = dl::rt::sample_node("MaxPool", 1, 2,
                                  {{"kernel_shape", dl::rt::attr_ints({1, 3, 3})},
                                   {"strides", dl::rt::attr_ints({1, 2, 2})},
                                   {"pads", dl::rt::attr_ints({1, 1, 1, 0, 1, 1})}},
                                  12);
  OpRun run(node, {Tensor::floats({n, c, 1, h, w}, xv)});
  run.forward();
  REQUIRE(run.outputs[0].shape() == dl::rt::Shape{n, c, 2, 4, 5});
  // Depth slice 0 is padding: the lowest float and -1; slice 1 the 2-D pool of the plane.
  const std::vector<float> y = run.outputs[0].fvec();
  const std::vector<int64_t> idx = run.outputs[1].ivec();
  for (int64_t pl = 0; pl < n * c; ++pl)
    for (int64_t o = 0; o < 20; ++o) {
      CHECK(y[size_t(pl * 40 + o)] == std::numeric_limits<float>::lowest());
      CHECK(idx[size_t(pl * 40 + o)] == -1);
    }
  // Slice 1 against the 2-D definition of each plane.
  OpRun flat(dl::rt::sample_node("MaxPool", 1, 2,
                                 {{"kernel_shape", dl::rt::attr_ints({3, 3})},
                                  {"strides", dl::rt::attr_ints({2, 2})},
                                  {"pads", dl::rt::attr_ints({1, 1, 1, 1})}},
                                 12),
             {Tensor::floats({n, c, h, w}, xv)});
  flat.forward();
  const std::vector<float> fy = flat.outputs[0].fvec();
  const std::vector<int64_t> fi = flat.outputs[1].ivec();
  for (int64_t pl = 0; pl < n * c; ++pl)
    for (int64_t o = 0; o < 20; ++o) {
      const float a = y[size_t(pl * 40 + 20 + o)], b = fy[size_t(pl * 20 + o)];
      CHECK((a == b || (std::isnan(a) && std::isnan(b))));
      CHECK(idx[size_t(pl * 40 + 20 + o)] == fi[size_t(pl * 20 + o)]);
    }
}

TEST_CASE("reduce_stats of a large tensor in parts: exact counts, the same bits on 1 and 2 threads, NaN found") {
  // 8 parts (the most) with a short last one; a ReLU-like output (dead zone at 0).
  const int64_t n = 5 * 65536 + 1234;
  std::vector<float> v = random_values(n, 11);
  for (float& x : v) x = std::max(x, 0.0f);
  v[size_t(n) - 1] = 7.0f;  // the maximum in the last part
  dl::rt::OpTraits traits;
  traits.role = dl::rt::OpTraits::Role::kActivation;
  traits.has_dead_zone = true;
  traits.out_lo = 0.0;
  const Tensor t = Tensor::floats({n / 2, 2}, std::vector<float>(v.begin(), v.begin() + (n / 2) * 2));
  const dl::an::OpDescription desc = dl::rt::describe(traits, t.shape());
  double sum = 0;
  int64_t zeros = 0;
  for (float x : t.fvec()) sum += x, zeros += x == 0.0f;
  dl::an::TensorStats s[2];
  on_two_then_one([&](int threads) {
    std::vector<uint8_t> flags;
    s[threads - 1] = dl::rt::reduce_stats(t, &desc, &flags);
  });
  CHECK(std::memcmp(&s[0], &s[1], sizeof s[0]) == 0);
  CHECK(s[0].count == uint32_t(t.numel()));
  CHECK(s[0].max == 7.0f);
  CHECK(s[0].min == 0.0f);
  CHECK(s[0].mean == doctest::Approx(sum / double(t.numel())).epsilon(1e-6));
  CHECK(s[0].zero_frac == doctest::Approx(double(zeros) / double(t.numel())));
  CHECK(s[0].dead_frac == s[0].zero_frac);
  std::vector<float> bad = t.fvec();
  bad[3 * 65536 + 5] = std::nanf("");
  const dl::an::TensorStats b = dl::rt::reduce_stats(Tensor::floats(t.shape(), bad), &desc, nullptr);
  CHECK(b.nan == 1);
  CHECK(std::isfinite(b.mean));
}

TEST_CASE("helper pool: a stall now and then is forgiven, stalls in quick succession back off") {
  dl::rt::StallScore s;
  for (int i = 0; i < 1000; ++i) CHECK_FALSE(s.back_off(i % 100 == 0));  // one loop in 100 stalls
  dl::rt::StallScore busy;
  CHECK_FALSE(busy.back_off(true));
  CHECK_FALSE(busy.back_off(true));
  CHECK(busy.back_off(true));  // three in a row
  CHECK_FALSE(busy.back_off(true));  // and the score starts again
  dl::rt::StallScore often;  // one loop in 10 stalls: ~5 in steady state
  bool backed_off = false;
  for (int i = 0; i < 200 && !backed_off; ++i) backed_off = often.back_off(i % 10 == 0);
  CHECK(backed_off);
}

TEST_CASE("helper pool: back-offs start short and grow while they recur") {
  using dl::rt::BackOffPeriod;
  BackOffPeriod b;
  int64_t now = 1000;
  CHECK(b.next(now) == BackOffPeriod::kFirstUs);  // a quiet machine's start-up stalls
  // A busy machine stalls again right after each back-off: 0.5, 1, 2, 4, then 5 s each.
  int64_t period = BackOffPeriod::kFirstUs;
  for (int64_t want : {500000, 1000000, 2000000, 4000000, 5000000, 5000000}) {
    now += period + 20000;
    period = b.next(now);
    CHECK(period == want);
  }
  // Quiet for kResetUs after the last one ended (not after it began): still 5 s.
  now += period + BackOffPeriod::kResetUs;
  period = b.next(now);
  CHECK(period == BackOffPeriod::kMaxUs);
  // Quiet for longer than that: short again.
  now += period + BackOffPeriod::kResetUs + 1;
  CHECK(b.next(now) == BackOffPeriod::kFirstUs);
}
