// The GEMM kernel behind Gemm/MatMul/Conv: every transpose combination, overwrite and
// accumulate, strided output, vector shapes, and products large enough to be split
// across threads (block-parallel), against a double-precision reference; and the
// optimizer's update norms against a copy-and-diff of the weights.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "runtime/ops/gemm_kernel.h"
#include "runtime/optimizer.h"
#include "runtime/probes.h"
#include "runtime/threads.h"

namespace {

std::vector<float> random_values(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// op(X)(i, j) for a row-major buffer.
float at(const std::vector<float>& x, int64_t ld, bool trans, int64_t i, int64_t j) {
  return trans ? x[size_t(j * ld + i)] : x[size_t(i * ld + j)];
}

void check_product(int64_t m, int64_t n, int64_t k, bool ta, bool tb, bool accumulate, int64_t ldc_pad) {
  INFO("m " << m << " n " << n << " k " << k << " transA " << ta << " transB " << tb << " accumulate " << accumulate);
  const int64_t lda = ta ? m : k, ldb = tb ? k : n, ldc = n + ldc_pad;
  const std::vector<float> a = random_values(size_t(m * k), 1), b = random_values(size_t(k * n), 2);
  std::vector<float> c = random_values(size_t(m * ldc), 3);
  const std::vector<float> c0 = c;
  const float alpha = 0.75f;
  dl::rt::gemm(m, n, k, alpha, {a.data(), lda, ta}, {b.data(), ldb, tb}, c.data(), ldc, accumulate);
  double worst = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double ref = accumulate ? double(c0[size_t(i * ldc + j)]) : 0.0;
      for (int64_t p = 0; p < k; ++p) ref += double(alpha) * at(a, lda, ta, i, p) * at(b, ldb, tb, p, j);
      worst = std::max(worst, std::fabs(ref - double(c[size_t(i * ldc + j)])) / (1.0 + std::sqrt(double(k))));
    }
    for (int64_t j = n; j < ldc; ++j) REQUIRE(c[size_t(i * ldc + j)] == c0[size_t(i * ldc + j)]);  // padding untouched
  }
  CHECK(worst < 1e-5);
}

}  // namespace

TEST_CASE("gemm kernel: transposes, accumulate, strides, vector shapes") {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool acc : {false, true}) {
        check_product(7, 5, 3, ta, tb, acc, 0);
        check_product(33, 70, 129, ta, tb, acc, 3);
        check_product(1, 17, 9, ta, tb, acc, 0);
        check_product(17, 1, 9, ta, tb, acc, 2);
      }
  check_product(4, 6, 0, false, false, false, 0);  // k = 0 writes zeros
}

TEST_CASE("gemm kernel: products split across threads match the serial result") {
  dl::rt::set_compute_threads(2);
  // Above the parallel threshold, split along C's columns (m <= n) and along its rows.
  REQUIRE(dl::rt::gemm_threads(64, 784, 256) == 2);
  check_product(64, 784, 256, false, true, true, 0);
  check_product(300, 40, 700, true, false, false, 5);
  check_product(256, 512, 520, false, false, true, 0);  // two blocks per thread
  // Deterministic: the same split gives bit-identical results run after run.
  const std::vector<float> a = random_values(256 * 512, 4), b = random_values(512 * 520, 5);
  std::vector<float> c1(256 * 520), c2(256 * 520);
  dl::rt::gemm(256, 520, 512, 1.0f, {a.data(), 512, false}, {b.data(), 520, false}, c1.data(), 520, false);
  dl::rt::gemm(256, 520, 512, 1.0f, {a.data(), 512, false}, {b.data(), 520, false}, c2.data(), 520, false);
  CHECK(c1 == c2);
  dl::rt::set_compute_threads(1);
  CHECK(dl::rt::gemm_threads(64, 784, 256) == 1);
  check_product(64, 784, 256, true, true, false, 1);
  dl::rt::set_compute_threads(0);
}

