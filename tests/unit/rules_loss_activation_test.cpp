// The static check of the last layer's activation against the loss
// (analysis/rules/loss_activation_mismatch.cpp), and the run's confirmation of an output
// the loss clips. Each: a true positive, edge cases, a --set override.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "rules_stat_util.h"

using namespace dl;
using namespace dl::test::rules_stat;

// --- loss_activation_mismatch ------------------------------------------------------------------

TEST_CASE("rule loss_activation_mismatch: softmax over one unit is conclusive") {
  TraceBuilder b;
  Trace t = b.dense("relu", 16).dense("softmax", 1).config("loss", "binary_crossentropy").build(30);
  auto f = run("loss_activation_mismatch", t, false);
  REQUIRE(f.size() == 1);
  CHECK(f[0].symptom == "softmax_single_unit");
  CHECK(f[0].conclusive);
  CHECK(f[0].stage == an::Stage::kStatic);
  CHECK(f[0].layer == 1);
  CHECK(f[0].root_cause == RootCause::kActivation);
  CHECK(f[0].recommendation.find("sigmoid") != std::string::npos);
  CHECK(f[0].message.find("always 1.0") != std::string::npos);
  an::Diagnosis d = an::analyze(t, an::Settings(), false);
  REQUIRE(d.fault);
  CHECK(d.findings[0].rule == "loss_activation_mismatch");

  TraceBuilder b2;
  Trace reg = b2.dense("relu", 16).dense("softmax", 1).config("loss", "mse").build(30);
  f = run("loss_activation_mismatch", reg);
  REQUIRE(f.size() == 1);
  CHECK(f[0].recommendation.find("linear") != std::string::npos);
}

TEST_CASE("rule loss_activation_mismatch: the other pairings") {
  SUBCASE("softmax with binary_crossentropy on several units: loss") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("softmax", 3).config("loss", "binary_crossentropy").build(30);
    auto f = run("loss_activation_mismatch", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].symptom == "softmax_binary_crossentropy");
    CHECK(f[0].root_cause == RootCause::kLoss);
    CHECK_FALSE(f[0].conclusive);
  }
  SUBCASE("sigmoid outputs with categorical_crossentropy: activation") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("sigmoid", 5).build(30);
    auto f = run("loss_activation_mismatch", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].symptom == "sigmoid_categorical_crossentropy");
    CHECK(f[0].root_cause == RootCause::kActivation);
    CHECK(f[0].recommendation.find("softmax") != std::string::npos);
    // --set: only flag from 6 classes on.
    CHECK(run("loss_activation_mismatch", t, true, with("loss_activation_mismatch.many_classes=6")).empty());
  }
  SUBCASE("probabilities into a from_logits loss: loss, high confidence") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("softmax", 3).config("from_logits", "true").build(30);
    auto f = run("loss_activation_mismatch", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].symptom == "probabilities_to_logits_loss");
    CHECK(f[0].root_cause == RootCause::kLoss);
    CHECK_FALSE(f[0].conclusive);
    CHECK(f[0].confidence >= 0.9);
    CHECK(f[0].recommendation.find("from_logits") != std::string::npos);
  }
  SUBCASE("a linear output into a probability cross-entropy") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("linear", 3).build(30);
    auto f = run("loss_activation_mismatch", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].symptom == "logits_to_probability_loss");
    CHECK(f[0].root_cause == RootCause::kLoss);
    // The same output with from_logits=true is right.
    TraceBuilder b2;
    Trace ok = b2.dense("relu", 16).dense("linear", 3).config("from_logits", "true").build(30);
    CHECK(run("loss_activation_mismatch", ok).empty());
  }
  SUBCASE("tanh output into a probability cross-entropy: activation") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("tanh", 1).config("loss", "binary_crossentropy").build(30);
    auto f = run("loss_activation_mismatch", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].root_cause == RootCause::kActivation);
  }
  SUBCASE("a ReLU output with a cross-entropy: activation") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("relu", 3).build(30);
    auto f = run("loss_activation_mismatch", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].symptom == "relu_output_crossentropy");
    CHECK(f[0].root_cause == RootCause::kActivation);
    CHECK(f[0].conclusive);  // categorical: a row of zeros normalises to 0/0
    TraceBuilder b2;
    Trace bce = b2.dense("relu", 16).dense("relu", 1).config("loss", "binary_crossentropy").build(30);
    f = run("loss_activation_mismatch", bce);
    REQUIRE(f.size() == 1);
    CHECK_FALSE(f[0].conclusive);
  }
}

