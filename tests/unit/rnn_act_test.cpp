// The recurrent ops' gate activations (runtime/ops/rnn_act.cpp): packet math close to the
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
