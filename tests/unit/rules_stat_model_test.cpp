// Static checks of the model (analysis/rules): output_range, linear_stack,
// bad_initialization (architecture checks: rules_stat_arch_test.cpp; loss_activation_mismatch:
// rules_loss_activation_test.cpp). Each: a true positive, edge cases, a --set override.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "rules_stat_util.h"

using namespace dl;
using namespace dl::test::rules_stat;

// --- output_range --------------------------------------------------------------------------------

TEST_CASE("rule output_range: a sigmoid output cannot reach regression targets") {
  TraceBuilder b;
  Trace t = b.dense("relu", 16).dense("sigmoid", 1).config("loss", "mse").build(30);
  t.header.data_summary.target_columns = {{0.0, 10.0, 5.0, 2.5, 0, 0}};
  auto f = run("output_range", t, false);
  REQUIRE(f.size() == 1);
  CHECK(f[0].conclusive);
  CHECK(f[0].layer == 1);
  CHECK(f[0].root_cause == RootCause::kActivation);
  CHECK(f[0].evidence["unreachable_share"].get<double>() > 0.9);
  CHECK(f[0].recommendation.find("linear") != std::string::npos);

  SUBCASE("ReLU output with standardised targets: half cannot be reached") {
    TraceBuilder b2;
    Trace r = b2.dense("relu", 16).dense("relu", 1).config("loss", "mae").build(5);
    r.header.data_summary.target_columns = {{-3.0, 3.0, 0.0, 1.0, 0, 0}};
    auto g = run("output_range", r);
    REQUIRE(g.size() == 1);
    CHECK(g[0].conclusive);
    CHECK(g[0].evidence["unreachable_share"].get<double>() == doctest::Approx(0.5).epsilon(0.01));
    // --set: require 60% unreachable before it is conclusive.
    g = run("output_range", r, true, with("output_range.conclusive_share=0.6"));
    REQUIRE(g.size() == 1);
    CHECK_FALSE(g[0].conclusive);
  }
  SUBCASE("ReLU output, y = 2x - 1 on 7 points: 2 of 7 targets negative, counted exactly") {
    TraceBuilder b2;
    Trace r = b2.dense("relu", 4).dense("relu", 1).config("loss", "mse").build(5);
    r.header.data_summary.rows = 7;
    // The normal approximation from mean 3 and std 4 puts 23% below 0: not conclusive.
    r.header.data_summary.target_columns = {{-3.0, 9.0, 3.0, 4.0, 0, 0}};
    auto g = run("output_range", r);
    REQUIRE(g.size() == 1);
    CHECK_FALSE(g[0].conclusive);
    CHECK(g[0].evidence["unreachable_share"].get<double>() == doctest::Approx(0.2266).epsilon(0.01));
    // Counted: 2 of 7 (29%) can never be reached.
    r.header.data_summary.target_columns = {{-3.0, 9.0, 3.0, 4.0, 0, 0, 2, 1, 4}};
    g = run("output_range", r);
    REQUIRE(g.size() == 1);
    CHECK(g[0].conclusive);
    CHECK(g[0].evidence["unreachable_share"].get<double>() == doctest::Approx(2.0 / 7.0));
  }
  SUBCASE("unscaled targets: root cause data") {
    t.header.data_summary.target_columns = {{1.2e4, 5e5, 1.8e5, 9e4, 0, 0}};
    auto g = run("output_range", t);
    REQUIRE(g.size() == 1);
    CHECK(g[0].root_cause == RootCause::kData);
    CHECK(g[0].recommendation.find("scale") != std::string::npos);
  }
}

