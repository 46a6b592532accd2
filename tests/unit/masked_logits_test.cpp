// Masked logits (stats::Bands::masked): an attention mask's -inf in the scores that only a
// softmax reads is a masked position, not an overflow. Its probe leaves the -inf values
// out of every statistic (the record counts the others) and still counts NaN and +inf; a
// tensor something else reads too keeps counting -inf as Inf. Trainable initializers
// holding Inf are refused by rt::adapt_export, constants (the mask) are not.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "converter/errors.h"
#include "runtime/export_adapt.h"
#include "tests/unit/small_cnn.h"

namespace {

using dl::rt::Tensor;
using dl::test::random_values;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// A causal-style mask over 32 scores: positions 24..31 masked.
std::vector<float> mask_values() {
  std::vector<float> m(32, 0.0f);
  for (int k = 24; k < 32; ++k) m[size_t(k)] = kNegInf;
  return m;
}

// How the mask reaches the scores (node "/1/Mask" writes the masked scores):
enum class Mask {
  kAdd,          // Add(h, mask): a constant added (a causal mask in a buffer)
  kWhere,        // Where(cond, -inf, h): masked_fill's export
  kFloatMask,    // Add(h, Mul(Cast(Expand(Where(cond, -inf, 0))), 1)): a boolean mask made
                 // float (torch's key_padding_mask), added as baddbmm exports it
  kAfterWeight,  // Add(MatMul, mask) with no Relu between: right after a node with a
                 // weight, where an added initializer is otherwise a bias
};

// x [N, 2, 16, 16] -> Reshape [N, 32, 16] -> Transpose [N, 16, 32] -> MatMul W1 [32, 32]
// -> Relu (not with kAfterWeight) -> the mask (above) [-> Reshape to [N, 16, 2, 16] when
// `copy`] -> `reader` (Softmax: masked logits; Relu: not) -> Flatten -> Gemm 4 (mse, sgd).
dl::ir::Model masked_model(const std::string& reader, Mask how = Mask::kAdd, bool copy = false) {
  dl::test::ProbeGraph b("masked_" + reader, 13);
  b.m.path = "masked.onnx";
  b.random("W1", {32, 32}, 0.3f, 191);
  b.floats("mask", {32}, mask_values());
  b.random("W2", {4, 512}, 0.05f, 193);
  b.random("b2", {4}, 0.05f, 194);
  b.int64s("shape", {3}, {0, 32, 16});
  b.node("/0/Reshape", "Reshape", {"x", "shape"}, "r");
  b.node("/0/Transpose", "Transpose", {"r"}, "t", {{"perm", dl::rt::attr_ints({0, 2, 1})}});
  b.node("/1/MatMul", "MatMul", {"t", "W1"}, "m");
  if (how != Mask::kAfterWeight) b.node("/1/Relu", "Relu", {"m"}, "h");
  std::vector<int64_t> keep(32, 1);
  std::fill(keep.begin() + 24, keep.end(), 0);
  b.int64s("keep", {32}, keep);
  b.int64s("zero", {}, {0});
  if (how == Mask::kWhere || how == Mask::kFloatMask) b.floats("neg_inf", {}, {kNegInf});
  switch (how) {
    case Mask::kAdd: b.node("/1/Mask", "Add", {"h", "mask"}, "a"); break;
    case Mask::kAfterWeight: b.node("/1/Mask", "Add", {"m", "mask"}, "a"); break;
    case Mask::kWhere:
      b.node("/1/Cond", "Equal", {"keep", "zero"}, "cond");
      b.node("/1/Mask", "Where", {"cond", "neg_inf", "h"}, "a", {}, 16);
      break;
    case Mask::kFloatMask: {
      // The condition computed from the data (h * 0 + keep == 0, as a padding mask is from
      // the tokens), so that the float mask is a step's output, not a folded constant.
      std::vector<float> keepf(keep.begin(), keep.end());
      b.floats("keepf", {32}, keepf);
      b.floats("zero_f", {}, {0.0f});
      b.floats("beta", {}, {1.0f});
      // [N, 1, 32] (a padding mask's one row per sample), then Expand to the scores'
      // [N, 16, 32] and a float Cast: the steps torch's mask handling puts on the way.
      b.int64s("axis1", {1}, {1});
      b.int64s("rows", {3}, {1, 16, 32});
      b.node("/1/Zeroed", "Mul", {"h", "zero_f"}, "z");
      b.node("/1/Pool", "ReduceSum", {"z", "axis1"}, "zp");
      b.node("/1/Keep", "Add", {"zp", "keepf"}, "kp");
      b.node("/1/Cond", "Equal", {"kp", "zero_f"}, "cond");
      b.node("/1/FloatMask", "Where", {"cond", "neg_inf", "zero_f"}, "fm", {}, 16);
      b.node("/1/Expand", "Expand", {"fm", "rows"}, "fe");
      b.node("/1/Cast", "Cast", {"fe"}, "fc", {{"to", dl::rt::attr_i(1)}});
      b.node("/1/Scale", "Mul", {"fc", "beta"}, "sm");
      b.node("/1/Mask", "Add", {"h", "sm"}, "a");
      break;
    }
  }
  if (copy) {  // (a softmax over the last 16 of each 32: 8 of its 16 masked in every other row)
    b.int64s("heads", {4}, {0, 16, 2, 16});
    b.node("/1/Reshape", "Reshape", {"a", "heads"}, "a4");
  }
  b.node("/1/Read", reader, {copy ? "a4" : "a"}, "s");
  b.node("/2/Flatten", "Flatten", {"s"}, "f");
  b.node("/2/Gemm", "Gemm", {"f", "W2", "b2"}, "y", {{"transB", dl::rt::attr_i(1)}});
  return b.m;
}

// After each update: the masked Add's record against its unmasked values.
struct MaskedRecords : dl::rt::TrainListener {
  const dl::an::Trace* trace = nullptr;
  bool softmax = true;
  int checked = 0, light = 0;
  void after_update(const dl::rt::ExecutionGraph& g, const dl::rt::IterationInfo& info) override {
    const auto& probes = trace->header.probes;
    for (size_t k = 0; k < probes.size(); ++k) {
      const dl::an::Probe& p = probes[k];
      if (p.kind != dl::an::ProbeKind::kForward || p.node != "/1/Mask") continue;
      const Tensor& t = *g.steps()[size_t(p.step)].fwd.out[0];
      const dl::an::TensorStats& got = trace->at(trace->size() - 1, k);
      INFO("iteration " << info.iteration << (got.fractions_carried() ? " (light)" : " (full)"));
      int64_t masked = 0, n = 0;
      double sum = 0;
      float mx = -INFINITY, mn = INFINITY;
      for (int64_t i = 0; i < t.numel(); ++i) {
        const float v = t.f()[i];
        if (v == kNegInf) {
          ++masked;
          continue;
        }
        ++n, sum += v, mn = std::min(mn, v), mx = std::max(mx, v);
      }
      REQUIRE(masked == t.numel() / 4);  // 8 of every 32 scores
      if (softmax) {
        CHECK(got.finite());
        CHECK(got.count == uint32_t(n));
        CHECK(got.min == mn);
        CHECK(got.max == mx);
        CHECK(got.mean == doctest::Approx(sum / double(n)).epsilon(1e-5));
      } else {
        CHECK(got.inf == uint32_t(masked));  // read by Relu too: -inf is an Inf
        CHECK(got.count == uint32_t(t.numel()));
      }
      ++checked;
      light += got.fractions_carried();
    }
  }
};

void train_masked(const std::string& reader, int64_t iterations, int expect_checked, Mask how = Mask::kAdd,
                  bool copy = false) {
  const dl::ir::Model model = masked_model(reader, how, copy);
  const dl::test::CnnSetup setup = dl::test::cnn_setup(model, 64, iterations, 195);
  dl::rt::Trainer trainer(model, setup.config, setup.data, dl::rt::Dataset{});
  dl::an::Trace trace;
  dl::rt::ProbeRecorder probes(trainer.graph(), trace);
  REQUIRE(probes.step_values() > dl::rt::ProbeRecorder::kAlwaysFull);  // light and full iterations
  trace.set_capacity_bytes(16 << 20);
  MaskedRecords check;
  check.trace = &trace;
  check.softmax = reader == "Softmax";
  trainer.set_observer(&probes);
  trainer.add_listener(&probes);
  trainer.add_listener(&check);
  trainer.run();
  CHECK(check.checked == expect_checked);
  if (reader != "Softmax") return;
  CHECK(check.light >= 6);  // light records (iterations 9 to 15) as well as full ones
  // Every probe of every record finite: nothing for numerical_error, the analysis reads all.
  for (size_t r = 0; r < trace.size(); ++r)
    for (size_t k = 0; k < trace.header.probes.size(); ++k) {
      INFO(trace.header.probes[k].node << " record " << r);
      CHECK(trace.at(r, k).finite());
    }
}

}  // namespace

