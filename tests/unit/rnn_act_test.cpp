// The recurrent ops' kernels: the gate activations (runtime/ops/rnn_act.cpp), packet math close to the
// exact functions, NaN kept, saturation at the ends, and a value's bits independent of
// where it sits in a row (so a short sequence computes what its steps alone do).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "runtime/ops/rnn_common.h"

namespace rnn = dl::rt::rnn;

namespace {

rnn::Gate gate(rnn::Act a, float clip = INFINITY) {
  rnn::Gate g;
  g.act = a;
  g.clip = clip;
  return g;
}

}  // namespace

TEST_CASE("recurrent activations: within a few 1e-7 of the exact Sigmoid and Tanh") {
  double worst_sig = 0, worst_tanh = 0;
  for (int k = -40000; k <= 40000; ++k) {
    const float x = float(k) * 5e-4f;  // [-20, 20]
    worst_sig = std::max(worst_sig, std::fabs(double(rnn::act_apply(rnn::Act::kSigmoid, x)) -
                                              1.0 / (1.0 + std::exp(-double(x)))));
    worst_tanh = std::max(worst_tanh, std::fabs(double(rnn::act_apply(rnn::Act::kTanh, x)) - std::tanh(double(x))));
  }
  CHECK(worst_sig < 5e-7);
  CHECK(worst_tanh < 5e-7);
  // Tiny inputs keep their relative precision (tanh x = x there).
  CHECK(rnn::act_apply(rnn::Act::kTanh, 1e-20f) == 1e-20f);
  CHECK(std::fabs(rnn::act_apply(rnn::Act::kSigmoid, -30.0f) - std::exp(-30.0f)) < 1e-3f * std::exp(-30.0f));
}

TEST_CASE("recurrent activations: NaN stays NaN, infinities saturate, Relu is exact") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = INFINITY;
  for (rnn::Act a : {rnn::Act::kSigmoid, rnn::Act::kTanh}) CHECK(std::isnan(rnn::act_apply(a, nan)));
  CHECK(rnn::act_apply(rnn::Act::kSigmoid, inf) == 1.0f);
  CHECK(rnn::act_apply(rnn::Act::kSigmoid, -inf) == 0.0f);
  CHECK(rnn::act_apply(rnn::Act::kTanh, inf) == 1.0f);
  CHECK(rnn::act_apply(rnn::Act::kTanh, -inf) == -1.0f);
  CHECK(rnn::act_apply(rnn::Act::kRelu, -2.0f) == 0.0f);
  CHECK(rnn::act_apply(rnn::Act::kRelu, 3.5f) == 3.5f);
  std::vector<float> row(19, 0.5f);
  row[17] = nan;  // in the padded tail of any packet width
  rnn::apply_row(gate(rnn::Act::kTanh), row.data(), int64_t(row.size()));
  CHECK(std::isnan(row[17]));
  CHECK(std::isfinite(row[18]));
}

TEST_CASE("recurrent activations: a row gives each value act_apply's bits, at any offset and length") {
  std::vector<float> src(64);
  for (size_t i = 0; i < src.size(); ++i) src[i] = std::sin(float(i) * 0.7f) * 6.0f;
  for (rnn::Act a : {rnn::Act::kSigmoid, rnn::Act::kTanh, rnn::Act::kRelu})
    for (float clip : {INFINITY, 2.0f}) {
      const rnn::Gate g = gate(a, clip);
      for (int64_t off = 0; off < 9; ++off)
        for (int64_t n = 1; n + off <= int64_t(src.size()); n += 5) {
          std::vector<float> row(src.begin() + off, src.begin() + off + n);
          rnn::apply_row(g, row.data(), n);
          for (int64_t i = 0; i < n; ++i) {
            const float x = std::min(std::max(src[size_t(off + i)], -clip), clip);
            REQUIRE(row[size_t(i)] == rnn::act_apply(a, x));
          }
        }
    }
}