TEST_CASE("rule output_range: edge cases") {
  TraceBuilder b;
  Trace t = b.dense("relu", 16).dense("sigmoid", 1).config("loss", "mse").build(5);
  // Targets exactly at the bounds, and a rounding overshoot, are fine.
  t.header.data_summary.target_columns = {{0.0, 1.0, 0.5, 0.3, 0, 0}};
  CHECK(run("output_range", t).empty());
  t.header.data_summary.target_columns = {{0.0, 1.01, 0.5, 0.3, 0, 0}};
  CHECK(run("output_range", t).empty());
  // A small overshoot: a warning, not conclusive.
  t.header.data_summary.target_columns = {{0.0, 1.1, 0.5, 0.2, 0, 0}};
  auto f = run("output_range", t);
  REQUIRE(f.size() == 1);
  CHECK_FALSE(f[0].conclusive);
  CHECK(run("output_range", t, true, with("output_range.min_excess=0.2")).empty());
  // Cross-entropy targets are not values to reach: not this rule.
  TraceBuilder b2;
  Trace ce = b2.dense("relu", 16).dense("linear", 3).config("from_logits", "true").build(5);
  CHECK(run("output_range", ce).empty());
  // Softmax regression whose target rows do not sum to 1.
  TraceBuilder b3;
  Trace sm = b3.dense("relu", 16).dense("softmax", 2).config("loss", "mse").build(5);
  sm.header.data_summary.target_columns = {{0.0, 1.0, 0.6, 0.3, 0, 0}, {0.0, 1.0, 0.7, 0.3, 0, 0}};
  f = run("output_range", sm);
  REQUIRE(f.size() == 1);
  CHECK(f[0].symptom == "softmax_regression");
  CHECK_FALSE(f[0].conclusive);  // rows sum to 1.3: 0.3 from 1
  CHECK(f[0].recommendation.find("multi-label") != std::string::npos);
  CHECK(run("output_range", sm, true, with("output_range.conclusive_row_sum=0.25"))[0].conclusive);
}

// --- linear_stack -----------------------------------------------------------------------------------------

TEST_CASE("rule linear_stack: dense layers without activation in between") {
  TraceBuilder b;
  Trace t = b.dense("linear", 16).dense("relu", 8).dense("softmax", 3).build(5);
  auto f = run("linear_stack", t);
  REQUIRE(f.size() == 1);
  CHECK(f[0].layer == 0);
  CHECK(f[0].root_cause == RootCause::kActivation);
  CHECK(f[0].evidence["model_is_linear"] == false);
  // No activation anywhere: more confident.
  TraceBuilder b2;
  Trace lin = b2.dense("linear", 16).dense("linear", 3).config("from_logits", "true").build(5);
  auto g = run("linear_stack", lin);
  REQUIRE(g.size() == 1);
  CHECK(g[0].evidence["model_is_linear"] == true);
  CHECK(g[0].confidence > f[0].confidence);
  CHECK_FALSE(f[0].conclusive);
  CHECK(f[0].recommendation.find("ReLU") != std::string::npos);
  CHECK(f[0].nodes == std::vector<std::string>{"/0/Gemm"});
}

TEST_CASE("rule linear_stack: edge cases") {
  SUBCASE("a linear output layer is not a stack") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("linear", 1).config("loss", "mse").build(5);
    CHECK(run("linear_stack", t).empty());
  }
  SUBCASE("a linear layer followed by a normalisation layer (not linear) is not a stack") {
    TraceBuilder b;
    Trace t = b.dense("linear", 16).dense("relu", 16).dense("softmax", 3).build(5);
    t.header.probes[b.forward(1, false)].op.linear = false;  // layer 1 anchored by e.g. BatchNormalization
    CHECK(run("linear_stack", t).empty());
  }
  SUBCASE("the confidence is a setting") {
    TraceBuilder b;
    Trace t = b.dense("linear", 16).dense("linear", 8).dense("softmax", 3).build(5);
    auto f = run("linear_stack", t, true, with("linear_stack.confidence=0.3"));
    REQUIRE(f.size() == 1);
    CHECK(f[0].confidence == doctest::Approx(0.3));
    CHECK(f[0].evidence["stacked_pairs"].size() == 2);
  }
}

// --- bad_initialization ---------------------------------------------------------------------------------------

