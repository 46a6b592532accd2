// The GEMM kernel behind Gemm/MatMul/Conv: every transpose combination, overwrite and
// accumulate, strided output, vector shapes, and products large enough to be split
// across threads (block-parallel), against a double-precision reference; the
// vectorised statistics pass against the exact one; the GEMM scratch's failed allocation;
// sum_of's short rows against its lane tree.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "runtime/ops/gemm_kernel.h"
#include "runtime/ops/eigen_map.h"
#include "runtime/ops/gemm_scratch.h"
#include "runtime/parallel.h"
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
  // Above the parallel threshold, split along C's columns (wide) and along its rows
  // (a busy machine may make the pool back off to one thread: results are the same).
  CHECK(dl::rt::gemm_threads(64, 784, 256) >= 1);
  check_product(64, 784, 256, false, true, true, 0);
  check_product(300, 40, 700, true, false, false, 5);
  check_product(256, 512, 520, false, false, true, 0);  // two blocks per thread
  // Deterministic: the same split gives bit-identical results run after run.
  const std::vector<float> a = random_values(256 * 512, 4), b = random_values(512 * 520, 5);
  std::vector<float> c1(256 * 520), c2(256 * 520);
  dl::rt::gemm(256, 520, 512, 1.0f, {a.data(), 512, false}, {b.data(), 520, false}, c1.data(), 520, false);
  dl::rt::gemm(256, 520, 512, 1.0f, {a.data(), 512, false}, {b.data(), 520, false}, c2.data(), 520, false);
  CHECK(c1 == c2);
  // Bit-identical to the single-threaded product: blocks keep Eigen's depth blocking, so
  // every element sums in the same order whatever the thread count.
  for (bool tb : {false, true}) {
    const int64_t m = 256, n = 520, k = 512;
    const std::vector<float> bb = random_values(size_t(k * n), 9);
    std::vector<float> par(size_t(m * n)), ser(size_t(m * n));
    dl::rt::set_compute_threads(2);
    dl::rt::gemm(m, n, k, 1.0f, {a.data(), k, false}, {bb.data(), tb ? k : n, tb}, par.data(), n, false);
    dl::rt::set_compute_threads(1);
    dl::rt::gemm(m, n, k, 1.0f, {a.data(), k, false}, {bb.data(), tb ? k : n, tb}, ser.data(), n, false);
    CHECK(par == ser);
  }
  dl::rt::set_compute_threads(1);
  CHECK(dl::rt::gemm_threads(64, 784, 256) == 1);
  check_product(64, 784, 256, true, true, false, 1);
  dl::rt::set_compute_threads(0);
}

TEST_CASE("gemm kernel: shallow products cut by rows give the serial bits") {
  // Depth 16 and 64 (a 1x1 Conv's dW over 16 images of one position, of 64 images): cut
  // along C's rows even where C is wider than tall (split_columns in gemm_kernel.cpp);
  // deep ones along its columns. Helpers always on, so the products are split.
  dl::rt::set_helper_policy(dl::rt::HelperPolicy::kAlways);
  // (Uneven cuts too: 326 rows in blocks of 4, 1000 columns in blocks of 48.)
  for (const auto& s : std::vector<std::array<int64_t, 3>>{
           {320, 960, 16}, {1280, 320, 16}, {326, 958, 16}, {96, 2304, 64}, {64, 784, 256}, {64, 1000, 256}}) {
    const int64_t m = s[0], n = s[1], k = s[2];
    INFO("m " << m << " n " << n << " k " << k);
    const std::vector<float> a = random_values(size_t(m * k), 11), b = random_values(size_t(k * n), 12);
    std::vector<float> par(size_t(m * n)), ser(size_t(m * n));
    dl::rt::set_compute_threads(2);
    CHECK(dl::rt::gemm_threads(m, n, k) == 2);
    dl::rt::gemm(m, n, k, 1.0f, {a.data(), k, false}, {b.data(), k, true}, par.data(), n, false);
    dl::rt::set_compute_threads(1);
    dl::rt::gemm(m, n, k, 1.0f, {a.data(), k, false}, {b.data(), k, true}, ser.data(), n, false);
    CHECK(par == ser);
    dl::rt::set_compute_threads(2);
    check_product(m, n, k, false, true, true, 0);
  }
  dl::rt::set_helper_policy(dl::rt::HelperPolicy::kAuto);
  dl::rt::set_compute_threads(0);
}