TEST_CASE("optimizer update norms equal the change of the weights") {
  for (const char* name : {"sgd", "adam", "rmsprop"}) {
    INFO(name);
    dl::rt::OptimizerConfig cfg;
    cfg.name = name;
    cfg.learning_rate = 0.1;
    auto opt = dl::rt::make_optimizer(cfg);
    // Two parameters, one longer than the optimizer's chunk, one with a NaN gradient.
    dl::rt::Tensor w1 = dl::rt::Tensor::floats({5000}, random_values(5000, 6));
    dl::rt::Tensor g1 = dl::rt::Tensor::floats({5000}, random_values(5000, 7));
    dl::rt::Tensor w2 = dl::rt::Tensor::floats({3}, {1.0f, 2.0f, 3.0f});
    dl::rt::Tensor g2 = dl::rt::Tensor::floats({3}, {0.5f, NAN, -0.5f});
    std::vector<dl::rt::Param> params = {{"w1", &w1, &g1}, {"w2", &w2, &g2}};
    for (int step = 0; step < 2; ++step) {
      const std::vector<float> before1 = w1.fvec(), before2 = w2.fvec();
      opt->step(params, /*track_updates=*/true);
      double want = 0;
      for (size_t k = 0; k < before1.size(); ++k) {
        const double d = double(w1.f()[k]) - before1[k];
        want += d * d;
      }
      const auto& norms = opt->update_norms();
      REQUIRE(norms.size() == 2);
      CHECK(norms[0].squared == doctest::Approx(want).epsilon(1e-4));
      CHECK(norms[0].nonfinite == 0);
      CHECK(norms[1].nonfinite == 1);
      const double d0 = double(w2.f()[0]) - before2[0], d2 = double(w2.f()[2]) - before2[2];
      CHECK(norms[1].squared == doctest::Approx(d0 * d0 + d2 * d2).epsilon(1e-5));
    }
  }
}

TEST_CASE("reduce_stats: vectorised path equals the exact reduction; NaN/Inf counted") {
  std::vector<float> v = random_values(1000, 8);
  for (size_t k = 0; k < v.size(); k += 7) v[k] = 0.0f;
  for (float& x : v) x = std::max(x, -0.25f);  // a dead zone at -0.25
  dl::rt::Tensor t = dl::rt::Tensor::floats({10, 100}, v);
  dl::rt::OpTraits traits;
  traits.role = dl::rt::OpTraits::Role::kActivation;
  traits.has_dead_zone = true;
  traits.out_lo = -0.25;
  traits.out_hi = 1.0;
  traits.saturates = true;
  const dl::an::OpDescription desc = dl::rt::describe(traits, t.shape());
  std::vector<uint8_t> flags;
  const dl::an::TensorStats s = dl::rt::reduce_stats(t, &desc, &flags);
  double sum = 0, sumsq = 0, sumabs = 0;
  int64_t zeros = 0, dead = 0, sat = 0;
  float mn = v[0], mx = v[0];
  for (float x : v) {
    sum += x, sumsq += double(x) * x, sumabs += std::fabs(x);
    zeros += x == 0.0f, dead += x <= -0.25f;
    sat += (x <= float(-0.25 + 1e-3 * 1.25)) | (x >= float(1.0 - 1e-3 * 1.25));
    mn = std::min(mn, x), mx = std::max(mx, x);
  }
  CHECK(s.count == 1000);
  CHECK(s.nan == 0);
  CHECK(s.min == mn);
  CHECK(s.max == mx);
  CHECK(s.mean == doctest::Approx(sum / 1000).epsilon(1e-5));
  CHECK(s.l2 == doctest::Approx(std::sqrt(sumsq)).epsilon(1e-5));
  CHECK(s.mean_abs == doctest::Approx(sumabs / 1000).epsilon(1e-5));
  CHECK(s.zero_frac == doctest::Approx(double(zeros) / 1000));
  CHECK(s.dead_frac == doctest::Approx(double(dead) / 1000));
  CHECK(s.sat_frac == doctest::Approx(double(sat) / 1000));
  v[3] = NAN;
  v[500] = INFINITY;
  v[999] = -INFINITY;
  const dl::an::TensorStats bad = dl::rt::reduce_stats(dl::rt::Tensor::floats({10, 100}, v), nullptr, nullptr);
  CHECK(bad.nan == 1);
  CHECK(bad.inf == 2);
  CHECK(std::isfinite(bad.mean));
  CHECK(std::isfinite(bad.max));
}