TEST_CASE("masked logits: -inf left out of the statistics; NaN and +inf still counted") {
  std::vector<float> x = random_values(5000, 196);
  x[7] = x[4096] = x[4999] = kNegInf;
  x[100] = std::numeric_limits<float>::infinity();
  x[200] = NAN;
  for (const bool light : {true, false}) {
    INFO((light ? "light" : "full"));
    dl::rt::stats::Bands b;
    b.light = light;
    b.masked = true;
    dl::rt::stats::Sums masked, plain;
    dl::rt::stats::add_values(x.data(), int64_t(x.size()), b, masked);
    b.masked = false;
    dl::rt::stats::add_values(x.data(), int64_t(x.size()), b, plain);
    CHECK(masked.masked == 3);
    CHECK(masked.inf == 1);
    CHECK(masked.nan == 1);
    CHECK(plain.masked == 0);
    CHECK(plain.inf == 4);
    const dl::an::TensorStats s = dl::rt::stats::finish(masked, int64_t(x.size()));
    CHECK(s.count == 4997);
    CHECK(s.inf == 1);
    CHECK(s.nan == 1);
    CHECK(std::isfinite(s.mean));
    CHECK(std::isfinite(s.min));
  }
}

TEST_CASE("masked logits: the vector path (only -inf among the values) against a reference") {
  // Values of a Relu-like band (dead at 0, saturating in [0, 1]) and zeros, -inf in runs
  // (a causal mask's) and alone, over whole blocks and a tail: every statistic as the
  // exact path's, from the vector path (the sums finite); light bands: those light_sums
  // gives (moments, extremes, counts).
  const int64_t n = 3 * dl::rt::stats::kBlock + 21;
  std::vector<float> x = random_values(n, 197);
  for (int64_t k = 0; k < n; ++k) {
    // (block 1 all masked: a long causal row's chunk)
    const bool whole = k >= dl::rt::stats::kBlock && k < 2 * dl::rt::stats::kBlock;
    if (whole || k % 64 > 40 || k % 1000 == 7) x[size_t(k)] = kNegInf;
    else if (k % 9 == 0) x[size_t(k)] = 0.0f;
  }
  x[size_t(n - 1)] = kNegInf;  // (in the tail)
  dl::rt::stats::Bands b;
  b.masked = true;
  b.dead = b.sat = true;
  b.dead_at = 0.0f, b.sat_lo = 0.001f, b.sat_hi = 0.999f;
  int64_t masked = 0, zeros = 0, dead = 0, sat = 0;
  double sum = 0, sumsq = 0;
  float mn = INFINITY, mx = -INFINITY;
  for (float v : x) {
    if (v == kNegInf) {
      ++masked;
      continue;
    }
    sum += v, sumsq += double(v) * v, mn = std::min(mn, v), mx = std::max(mx, v);
    zeros += v == 0.0f, dead += v <= 0.0f, sat += v <= b.sat_lo || v >= b.sat_hi;
  }
  for (const bool light : {true, false}) {
    INFO((light ? "light" : "full"));
    b.light = light;
    dl::rt::stats::Sums r, one_block;
    dl::rt::stats::add_values(x.data(), n, b, r);
    CHECK(r.masked == masked);
    // The all-masked block alone: the vector path's sums (0), no extremes.
    dl::rt::stats::add_values(x.data() + dl::rt::stats::kBlock, dl::rt::stats::kBlock, b, one_block);
    CHECK(one_block.masked == dl::rt::stats::kBlock);
    CHECK(one_block.sum == 0.0);
    CHECK(dl::rt::stats::finish(one_block, dl::rt::stats::kBlock).count == 0);
    CHECK(r.nan == 0);
    CHECK(r.inf == 0);
    CHECK(r.mn == mn);
    CHECK(r.mx == mx);
    CHECK(r.sum == doctest::Approx(sum).epsilon(1e-5));
    CHECK(r.sumsq == doctest::Approx(sumsq).epsilon(1e-5));
    // (light: the moments, extremes and counts only, as light_sums)
    CHECK(r.zeros == (light ? 0 : zeros));
    CHECK(r.dead == (light ? 0 : dead));
    CHECK(r.sat == (light ? 0 : sat));
    if (light) CHECK(r.sumabs == 0.0);
    const dl::an::TensorStats s = dl::rt::stats::finish(r, n);
    CHECK(s.count == uint32_t(n - masked));
    CHECK(s.finite());
  }
}