TEST_CASE("dot_dev: a short row whose product underflows below zero sums to +0, as the whole tree") {
  // g * (p - m) = -1e-50: where the compiler contracts the lane's 0 + g * (p - m) into
  // fma(g, p - m, 0), the lane is -0 (GCC's default -ffp-contract=fast may, per call
  // site); the 16-lane tree adds +0 lanes to it: +0. (This build need not contract.)
  const float g[1] = {-1e-30f}, p[1] = {1e-20f};
  const float s = dl::rt::dot_dev(g, p, 1, 0.0f);
  CHECK(s == 0.0f);
  CHECK_FALSE(std::signbit(s));
}

TEST_CASE("sum_of: rows shorter than a vector give the whole lane tree's bits") {
  // The tree over kLanes lanes, as sum_of sums rows of kLanes values or more.
  const auto tree = [](const std::vector<float>& v) {
    float acc[16] = {};
    for (size_t j = 0; j < v.size(); ++j) acc[j] += v[j];
    for (int w = 8; w > 0; w /= 2)
      for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
    return acc[0];
  };
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::mt19937_64 rng(21);
  std::uniform_real_distribution<float> u(-1e3f, 1e3f);
  for (int64_t n = 0; n < 16; ++n)
    for (int trial = 0; trial < 40; ++trial) {
      std::vector<float> v(static_cast<size_t>(n));
      for (float& x : v) x = u(rng);
      if (n > 0 && trial % 4 == 1) v[size_t(trial) % size_t(n)] = -0.0f;
      if (n > 0 && trial == 2) std::fill(v.begin(), v.end(), -0.0f);
      if (n > 0 && trial == 6) v[0] = inf;
      if (n > 1 && trial == 10) v[1] = -inf, v[0] = inf;
      if (n > 0 && trial == 14) v[size_t(n) - 1] = nan;
      INFO("n " << n << " trial " << trial);
      const float want = tree(v), got = dl::rt::sum_of(v.data(), n);
      if (std::isnan(want)) {
        CHECK(std::isnan(got));
      } else {
        CHECK(std::memcmp(&want, &got, sizeof got) == 0);
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

namespace {
int g_alloc_calls = 0;
bool g_fail_alloc = false;
void* test_alloc(size_t align, size_t bytes) {
  ++g_alloc_calls;
  return g_fail_alloc ? nullptr : std::aligned_alloc(align, bytes);
}
}  // namespace

TEST_CASE("gemm scratch: a failed allocation leaves the old buffer valid and owned") {
  g_alloc_calls = 0;
  g_fail_alloc = false;
  {
    dl::rt::ScratchBuffer s(&test_alloc);
    float* p = s.reserve(100);
    REQUIRE(p != nullptr);
    const size_t have = s.capacity();
    CHECK(have >= 100);
    for (size_t i = 0; i < have; ++i) p[i] = float(i);
    g_fail_alloc = true;
    CHECK_THROWS_AS(s.reserve(have * 4), std::bad_alloc);
    CHECK(s.capacity() == have);  // not the size it failed to get
    CHECK(s.data() == p);         // the old block, still owned (freed once, by the destructor)
    CHECK(s.reserve(have) == p);  // a request that fits reuses it without allocating
    CHECK(p[have - 1] == float(have - 1));
    // A size whose byte count overflows is refused before asking the allocator.
    const int calls = g_alloc_calls;
    CHECK_THROWS_AS(s.reserve(SIZE_MAX / 2), std::bad_alloc);
    CHECK(g_alloc_calls == calls);
    CHECK(s.data() == p);
    g_fail_alloc = false;
    float* q = s.reserve(have * 4);
    CHECK(q != nullptr);
    CHECK(s.capacity() >= have * 4);
  }
}