// The loss clips outputs outside [1e-7, 1 - 1e-7] and passes them no gradient: the exact
// zeros of the output gradient, over the last quarter of the run, confirm the mismatch.
TEST_CASE("rule loss_activation_mismatch: the run confirms a clipped output") {
  const auto clipped = [](Trace& t, size_t probe, float share) {
    for (size_t r = 0; r < t.size(); ++r) t.at(r, probe).zero_frac = share;
  };
  SUBCASE("a linear output, most of its gradient clipped away: conclusive, with the share") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("linear", 3).config("loss", "sparse_categorical_crossentropy").build(40);
    clipped(t, b.gradient(1, false), 0.6f);
    auto f = run("loss_activation_mismatch", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].symptom == "logits_to_probability_loss");
    CHECK(f[0].conclusive);
    CHECK(f[0].layer == 1);
    CHECK(f[0].evidence["clipped_output_fraction"].get<double>() == doctest::Approx(0.6));
    CHECK(f[0].evidence["clipped_records"].get<int>() == 10);  // the last quarter, at least an epoch (10)
    CHECK(f[0].message.find("clipped 60%") != std::string::npos);
    an::Diagnosis d = an::analyze(t, an::Settings(), true);
    REQUIRE(d.fault);
    CHECK(d.findings[0].rule == "loss_activation_mismatch");
    // --set: a higher bar.
    f = run("loss_activation_mismatch", t, true, with("loss_activation_mismatch.clipped_outputs=0.7"));
    REQUIRE(f.size() == 1);
    CHECK_FALSE(f[0].conclusive);
  }
  SUBCASE("categorical_crossentropy: the zeros are the rows whose target was clipped") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("linear", 3).build(40);
    clipped(t, b.gradient(1, false), 0.6f);
    auto f = run("loss_activation_mismatch", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].conclusive);
    CHECK(f[0].message.find("target's probability in 60% of the rows") != std::string::npos);
  }
  SUBCASE("not when the outputs stayed in [0, 1], whatever their gradient") {
    // A probability output taken for an unbounded one would show many exact zeros (its
    // confident outputs below 1e-7), never values outside [0, 1].
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("linear", 3).config("loss", "sparse_categorical_crossentropy").build(40);
    clipped(t, b.gradient(1, false), 0.9f);
    for (size_t r = 0; r < t.size(); ++r) t.at(r, b.forward(1, false)).min = 0.0f, t.at(r, b.forward(1, false)).max = 1.0f;
    auto f = run("loss_activation_mismatch", t);
    REQUIRE(f.size() == 1);
    CHECK_FALSE(f[0].conclusive);
    CHECK(f[0].evidence["clipped_output_fraction"].get<double>() == 0.0);
    // Half the records outside: the median is the share of the other half.
    for (size_t r = 30; r < 35; ++r) t.at(r, b.forward(1, false)).min = -1.0f;
    f = run("loss_activation_mismatch", t);
    CHECK(f[0].evidence["clipped_output_fraction"].get<double>() == doctest::Approx(0.45));
  }
  SUBCASE("not with invalid class ids, whose rows get no gradient either") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("linear", 3).config("loss", "sparse_categorical_crossentropy").build(40);
    clipped(t, b.gradient(1, false), 0.9f);
    t.header.data_summary.label_issue_count = 3;
    auto f = run("loss_activation_mismatch", t);
    REQUIRE(f.size() == 1);
    CHECK_FALSE(f[0].conclusive);
  }
  SUBCASE("only the last quarter counts, and only fully reduced records") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("linear", 3).build(40);
    const size_t g = b.gradient(1, false);
    clipped(t, g, 0.6f);
    for (size_t r = 30; r < 40; ++r) t.at(r, g).zero_frac = 0.05f;  // the outputs came back into [0, 1]
    auto f = run("loss_activation_mismatch", t);
    REQUIRE(f.size() == 1);
    CHECK_FALSE(f[0].conclusive);
    CHECK(f[0].evidence["clipped_output_fraction"].get<double>() == doctest::Approx(0.05));
    // Records whose fractions were carried from an earlier reduction are not evidence.
    for (size_t r = 30; r < 40; ++r) t.at(r, g).flags = an::TensorStats::kFractionsCarried;
    f = run("loss_activation_mismatch", t);
    REQUIRE(f.size() == 1);
    CHECK_FALSE(f[0].conclusive);
    CHECK(f[0].evidence.find("clipped_output_fraction") == f[0].evidence.end());  // no record left
  }
  SUBCASE("online: not before an epoch has been trained") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("linear", 3).build(40);
    clipped(t, b.gradient(1, false), 0.9f);
    auto f = run("loss_activation_mismatch", head(t, 8), false);
    REQUIRE(f.size() == 1);
    CHECK_FALSE(f[0].conclusive);
    f = run("loss_activation_mismatch", head(t, 12), false);
    REQUIRE(f.size() == 1);
    CHECK(f[0].conclusive);
  }
  SUBCASE("a ReLU output into binary_crossentropy; not a from-logits loss, which does not clip") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("relu", 2).config("loss", "binary_crossentropy").build(40);
    clipped(t, b.gradient(1, true), 0.5f);
    auto f = run("loss_activation_mismatch", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].symptom == "relu_output_crossentropy");
    CHECK(f[0].conclusive);
    TraceBuilder b2;
    Trace logits = b2.dense("relu", 16).dense("relu", 2).config("loss", "binary_crossentropy")
                       .config("from_logits", "true").build(40);
    clipped(logits, b2.gradient(1, true), 0.5f);
    f = run("loss_activation_mismatch", logits);
    REQUIRE(f.size() == 1);
    CHECK_FALSE(f[0].conclusive);
  }
}

