// The GEMM kernel behind Gemm/MatMul/Conv: every transpose combination, overwrite and
// accumulate, strided output, vector shapes, and products large enough to be split
// across threads (block-parallel), against a double-precision reference; and the
// optimizer's update norms against a copy-and-diff of the weights.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "runtime/ops/gemm_kernel.h"
#include "runtime/ops/gemm_scratch.h"
#include "runtime/optimizer.h"
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
  // Above the parallel threshold, split along C's columns (m <= n) and along its rows
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

namespace {

// Records what the optimizer shows an update observer.
// Records what the optimizer shows an update observer that takes the chunks of a
// parameter's parts in turn (not concurrent_parts).
struct ChunkLog : dl::rt::Optimizer::UpdateObserver {
  std::vector<std::vector<float>> grad, before, after;
  void on_chunk(size_t param, int64_t part, int64_t offset, const float* g, const float* b, const float* a,
                int64_t n) override {
    if (grad.size() <= param) grad.resize(param + 1), before.resize(param + 1), after.resize(param + 1);
    REQUIRE(int64_t(after[param].size()) == offset);  // chunks in order, no gaps
    REQUIRE(part >= 0);
    REQUIRE(part < dl::rt::kMaxElementwiseParts);
    grad[param].insert(grad[param].end(), g, g + n);
    before[param].insert(before[param].end(), b, b + n);
    after[param].insert(after[param].end(), a, a + n);
  }
};

// One that takes the parts of a parameter at once (on the compute threads): each part's
// chunks in order, within the part's fixed range; records the update per value.
struct PartLog : dl::rt::Optimizer::UpdateObserver {
  explicit PartLog(int64_t n) : n(n), change(size_t(n), 0.0f), next(size_t(dl::rt::kMaxElementwiseParts), -1) {}
  int64_t n;
  std::vector<float> change;
  std::vector<int64_t> next;  // per part: where its next chunk starts
  std::vector<int> bad = std::vector<int>(size_t(dl::rt::kMaxElementwiseParts), 0);  // per part (threads)
  bool concurrent_parts(size_t) const override { return true; }
  void on_chunk(size_t, int64_t part, int64_t offset, const float*, const float* b, const float* a,
                int64_t len) override {
    int64_t lo, hi;
    dl::rt::part_range(n, dl::rt::elementwise_parts(n), part, lo, hi);
    int64_t& at = next[size_t(part)];
    if (at < 0) at = lo;
    bad[size_t(part)] |= offset != at || offset + len > hi;  // (REQUIRE is not thread-safe)
    at = offset + len;
    for (int64_t k = 0; k < len; ++k) change[size_t(offset + k)] = a[k] - b[k];
  }
};

}  // namespace

TEST_CASE("optimizer: chunked update with an observer is the same update, observed exactly") {
  // Every rule and variant: each copies the old weights for the observer in its own loop
  // (opt_detail::each_value).
  struct Rule {
    const char* name;
    double momentum;
    bool nesterov;
  };
  for (const Rule& rule : {Rule{"sgd", 0, false}, Rule{"sgd", 0.9, false}, Rule{"sgd", 0.9, true}, Rule{"adam", 0, false},
                           Rule{"rmsprop", 0, false}, Rule{"rmsprop", 0.5, false}, Rule{"adagrad", 0, false},
                           Rule{"adadelta", 0, false}, Rule{"adamax", 0, false}, Rule{"nadam", 0, false}})
    for (bool clip : {true, false}) {
      const std::string label = std::string(rule.name) + " momentum " + std::to_string(rule.momentum) +
                                (rule.nesterov ? " nesterov" : "") + (clip ? " clipped" : "");
      INFO(label);
      dl::rt::OptimizerConfig cfg;
      cfg.name = rule.name;
      cfg.momentum = rule.momentum;
      cfg.nesterov = rule.nesterov;
      cfg.learning_rate = 0.1;
      if (clip) cfg.clipvalue = 0.9;  // the observer sees the raw gradient, the update uses the clipped one
      auto plain = dl::rt::make_optimizer(cfg), watched = dl::rt::make_optimizer(cfg);
      // One parameter longer than a chunk (its last chunk ends in a partial vector), one
      // shorter than a vector (the loops' scalar remainders).
      const std::vector<float> w1v = random_values(5001, 6), g1v = random_values(5001, 7);
      dl::rt::Tensor w1 = dl::rt::Tensor::floats({5001}, w1v), g1 = dl::rt::Tensor::floats({5001}, g1v);
      dl::rt::Tensor w2 = dl::rt::Tensor::floats({3}, {1.0f, 2.0f, 3.0f}), g2 = dl::rt::Tensor::floats({3}, {0.5f, 1.5f, -0.5f});
      dl::rt::Tensor v1 = w1, h1 = g1, v2 = w2, h2 = g2;
      std::vector<dl::rt::Param> p = {{"w1", &w1, &g1}, {"w2", &w2, &g2}}, q = {{"w1", &v1, &h1}, {"w2", &v2, &h2}};
      for (int step = 0; step < 3; ++step) {
        const std::vector<float> before1 = v1.fvec(), before2 = v2.fvec();
        plain->step(p);
        ChunkLog log;
        watched->step(q, &log);
        CHECK(w1.fvec() == v1.fvec());  // bit-identical
        CHECK(w2.fvec() == v2.fvec());
        REQUIRE(log.after.size() == 2);
        CHECK(log.before[0] == before1);
        CHECK(log.before[1] == before2);
        CHECK(log.after[0] == v1.fvec());
        CHECK(log.after[1] == v2.fvec());
        CHECK(log.grad[0] == h1.fvec());
        CHECK(log.grad[1] == h2.fvec());
      }
    }
}