TEST_CASE("masked logits: a mask's scores read by Softmax are recorded without the -inf; by Relu, with") {
  train_masked("Softmax", 16, 16);
  train_masked("Relu", 4, 4);
}

TEST_CASE("masked logits: through a copy (Add -> Reshape -> Softmax), both the scores and the copy") {
  train_masked("Softmax", 16, 16, Mask::kAdd, true);
}

TEST_CASE("masked logits: masked_fill's Where(cond, -inf, scores), and a float mask made by Where and added") {
  // Fails when Where, Expand or a float Cast does not carry a mask (OpTraits::passes_values,
  // rearranges), or when the float mask itself (read by Expand, not a softmax) is not
  // masked: its -inf counts as Inf.
  SUBCASE("Where") { train_masked("Softmax", 16, 16, Mask::kWhere); }
  SUBCASE("float mask") { train_masked("Softmax", 16, 16, Mask::kFloatMask); }
}

TEST_CASE("masked logits: a -inf added right after a weight is a mask, not a bias to train") {
  dl::ir::Model model = masked_model("Softmax", Mask::kAfterWeight);
  const dl::rt::ExportAdaptation a = dl::rt::adapt_export(model);  // no "initial weights must be finite"
  CHECK(std::find(a.constants.begin(), a.constants.end(), "mask") != a.constants.end());
  REQUIRE(!a.notes.empty());
  CHECK(a.notes.front() == "1 float initializer(s) ('mask') hold -inf: taken as masks, constants whose -inf are masked "
                           "positions where only softmaxes read them (an attention or action mask), not trained");
  // Not a mask: -inf with +inf (refused, as any Inf in a bias), and a weight's -inf.
  dl::ir::Model both = masked_model("Softmax", Mask::kAfterWeight);
  both.graph.initializers["mask"].floats[3] = INFINITY;
  CHECK_THROWS_AS(dl::rt::adapt_export(both), dl::ModelError);
  dl::ir::Model weight = masked_model("Softmax", Mask::kAfterWeight);
  weight.graph.initializers["W1"].floats[0] = kNegInf;
  CHECK_THROWS_AS(dl::rt::adapt_export(weight), dl::ModelError);
  train_masked("Softmax", 16, 16, Mask::kAfterWeight);
}

TEST_CASE("masked logits: a constant may hold -inf, a trainable initializer may not") {
  dl::ir::Model ok = masked_model("Softmax");
  CHECK_NOTHROW(dl::rt::adapt_export(ok));
  dl::ir::Model bad = masked_model("Softmax");
  bad.graph.initializers["W1"].floats[5] = kNegInf;
  try {
    dl::rt::adapt_export(bad);
    FAIL("an Inf weight was taken");
  } catch (const dl::ModelError& e) {
    CHECK(std::string(e.what()) == "masked.onnx: initializer 'W1' holds Inf at flat index 5 (initial weights must be finite)");
  }
}