TEST_CASE("rule loss_activation_mismatch: multi-label targets with a categorical loss or a softmax") {
  TraceBuilder b;
  Trace t = b.dense("relu", 16).dense("softmax", 3).build(5);
  t.header.data_summary.target_columns = {{0.0, 1.0, 0.5, 0.5, 0, 0}, {0.0, 1.0, 0.6, 0.5, 0, 0},
                                          {0.0, 1.0, 0.5, 0.5, 0, 0}};
  auto f = run("loss_activation_mismatch", t);
  REQUIRE(f.size() == 1);
  CHECK(f[0].symptom == "multilabel_categorical");
  CHECK(f[0].conclusive);
  CHECK(f[0].root_cause == RootCause::kLoss);
  CHECK(f[0].recommendation.find("sigmoid") != std::string::npos);
  // Softmax with binary_crossentropy on the same data: the activation.
  t.header.config["loss"] = "binary_crossentropy";
  f = run("loss_activation_mismatch", t);
  REQUIRE(f.size() == 1);
  CHECK(f[0].symptom == "multilabel_softmax");
  CHECK(f[0].root_cause == RootCause::kActivation);
  // Edge: a little multi-label (rows sum to 1.2 on average) is a warning; one-hot is fine.
  t.header.config["loss"] = "categorical_crossentropy";
  t.header.data_summary.target_columns = {{0.0, 1.0, 0.4, 0.5, 0, 0}, {0.0, 1.0, 0.4, 0.5, 0, 0},
                                          {0.0, 1.0, 0.4, 0.5, 0, 0}};
  f = run("loss_activation_mismatch", t);
  REQUIRE(f.size() == 1);
  CHECK_FALSE(f[0].conclusive);
  CHECK(run("loss_activation_mismatch", t, true, with("loss_activation_mismatch.row_sum_tolerance=0.5")).empty());
}

TEST_CASE("rule loss_activation_mismatch: edge cases") {
  SUBCASE("categorical_crossentropy over one sigmoid unit: the loss is always 0") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("sigmoid", 1).build(30);
    auto f = run("loss_activation_mismatch", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].symptom == "categorical_single_unit");
    CHECK(f[0].conclusive);
    CHECK(f[0].root_cause == RootCause::kLoss);
  }
  SUBCASE("a reshape after the softmax keeps the softmax as the output") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("softmax", 1).config("loss", "binary_crossentropy").build(5);
    an::Probe reshape = t.header.probes[b.forward(1)];
    reshape.node = "/4/Reshape";
    reshape.op = an::OpDescription();
    reshape.op.role = "shape";
    reshape.op.linear = true;
    t.header.probes.push_back(reshape);
    t.stats.clear();
    t.records.clear();
    auto f = run("loss_activation_mismatch", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].symptom == "softmax_single_unit");
  }
  SUBCASE("zero records: static checks still run") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("softmax", 1).config("loss", "binary_crossentropy").build(0);
    CHECK(run("loss_activation_mismatch", t, false).size() == 1);
  }
}