TEST_CASE("rule bad_initialization: stacked zero layers are conclusive") {
  TraceBuilder b;
  Trace t = healthy(b);
  for (int l : {0, 1}) {
    an::InitializerSummary& w = t.header.initializers[size_t(l)];
    w.min = w.max = w.mean = w.std = 0;
  }
  auto f = run("bad_initialization", t, false);
  REQUIRE(f.size() == 1);
  CHECK(f[0].symptom == "zero_initialization");
  CHECK(f[0].conclusive);
  CHECK(f[0].layer == 0);
  CHECK(f[0].root_cause == RootCause::kInitialization);
  CHECK(f[0].evidence["constant_layers_in_a_row"] == 2);
  // --set: three constant layers in a row before it is conclusive.
  f = run("bad_initialization", t, false, with("bad_initialization.conclusive_stacked=3"));
  REQUIRE(f.size() == 1);
  CHECK_FALSE(f[0].conclusive);
}

TEST_CASE("rule bad_initialization: single constant layer, wide init, biases") {
  SUBCASE("one constant layer: a warning") {
    TraceBuilder b;
    Trace t = healthy(b);
    an::InitializerSummary& w = t.header.initializers[1];
    w.min = w.max = w.mean = 0.5, w.std = 0;
    auto f = run("bad_initialization", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].symptom == "constant_initialization");
    CHECK_FALSE(f[0].conclusive);
    CHECK(f[0].layer == 1);
  }
  SUBCASE("N(0, 1) on a fan-in of 200") {
    TraceBuilder b;
    Trace t = healthy(b);
    an::InitializerSummary& w = t.header.initializers[0];
    w.count = 16 * 200, w.std = 1.5, w.min = -6, w.max = 6;
    auto f = run("bad_initialization", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].symptom == "wide_initialization");
    CHECK(f[0].evidence["fan_in"] == 200);
    // Past min_fan_in the std is still 15x He's sqrt(2 / 200): max_he_ratio flags it too.
    CHECK(run("bad_initialization", t, true, with("bad_initialization.min_fan_in=300")).size() == 1);
    CHECK(run("bad_initialization", t, true,
              with({"bad_initialization.min_fan_in=300", "bad_initialization.max_he_ratio=20"})).empty());
  }
  SUBCASE("several too-wide layers: the finding at the first, every one listed") {
    TraceBuilder b;
    Trace t = healthy(b);
    for (size_t k : {0, 2}) {  // the weights of layers 0 and 2 (8 inputs x 3 units)
      an::InitializerSummary& w = t.header.initializers[k];
      w.std = 10, w.min = -30, w.max = 30;
      if (k == 2) w.count = 24;
    }
    auto f = run("bad_initialization", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].symptom == "wide_initialization");
    CHECK(f[0].layer == 0);
    CHECK(f[0].evidence["wide_layers"] == nlohmann::json::array({0, 2}));
    CHECK(f[0].message.find("so do the weights of layer 2") != std::string::npos);
  }
  SUBCASE("N(0, 10) on a fan-in of 4: too wide at any fan-in") {
    TraceBuilder b;
    Trace t = healthy(b);
    an::InitializerSummary& w = t.header.initializers[0];
    w.count = 16 * 4, w.std = 10, w.min = -30, w.max = 30;
    auto f = run("bad_initialization", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].symptom == "wide_initialization");
    w.std = 0.7;  // Glorot/He range for 4 inputs
    CHECK(run("bad_initialization", t).empty());
  }
  SUBCASE("a constant bias-sized parameter is not a weight") {
    TraceBuilder b;
    Trace t = healthy(b);
    an::InitializerSummary& w = t.header.initializers[0];
    w.count = 16, w.min = w.max = w.mean = w.std = 0;
    CHECK(run("bad_initialization", t).empty());
  }
  SUBCASE("NaN in an initializer is conclusive") {
    TraceBuilder b;
    Trace t = healthy(b);
    t.header.initializers[2].nan = 3;
    auto f = run("bad_initialization", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].conclusive);
    CHECK(f[0].layer == 2);
  }
}
