// Light sinks that want no extremes (stats::Bands::extremes false, ValueSink::extremes):
// at a light iteration a step probe outside the output layer carries its min and max
// (an::TensorStats::kExtremesCarried, runtime/probes.h), so the ops' loops and the
// probes' own passes take the sum and the sum of squares only. What each reports against
// a separate light pass (count exact, sums to float rounding, min and max left out or
// exact), the ops' outputs unchanged, and NaN/Inf still making the sums non-finite.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "runtime/attrs.h"
#include "runtime/probe_stats.h"
#include "tests/unit/op_harness.h"
#include "tests/unit/small_cnn.h"

namespace {

using dl::rt::SinkSums;
using dl::rt::Tensor;
using dl::test::OpRun;
using dl::test::random_values;
namespace stats = dl::rt::stats;

stats::Bands moments_bands() {
  stats::Bands b;
  b.light = true;
  b.extremes = false;
  return b;
}

// A sink's report of t against a light pass with extremes over t in memory: the sums to
// float rounding; min and max left out (+inf, -inf).
void check_moments(const SinkSums& sink, const Tensor& t, const std::string& what) {
  INFO(what);
  REQUIRE(sink.reported() == t.numel());
  CHECK_FALSE(sink.extremes());
  const stats::Sums got = sink.total();
  stats::Bands light;
  light.light = true;
  stats::Sums want;
  stats::add_values(t.f(), t.numel(), light, want);
  CHECK(std::fabs(got.sum - want.sum) <= 1e-6 * std::sqrt(double(t.numel()) * want.sumsq));
  CHECK(got.sumsq == doctest::Approx(want.sumsq).epsilon(1e-6));
  CHECK(got.mn == std::numeric_limits<float>::infinity());
  CHECK(got.mx == -std::numeric_limits<float>::infinity());
}

}  // namespace

TEST_CASE("probes' own pass without extremes: the light pass's sums, min and max left out; NaN/Inf counted") {
  for (const int64_t n : {int64_t(3), int64_t(1000), int64_t(20000 + 5)}) {
    INFO(n << " values");
    std::vector<float> x = random_values(n, 71);
    stats::Sums light, moments;
    stats::Bands with;
    with.light = true;
    stats::add_values(x.data(), n, with, light);
    stats::add_values(x.data(), n, moments_bands(), moments);
    CHECK(moments.sum == light.sum);  // (the same chains and blocks: the same bits)
    CHECK(moments.sumsq == light.sumsq);
    CHECK(moments.mn == std::numeric_limits<float>::infinity());
    CHECK(moments.mx == -std::numeric_limits<float>::infinity());
    // A NaN and an Inf: the exact path counts them (its extremes are the finite values').
    x[size_t(n / 2)] = std::numeric_limits<float>::quiet_NaN();
    x[0] = -std::numeric_limits<float>::infinity();
    stats::Sums bad;
    stats::add_values(x.data(), n, moments_bands(), bad);
    CHECK(bad.nan == 1);
    CHECK(bad.inf == 1);
    CHECK(std::isfinite(bad.sum));
  }
}

