// Static checks of the architecture (analysis/rules): excessive_dropout, bottleneck_layer.
// Each: a true positive, the quiet cases a healthy model has, a --set override.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "rules_stat_util.h"

using namespace dl;
using namespace dl::test::rules_stat;

// --- excessive_dropout --------------------------------------------------------------------------------------

TEST_CASE("rule excessive_dropout: a rate written as a keep probability is a warning at its layer") {
  TraceBuilder b;
  Trace t = healthy(b);
  t.header.probes[b.forward(1)].op.drop_rate = 0.8;  // the step after layer 1's activation
  auto f = run("excessive_dropout", t);
  REQUIRE(f.size() == 1);
  CHECK(f[0].symptom == "excessive_dropout");
  CHECK(f[0].layer == 1);
  CHECK(f[0].stage == an::Stage::kStatic);
  CHECK(f[0].root_cause == RootCause::kArchitecture);
  CHECK_FALSE(f[0].conclusive);
  CHECK(f[0].evidence["drop_rate"] == doctest::Approx(0.8));
  CHECK(f[0].recommendation.find("the rate is 0.2") != std::string::npos);
  // A healthy run keeps it a warning: the verdict stays ok.
  an::Diagnosis d = an::analyze(t, an::Settings(), true);
  CHECK_FALSE(d.fault);
  bool warned = false;
  for (const auto& w : d.warnings) warned = warned || w.symptom == "excessive_dropout";
  CHECK(warned);
  // The threshold is a setting.
  CHECK(run("excessive_dropout", t, true, with("excessive_dropout.max_rate=0.85")).empty());
  // From 0.9 on a fault even when the run learns.
  t.header.probes[b.forward(1)].op.drop_rate = 0.95;
  f = run("excessive_dropout", t);
  REQUIRE(f.size() == 1);
  CHECK(f[0].conclusive);
  d = an::analyze(t, an::Settings(), true);
  REQUIRE(d.fault);
  CHECK(d.findings[0].symptom == "excessive_dropout");
  CHECK_FALSE(run("excessive_dropout", t, true, with("excessive_dropout.conclusive_rate=0.96"))[0].conclusive);
}

TEST_CASE("rule excessive_dropout: usual rates and eval-mode Dropout are quiet") {
  TraceBuilder b;
  Trace t = healthy(b);
  t.header.probes[b.forward(0)].op.drop_rate = 0.5;
  t.header.probes[b.forward(1)].op.drop_rate = 0.2;
  CHECK(run("excessive_dropout", t).empty());
  t.header.probes[b.forward(1)].op.drop_rate = 0;  // is_test / ratio 0: no rate in the trace
  CHECK(run("excessive_dropout", t).empty());
}

// --- bottleneck_layer ---------------------------------------------------------------------------------------

namespace {

// Sets each layer's anchor (Gemm) probe to hold `units` values per sample, as a dense layer does.
void dense_sample_sizes(Trace& t, const TraceBuilder& b, const std::vector<int64_t>& units) {
  for (size_t l = 0; l < units.size(); ++l) t.header.probes[b.forward(int(l), false)].op.sample_size = units[l];
}

}  // namespace

TEST_CASE("rule bottleneck_layer: one unit in front of a 3-class output is conclusive at that layer") {
  TraceBuilder b;
  Trace t = b.dense("relu", 16).dense("relu", 1).dense("softmax", 3).build(200);
  dense_sample_sizes(t, b, {16, 1, 3});
  auto f = run("bottleneck_layer", t);
  REQUIRE(f.size() == 1);
  CHECK(f[0].symptom == "bottleneck_layer");
  CHECK(f[0].layer == 1);
  CHECK(f[0].conclusive);
  CHECK(f[0].root_cause == RootCause::kArchitecture);
  CHECK(f[0].evidence["widest_later_layer"] == 3);
  an::Diagnosis d = an::analyze(t, an::Settings(), true);
  REQUIRE(d.fault);
  CHECK(d.findings[0].symptom == "bottleneck_layer");
  // --set: conclusive only from 4 outputs on.
  f = run("bottleneck_layer", t, true, with("bottleneck_layer.conclusive_outputs=4"));
  REQUIRE(f.size() == 1);
  CHECK_FALSE(f[0].conclusive);
}

TEST_CASE("rule bottleneck_layer: quiet on the layers a healthy model has") {
  SUBCASE("two output units: a warning only") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("relu", 1).dense("softmax", 2).build(200);
    dense_sample_sizes(t, b, {16, 1, 2});
    auto f = run("bottleneck_layer", t);
    REQUIRE(f.size() == 1);
    CHECK_FALSE(f[0].conclusive);
    CHECK_FALSE(an::analyze(t, an::Settings(), true).fault);
  }
  SUBCASE("one unit before a one-unit output (binary, regression)") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("relu", 1).dense("sigmoid", 1).config("loss", "binary_crossentropy").build(200);
    dense_sample_sizes(t, b, {16, 1, 1});
    CHECK(run("bottleneck_layer", t).empty());
  }
  SUBCASE("a one-channel convolution passes a whole feature map on") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("relu", 1).dense("softmax", 3).build(200);
    dense_sample_sizes(t, b, {16, 64, 3});  // layer 1: 1 channel of 8x8
    CHECK(run("bottleneck_layer", t).empty());
  }
  SUBCASE("an old trace without sample sizes") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("relu", 1).dense("softmax", 3).build(200);
    CHECK(run("bottleneck_layer", t).empty());
  }
}