namespace {

// The value-by-value reduction the inner statistics ran before PartReducer (the reference).
void reference(rnn::Act a, float m, const std::vector<float>& v, int64_t row, dl::rt::InnerStats::Part& p) {
  for (size_t k = 0; k < v.size(); k += size_t(row))
    for (size_t j = k; j < std::min(v.size(), k + size_t(row)); ++j) {
      const float x = v[j];
      ++p.n;
      if (!std::isfinite(x)) {
        ++(std::isnan(x) ? p.nan : p.inf);
        continue;
      }
      p.sum += x, p.sumsq += double(x) * x;
      p.min = std::min(p.min, x), p.max = std::max(p.max, x);
      p.saturated += a == rnn::Act::kSigmoid ? (x < m || x > 1.0f - m) : std::fabs(x) > 1.0f - m;
    }
}

dl::rt::InnerStats::Part reduced(rnn::Act a, float m, const std::vector<float>& v, int64_t row) {
  rnn::PartReducer r(a, m);
  for (size_t k = 0; k < v.size(); k += size_t(row))
    r.add_row(v.data() + k, std::min<int64_t>(row, int64_t(v.size() - k)));
  dl::rt::InnerStats::Part p;
  r.finish(p);
  return p;
}

}  // namespace

TEST_CASE("recurrent inner values: the part reducer gives the value-by-value statistics") {
  std::vector<float> v(9000);
  for (size_t k = 0; k < v.size(); ++k) v[k] = 0.5f + 0.5f * std::sin(float(k) * 0.37f);  // sigmoid-like
  for (rnn::Act a : {rnn::Act::kSigmoid, rnn::Act::kTanh})
    for (int64_t row : {int64_t(1), int64_t(39), int64_t(384)}) {
      std::vector<float> x = v;
      if (a == rnn::Act::kTanh)
        for (float& f : x) f = 2.0f * f - 1.0f;
      dl::rt::InnerStats::Part want, got = reduced(a, 0.01f, x, row);
      reference(a, 0.01f, x, row, want);
      CHECK(got.n == want.n);
      CHECK(got.saturated == want.saturated);
      CHECK(got.saturated > 0);
      CHECK(got.min == want.min);
      CHECK(got.max == want.max);
      // float within blocks: the rounding of about 1e-7 per value, not of the total
      CHECK(std::fabs(got.sum - want.sum) <= 1e-6 * double(want.n));
      CHECK(got.sumsq == doctest::Approx(want.sumsq).epsilon(1e-6));
      CHECK(got.nan + got.inf == 0);

      SUBCASE("a NaN and an Inf are counted apart, the finite values still summed") {
        x[4321] = std::numeric_limits<float>::quiet_NaN();
        x[17] = -INFINITY;
        dl::rt::InnerStats::Part w, g = reduced(a, 0.01f, x, row);
        reference(a, 0.01f, x, row, w);
        CHECK(g.nan == 1);
        CHECK(g.inf == 1);
        CHECK(g.n == w.n);
        CHECK(g.saturated == w.saturated);
        CHECK(g.sum == w.sum);
        CHECK(g.min == w.min);
      }
    }
}

TEST_CASE("recurrent inner values: rows reduced in strided groups give the bits of row by row") {
  // A step's gates: batch rows of n values, the gates part the first `len` of each (up
  // to 150 values: 4-vector groups, single vectors and a scalar tail per row, and blocks
  // of the sums flushed across rows: 37 x 150 values > 4096).
  const int64_t rows = 37, stride = 161;
  std::vector<float> v(size_t(rows * stride));
  for (size_t k = 0; k < v.size(); ++k) v[k] = 0.5f + 0.5f * std::sin(float(k) * 0.91f);
  v[size_t(20 * stride + 3)] = std::numeric_limits<float>::quiet_NaN();
  for (const bool with_nan : {false, true})
    for (int64_t len : {int64_t(5), int64_t(16), int64_t(39), int64_t(150), int64_t(161)}) {
      std::vector<float> x = v;
      if (!with_nan) x[size_t(20 * stride + 3)] = 0.25f;
      rnn::PartReducer one(rnn::Act::kSigmoid, 0.01f), groups(rnn::Act::kSigmoid, 0.01f);
      for (int64_t r = 0; r < rows; ++r) one.add_row(x.data() + r * stride, len);
      groups.add_rows(x.data(), 10, stride, len);  // runs of rows, as rows past their length split them
      groups.add_rows(x.data() + 10 * stride, 0, stride, len);
      groups.add_rows(x.data() + 10 * stride, rows - 10, stride, len);
      dl::rt::InnerStats::Part a, b;
      one.finish(a);
      groups.finish(b);
      CHECK(a.n == rows * len);
      CHECK(b.n == a.n);
      CHECK(b.saturated == a.saturated);
      CHECK(b.nan == a.nan);
      CHECK(b.nan == (with_nan && len > 3 ? 1 : 0));
      CHECK(b.sum == a.sum);
      CHECK(b.sumsq == a.sumsq);
      CHECK(b.min == a.min);
      CHECK(b.max == a.max);
    }
}