TEST_CASE("Relu, Clip, Softmax, BatchNormalization and Conv report to light sinks without extremes; same outputs") {
  // Relu and Clip: Y and X forward, dY and dX backward, from their loops' registers.
  const dl::ir::Node relu = dl::rt::sample_node("Relu", 1, 1, {}, 14),
                     clip = dl::rt::sample_node("Clip", 1, 1, {{"min", dl::rt::attr_f(-0.5f)}, {"max", dl::rt::attr_f(0.6f)}}, 6);
  for (const dl::ir::Node* op : {&relu, &clip})
  for (const int64_t n : {int64_t(16 * 1024 + 37), int64_t(7)}) {
    INFO(op->op_type << ", " << n << " values");
    const std::vector<Tensor> in = {Tensor::floats({n}, random_values(n, 72))};
    const dl::ir::Node& node = *op;
    OpRun fused(node, in, true), plain(node, in, true);
    SinkSums y, x, dy, dx;
    for (SinkSums* s : {&y, &x, &dy, &dx}) s->reset(moments_bands());
    fused.out_stats = &y, fused.in_stats = &x, fused.dout_stats = &dy, fused.din_stats = &dx;
    fused.forward();
    plain.forward();
    CHECK(fused.outputs[0].fvec() == plain.outputs[0].fvec());
    check_moments(y, fused.outputs[0], "Y");
    check_moments(x, in[0], "X");
    const Tensor g = Tensor::floats({n}, random_values(n, 73));
    const std::vector<Tensor> d = fused.backward({&g}, {true}, 1u), d_plain = plain.backward({&g}, {true}, 1u);
    CHECK(d[0].fvec() == d_plain[0].fvec());
    check_moments(dy, g, "dY");
    check_moments(dx, d[0], "dX");
  }
  // Softmax: dX from each row while in L1.
  {
    const int64_t rows = 64, len = 64;
    const std::vector<Tensor> in = {Tensor::floats({rows, len}, random_values(rows * len, 74))};
    const auto node = dl::rt::sample_node("Softmax", 1, 1, {}, 13);
    OpRun fused(node, in, true), plain(node, in, true);
    fused.forward();
    plain.forward();
    SinkSums dx;
    dx.reset(moments_bands());
    fused.din_stats = &dx;
    const Tensor g = Tensor::floats({rows, len}, random_values(rows * len, 75));
    const std::vector<Tensor> d = fused.backward({&g}, {true}, 1u), d_plain = plain.backward({&g}, {true}, 1u);
    CHECK(d[0].fvec() == d_plain[0].fvec());
    check_moments(dx, d[0], "Softmax dX");
  }
  // BatchNormalization in training: Y's and X's sums derived from the batch statistics
  // (4x4 rows), or from the loops (16x16); dY's and dX's from the backward loops.
  for (const int64_t hw : {int64_t(4), int64_t(16)}) {
    const int64_t n = 16, c = 8, numel = n * c * hw * hw;
    const std::vector<Tensor> in = {Tensor::floats({n, c, hw, hw}, random_values(numel, 76)),
                                    Tensor::floats({c}, random_values(c, 77)), Tensor::floats({c}, random_values(c, 78)),
                                    Tensor::floats({c}, std::vector<float>(size_t(c), 0.0f)),
                                    Tensor::floats({c}, std::vector<float>(size_t(c), 1.0f))};
    const auto node = dl::rt::sample_node("BatchNormalization", 5, 1, {}, 15);
    OpRun fused(node, in, true), plain(node, in, true);
    SinkSums y, x, dy, dx;
    for (SinkSums* s : {&y, &x, &dy, &dx}) s->reset(moments_bands());
    fused.out_stats = &y, fused.in_stats = &x, fused.dout_stats = &dy, fused.din_stats = &dx;
    fused.forward();
    plain.forward();
    CHECK(fused.outputs[0].fvec() == plain.outputs[0].fvec());
    const std::string maps = std::to_string(hw) + "x" + std::to_string(hw);
    check_moments(y, fused.outputs[0], "BN Y " + maps);
    check_moments(x, in[0], "BN X " + maps);
    const Tensor g = Tensor::floats({n, c, hw, hw}, random_values(numel, 79));
    const std::vector<Tensor> d = fused.backward({&g}, {true}, 1u), d_plain = plain.backward({&g}, {true}, 1u);
    CHECK(d[0].fvec() == d_plain[0].fvec());
    if (dy.reported() > 0) check_moments(dy, g, "BN dY " + maps);
    if (dx.reported() > 0) check_moments(dx, d[0], "BN dX " + maps);
    if (hw == 16) CHECK(dy.reported() == numel);  // (long channels: from the loop that sums dY)
  }
  // Conv with bias, batched small maps: Y from the product's buffer, dY with dB's sums.
  {
    const int64_t n = 16, c = 8, m = 16, hw = 4;
    const std::vector<Tensor> in = {Tensor::floats({n, c, hw, hw}, random_values(n * c * hw * hw, 80)),
                                    Tensor::floats({m, c, 3, 3}, random_values(m * c * 9, 81)),
                                    Tensor::floats({m}, random_values(m, 82))};
    const auto node = dl::rt::sample_node("Conv", 3, 1, {{"pads", dl::rt::attr_ints({1, 1, 1, 1})}}, 11);
    OpRun fused(node, in, true), plain(node, in, true);
    SinkSums y, dy;
    y.reset(moments_bands());
    dy.reset(moments_bands());
    fused.out_stats = &y, fused.dout_stats = &dy;
    fused.forward();
    plain.forward();
    CHECK(fused.outputs[0].fvec() == plain.outputs[0].fvec());
    check_moments(y, fused.outputs[0], "Conv Y");
    const Tensor g = Tensor::floats({n, m, hw, hw}, random_values(n * m * hw * hw, 83));
    const std::vector<Tensor> d = fused.backward({&g}, {true, true, true}), d_plain = plain.backward({&g}, {true, true, true});
    for (size_t i = 0; i < d.size(); ++i) CHECK(d[i].fvec() == d_plain[i].fvec());
    check_moments(dy, g, "Conv dY");
  }
}

TEST_CASE("BatchNormalization's derived sums without extremes are not finite when a value is not") {
  // (The extremes' test, probe_fused_test.cpp; here an overflow shows in Y's sum of squares.)
  const int64_t n = 8, c = 4, numel = n * c * 16;  // (4x4 rows: derived)
  const auto node = dl::rt::sample_node("BatchNormalization", 5, 1, {}, 15);
  auto run = [&](std::vector<float> x, float scale, SinkSums& y, SinkSums& xs) {
    const std::vector<Tensor> in = {Tensor::floats({n, c, 4, 4}, std::move(x)), Tensor::floats({c}, std::vector<float>(c, scale)),
                                    Tensor::floats({c}, std::vector<float>(c, 0.5f)), Tensor::floats({c}, std::vector<float>(c, 0.0f)),
                                    Tensor::floats({c}, std::vector<float>(c, 1.0f))};
    OpRun op(node, in, true);
    y.reset(moments_bands());
    xs.reset(moments_bands());
    op.out_stats = &y;
    op.in_stats = &xs;
    op.forward();
    return op.outputs[0];
  };
  SinkSums y, x;
  std::vector<float> values = random_values(numel, 84);
  run(values, 1.5f, y, x);
  CHECK(std::isfinite(y.total().sum));
  CHECK(std::isfinite(x.total().sum));
  values[5] = INFINITY;
  run(values, 1.5f, y, x);
  CHECK_FALSE(std::isfinite(x.total().sum));
  CHECK_FALSE(std::isfinite(y.total().sum));
  // X finite, Y overflowing at the outlier: Y's sums must not be finite, X's are.
  values[5] = 3.0f;
  const Tensor big = run(values, 1e38f, y, x);
  int64_t infs = 0;
  for (float v : big.fvec()) infs += std::isinf(v);
  REQUIRE(infs > 0);
  CHECK_FALSE(std::isfinite(y.total().sum));
  CHECK(std::isfinite(x.total().sum));
  // Large but finite values throughout (the sum of squares far beyond float, no overflow
  // in Y): finite, or not (then only a pass in full follows), never a false count.
  const Tensor large = run(random_values(numel, 85), 1e18f, y, x);
  for (float v : large.fvec()) REQUIRE(std::isfinite(v));
  CHECK(std::isfinite(y.total().sumsq));
}
