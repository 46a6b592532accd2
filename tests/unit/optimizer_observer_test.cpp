// The optimizer under an update observer (runtime/optimizer.h): chunked and observed,
// the same update as unobserved, bit for bit, for every rule, on any thread count; the
// statistics a rule takes in its own loop (UpdateObserver::chunk_sums) are what
// stats::add_param_chunk takes after it; and each rule's vector lanes and scalar tail
// compute the same update (runtime/optimizer_impl.h, each_vector).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "runtime/optimizer.h"
#include "runtime/parallel.h"
#include "runtime/probe_stats.h"
#include "runtime/threads.h"
#include "runtime/value_simd.h"
#include "tests/unit/parallel_test_util.h"

namespace {

namespace rt = dl::rt;
namespace stats = dl::rt::stats;

using dl::test::random_values;

// Every rule and variant.
struct Rule {
  const char* name;
  double momentum;
  bool nesterov;
};
const Rule kRules[] = {{"sgd", 0, false},     {"sgd", 0.9, false},     {"sgd", 0.9, true},     {"adam", 0, false},
                       {"rmsprop", 0, false}, {"rmsprop", 0.5, false}, {"adagrad", 0, false},  {"adadelta", 0, false},
                       {"adamax", 0, false},  {"nadam", 0, false}};
rt::OptimizerConfig config(const Rule& rule) {
  rt::OptimizerConfig cfg;
  cfg.name = rule.name;
  cfg.momentum = rule.momentum;
  cfg.nesterov = rule.nesterov;
  cfg.learning_rate = 0.1;
  return cfg;
}
// Bit for bit (NaN included).
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}
std::string label(const Rule& rule) {
  return std::string(rule.name) + " momentum " + std::to_string(rule.momentum) + (rule.nesterov ? " nesterov" : "");
}

// Records what the optimizer shows an update observer that takes the chunks of a
// parameter's parts in turn (not concurrent_parts).
struct ChunkLog : rt::Optimizer::UpdateObserver {
  std::vector<std::vector<float>> grad, before, after;
  void on_chunk(size_t param, int64_t part, int64_t offset, const float* g, const float* b, const float* a,
                int64_t n) override {
    if (grad.size() <= param) grad.resize(param + 1), before.resize(param + 1), after.resize(param + 1);
    REQUIRE(int64_t(after[param].size()) == offset);  // chunks in order, no gaps
    REQUIRE(part >= 0);
    REQUIRE(part < rt::kMaxElementwiseParts);
    grad[param].insert(grad[param].end(), g, g + n);
    before[param].insert(before[param].end(), b, b + n);
    after[param].insert(after[param].end(), a, a + n);
  }
};

// One that takes the parts of a parameter at once (on the compute threads): each part's
// chunks in order, within the part's fixed range; records the update per value.
struct PartLog : rt::Optimizer::UpdateObserver {
  explicit PartLog(int64_t n) : n(n), change(size_t(n), 0.0f), next(size_t(rt::kMaxElementwiseParts), -1) {}
  int64_t n;
  std::vector<float> change;
  std::vector<int64_t> next;  // per part: where its next chunk starts
  std::vector<int> bad = std::vector<int>(size_t(rt::kMaxElementwiseParts), 0);  // per part (threads)
  bool concurrent_parts(size_t) const override { return true; }
  void on_chunk(size_t, int64_t part, int64_t offset, const float*, const float* b, const float* a,
                int64_t len) override {
    int64_t lo, hi;
    rt::part_range(n, rt::elementwise_parts(n), part, lo, hi);
    int64_t& at = next[size_t(part)];
    if (at < 0) at = lo;
    bad[size_t(part)] |= offset != at || offset + len > hi;  // (REQUIRE is not thread-safe)
    at = offset + len;
    for (int64_t k = 0; k < len; ++k) change[size_t(offset + k)] = a[k] - b[k];
  }
};

}  // namespace