TEST_CASE("optimizer: a large parameter's parts on two threads are the serial update, each part observed in order") {
  const int64_t n = 300000;  // several parts (runtime/parallel.h)
  REQUIRE(dl::rt::elementwise_parts(n) > 1);
  dl::rt::OptimizerConfig cfg;
  cfg.name = "adam";
  cfg.learning_rate = 0.01;
  // The reference: the same values as ten parameters of one part each.
  std::vector<float> reference;
  {
    auto opt = dl::rt::make_optimizer(cfg);
    const std::vector<float> wv = random_values(size_t(n), 9), gv = random_values(size_t(n), 10);
    const int64_t piece = n / 10;
    REQUIRE(dl::rt::elementwise_parts(piece) == 1);
    std::vector<dl::rt::Tensor> ws, gs;
    for (int64_t k = 0; k < 10; ++k) {
      ws.push_back(dl::rt::Tensor::floats({piece}, std::vector<float>(wv.begin() + k * piece, wv.begin() + (k + 1) * piece)));
      gs.push_back(dl::rt::Tensor::floats({piece}, std::vector<float>(gv.begin() + k * piece, gv.begin() + (k + 1) * piece)));
    }
    std::vector<dl::rt::Param> p;
    for (size_t k = 0; k < ws.size(); ++k) p.push_back({"w" + std::to_string(k), &ws[k], &gs[k]});
    for (int step = 0; step < 2; ++step) opt->step(p);
    for (const dl::rt::Tensor& w : ws) reference.insert(reference.end(), w.f(), w.f() + piece);
  }
  std::vector<std::vector<float>> results;
  dl::rt::set_helper_policy(dl::rt::HelperPolicy::kAlways);  // two threads really used
  for (int threads : {1, 2}) {
    dl::rt::set_compute_threads(threads);
    for (bool observed : {false, true}) {
      auto opt = dl::rt::make_optimizer(cfg);
      dl::rt::Tensor w = dl::rt::Tensor::floats({n}, random_values(size_t(n), 9)),
                     g = dl::rt::Tensor::floats({n}, random_values(size_t(n), 10));
      std::vector<dl::rt::Param> p = {{"w", &w, &g}};
      for (int step = 0; step < 2; ++step) {
        const std::vector<float> before = w.fvec();
        PartLog log(n);
        opt->step(p, observed ? &log : nullptr);
        if (!observed) continue;
        for (int b : log.bad) CHECK(b == 0);
        int64_t seen = 0;
        for (int64_t part = 0; part < dl::rt::elementwise_parts(n); ++part) {
          int64_t lo, hi;
          dl::rt::part_range(n, dl::rt::elementwise_parts(n), part, lo, hi);
          CHECK(log.next[size_t(part)] == hi);  // every chunk of every part
          seen += hi - lo;
        }
        CHECK(seen == n);
        bool exact = true;
        for (int64_t k = 0; k < n; ++k) exact = exact && log.change[size_t(k)] == w.f()[k] - before[size_t(k)];
        CHECK(exact);
      }
      results.push_back(w.fvec());
    }
  }
  dl::rt::set_compute_threads(0);
  dl::rt::set_helper_policy(dl::rt::HelperPolicy::kAuto);
  REQUIRE(results.size() == 4);
  for (const auto& r : results) CHECK(r == reference);  // bit-identical for any thread count, observed or not
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