TEST_CASE("optimizer: chunked update with an observer is the same update, observed exactly") {
  // Each rule copies the old weights for the observer in its own loop (opt_detail::each_vector).
  for (const Rule& rule : kRules)
    for (bool clip : {true, false}) {
      const std::string what = label(rule) + (clip ? " clipped" : "");
      INFO(what);
      rt::OptimizerConfig cfg = config(rule);
      if (clip) cfg.clipvalue = 0.9;  // the observer sees the raw gradient, the update uses the clipped one
      auto plain = rt::make_optimizer(cfg), watched = rt::make_optimizer(cfg);
      // One parameter longer than a chunk (its last chunk ends in a partial vector), one
      // shorter than a vector (the loops' scalar remainders).
      const std::vector<float> w1v = random_values(5001, 6), g1v = random_values(5001, 7);
      rt::Tensor w1 = rt::Tensor::floats({5001}, w1v), g1 = rt::Tensor::floats({5001}, g1v);
      rt::Tensor w2 = rt::Tensor::floats({3}, {1.0f, 2.0f, 3.0f}), g2 = rt::Tensor::floats({3}, {0.5f, 1.5f, -0.5f});
      rt::Tensor v1 = w1, h1 = g1, v2 = w2, h2 = g2;
      std::vector<rt::Param> p = {{"w1", &w1, &g1}, {"w2", &w2, &g2}}, q = {{"w1", &v1, &h1}, {"w2", &v2, &h2}};
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
  REQUIRE(rt::elementwise_parts(n) > 1);
  rt::OptimizerConfig cfg;
  cfg.name = "adam";
  cfg.learning_rate = 0.01;
  // The reference: the same values as ten parameters of one part each.
  std::vector<float> reference;
  {
    auto opt = rt::make_optimizer(cfg);
    const std::vector<float> wv = random_values(size_t(n), 9), gv = random_values(size_t(n), 10);
    const int64_t piece = n / 10;
    REQUIRE(rt::elementwise_parts(piece) == 1);
    std::vector<rt::Tensor> ws, gs;
    for (int64_t k = 0; k < 10; ++k) {
      ws.push_back(rt::Tensor::floats({piece}, std::vector<float>(wv.begin() + k * piece, wv.begin() + (k + 1) * piece)));
      gs.push_back(rt::Tensor::floats({piece}, std::vector<float>(gv.begin() + k * piece, gv.begin() + (k + 1) * piece)));
    }
    std::vector<rt::Param> p;
    for (size_t k = 0; k < ws.size(); ++k) p.push_back({"w" + std::to_string(k), &ws[k], &gs[k]});
    for (int step = 0; step < 2; ++step) opt->step(p);
    for (const rt::Tensor& w : ws) reference.insert(reference.end(), w.f(), w.f() + piece);
  }
  std::vector<std::vector<float>> results;
  rt::set_helper_policy(rt::HelperPolicy::kAlways);  // two threads really used
  for (int threads : {1, 2}) {
    rt::set_compute_threads(threads);
    for (bool observed : {false, true}) {
      auto opt = rt::make_optimizer(cfg);
      rt::Tensor w = rt::Tensor::floats({n}, random_values(size_t(n), 9)),
                     g = rt::Tensor::floats({n}, random_values(size_t(n), 10));
      std::vector<rt::Param> p = {{"w", &w, &g}};
      for (int step = 0; step < 2; ++step) {
        const std::vector<float> before = w.fvec();
        PartLog log(n);
        opt->step(p, observed ? &log : nullptr);
        if (!observed) continue;
        for (int b : log.bad) CHECK(b == 0);
        int64_t seen = 0;
        for (int64_t part = 0; part < rt::elementwise_parts(n); ++part) {
          int64_t lo, hi;
          rt::part_range(n, rt::elementwise_parts(n), part, lo, hi);
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
  rt::set_compute_threads(0);
  rt::set_helper_policy(rt::HelperPolicy::kAuto);
  REQUIRE(results.size() == 4);
  for (const auto& r : results) CHECK(r == reference);  // bit-identical for any thread count, observed or not
}

namespace {

// Takes every chunk's statistics from the rule's loop (chunk_sums), per parameter; logs
// any chunk that still comes to on_chunk.
struct SumsLog : rt::Optimizer::UpdateObserver {
  std::vector<stats::ParamSums> sums = std::vector<stats::ParamSums>(2);
  int64_t chunks = 0;
  void on_chunk(size_t, int64_t, int64_t, const float*, const float*, const float*, int64_t) override { ++chunks; }
  stats::ParamSums* chunk_sums(size_t param, int64_t) override { return &sums[param]; }
};
// Computes them after each chunk's update (add_param_chunk, as for a clipped gradient).
struct AfterLog : rt::Optimizer::UpdateObserver {
  std::vector<stats::ParamSums> sums = std::vector<stats::ParamSums>(2);
  void on_chunk(size_t param, int64_t, int64_t, const float* g, const float* b, const float* a, int64_t n) override {
    stats::add_param_chunk(g, b, a, n, sums[param]);
  }
};

// Both take stats::ParamChunk's blocks: the same sums, bit for bit.
void check_sums(const stats::Sums& got, const stats::Sums& want) {
  CHECK(got.nan == want.nan);
  CHECK(got.inf == want.inf);
  CHECK(got.mn == want.mn);
  CHECK(got.mx == want.mx);
  CHECK(std::memcmp(&got.sum, &want.sum, sizeof got.sum) == 0);
  CHECK(std::memcmp(&got.sumsq, &want.sumsq, sizeof got.sumsq) == 0);
}

}  // namespace

TEST_CASE("optimizer: statistics taken in the rule's own loop are add_param_chunk's, and the update is the same") {
  for (const Rule& rule : kRules)
    for (bool nan : {false, true}) {
      const std::string what = label(rule) + (nan ? " NaN gradient" : "");
      INFO(what);
      auto plain = rt::make_optimizer(config(rule)), fused = rt::make_optimizer(config(rule)),
           after = rt::make_optimizer(config(rule));
      // One parameter of three chunks, the last ending in a partial vector; one shorter
      // than a vector.
      std::vector<float> gv = random_values(5001, 17);
      if (nan) gv[4100] = std::numeric_limits<float>::quiet_NaN(), gv[7] = std::numeric_limits<float>::infinity();
      rt::Tensor w[3], g[3], u[3], h[3];
      std::vector<rt::Param> p[3];
      for (int k = 0; k < 3; ++k) {
        w[k] = rt::Tensor::floats({5001}, random_values(5001, 16));
        g[k] = rt::Tensor::floats({5001}, gv);
        u[k] = rt::Tensor::floats({3}, {1.0f, -2.0f, 3.0f});
        h[k] = rt::Tensor::floats({3}, {0.5f, 1.5f, -0.5f});
        p[k] = {{"w", &w[k], &g[k]}, {"u", &u[k], &h[k]}};
      }
      for (int step = 0; step < 3; ++step) {
        SumsLog got;
        AfterLog want;
        plain->step(p[0]);
        fused->step(p[1], &got);
        after->step(p[2], &want);
        CHECK(got.chunks == 0);  // no chunk went to on_chunk
        CHECK(same_bits(w[1].fvec(), w[0].fvec()));
        CHECK(same_bits(u[1].fvec(), u[0].fvec()));
        CHECK(same_bits(w[2].fvec(), w[0].fvec()));
        for (size_t k = 0; k < 2; ++k) {
          check_sums(got.sums[k].grad, want.sums[k].grad);
          check_sums(got.sums[k].weight, want.sums[k].weight);
          CHECK(got.sums[k].update.nonfinite == want.sums[k].update.nonfinite);
          CHECK(got.sums[k].update.sq == want.sums[k].update.sq);
          CHECK(std::isfinite(got.sums[k].update.sq));
        }
        CHECK(got.sums[0].grad.nan == (nan ? 1u : 0u));
        CHECK(got.sums[0].grad.inf == (nan ? 1u : 0u));
      }
    }
}

TEST_CASE("optimizer: a clipped gradient's chunks still go to on_chunk (the statistics are the raw gradient's)") {
  rt::OptimizerConfig cfg = config(kRules[3]);
  cfg.clipvalue = 0.5;
  auto opt = rt::make_optimizer(cfg);
  rt::Tensor w = rt::Tensor::floats({5001}, random_values(5001, 18)), g = rt::Tensor::floats({5001}, random_values(5001, 19));
  std::vector<rt::Param> p = {{"w", &w, &g}};
  SumsLog log;
  opt->step(p, &log);
  CHECK(log.chunks == 3);
  CHECK(log.sums[0].grad.sum == 0);
  CHECK(log.sums[0].grad.mx == -std::numeric_limits<float>::infinity());  // untouched
}

TEST_CASE("optimizer: every rule's vector lanes and scalar remainder compute the same update") {
  // (The rules are generic lambdas run on vectors and on single floats: the same
  // expressions must round alike, FMA contractions included.) 97 values as one
  // parameter (vectors, then a remainder) and as 97 parameters of one value (all scalar).
  for (const Rule& rule : kRules) {
    const std::string what = label(rule);
    INFO(what);
    auto whole = rt::make_optimizer(config(rule)), single = rt::make_optimizer(config(rule));
    const std::vector<float> wv = random_values(97, 20), gv = random_values(97, 21);
    rt::Tensor w = rt::Tensor::floats({97}, wv), g = rt::Tensor::floats({97}, gv);
    std::vector<rt::Param> p = {{"w", &w, &g}};
    std::vector<rt::Tensor> ws, gs;
    for (size_t k = 0; k < 97; ++k) {
      ws.push_back(rt::Tensor::floats({1}, {wv[k]}));
      gs.push_back(rt::Tensor::floats({1}, {gv[k]}));
    }
    std::vector<rt::Param> q;
    for (size_t k = 0; k < 97; ++k) q.push_back({"w" + std::to_string(k), &ws[k], &gs[k]});
    for (int step = 0; step < 4; ++step) {
      whole->step(p);
      single->step(q);
      bool same = true;
      for (size_t k = 0; k < 97; ++k) same = same && ws[k].f()[0] == w.f()[k];
      CHECK(same);
    }
  }
}

TEST_CASE("optimizer: a large parameter's statistics taken in the rule's loop are the same on two threads") {
  // Per part (the parts update at once on the compute threads), merged in part order, as
  // ProbeRecorder::after_update does.
  struct PartSums : rt::Optimizer::UpdateObserver {
    std::vector<stats::ParamSums> parts = std::vector<stats::ParamSums>(size_t(rt::kMaxElementwiseParts));
    bool concurrent_parts(size_t) const override { return true; }
    void on_chunk(size_t, int64_t, int64_t, const float*, const float*, const float*, int64_t) override {}
    stats::ParamSums* chunk_sums(size_t, int64_t part) override { return &parts[size_t(part)]; }
  };
  const int64_t n = 300000;
  REQUIRE(rt::elementwise_parts(n) > 1);
  std::vector<std::vector<float>> weights;
  std::vector<stats::ParamSums> merged;
  rt::set_helper_policy(rt::HelperPolicy::kAlways);  // two threads really used
  for (int threads : {1, 2}) {
    rt::set_compute_threads(threads);
    auto opt = rt::make_optimizer(config(kRules[3]));
    rt::Tensor w = rt::Tensor::floats({n}, random_values(size_t(n), 22)),
               g = rt::Tensor::floats({n}, random_values(size_t(n), 23));
    std::vector<rt::Param> p = {{"w", &w, &g}};
    PartSums log;
    opt->step(p, &log);
    stats::ParamSums all;
    for (int64_t part = 0; part < rt::elementwise_parts(n); ++part) {
      const stats::ParamSums& s = log.parts[size_t(part)];
      all.grad.merge(s.grad);
      all.weight.merge(s.weight);
      all.update.sq += s.update.sq;
      all.update.nonfinite += s.update.nonfinite;
    }
    weights.push_back(w.fvec());
    merged.push_back(all);
  }
  rt::set_compute_threads(0);
  rt::set_helper_policy(rt::HelperPolicy::kAuto);
  CHECK(same_bits(weights[0], weights[1]));
  check_sums(merged[1].grad, merged[0].grad);
  check_sums(merged[1].weight, merged[0].weight);
  CHECK(merged[1].update.sq == merged[0].update.sq);
  // Every part seen: one pass of add_param_chunk over the whole parameter (its blocks
  // are the parts' blocks; only the sums' association across parts differs).
  const std::vector<float> before = random_values(size_t(n), 22), grad = random_values(size_t(n), 23);
  stats::ParamSums whole;
  stats::add_param_chunk(grad.data(), before.data(), weights[0].data(), n, whole);
  CHECK(merged[0].grad.mn == whole.grad.mn);
  CHECK(merged[0].weight.mx == whole.weight.mx);
  CHECK(merged[0].grad.sumsq == doctest::Approx(whole.grad.sumsq).epsilon(1e-12));
  CHECK(merged[0].weight.sum == doctest::Approx(whole.weight.sum).epsilon(1e-12));
  CHECK(merged[0].update.sq == doctest::Approx(whole.update.sq).epsilon(1e-12));
}
