// Static checks and trend rules (analysis/rules): loss_activation_mismatch, output_range,
// labels_invalid, unnormalized_inputs, linear_stack, bad_initialization,
// loss_not_decreasing, oscillating_loss, accuracy_not_increasing, training_too_short.
// Each: a true positive, the healthy builder trace, an edge case, and a --set override.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "analysis/context.h"
#include "analysis/rule.h"
#include "trace_builder.h"

namespace {

using namespace dl;
using an::Finding;
using an::RootCause;
using an::Trace;
using test::TraceBuilder;

const std::set<std::string> kMine = {"loss_activation_mismatch", "output_range", "labels_invalid",
                                     "unnormalized_inputs", "linear_stack", "bad_initialization",
                                     "loss_not_decreasing", "oscillating_loss", "accuracy_not_increasing",
                                     "training_too_short", "loss_plateau"};

std::vector<Finding> run(const std::string& rule, const Trace& t, bool final = true,
                         const an::Settings& settings = an::Settings()) {
  an::AnalysisContext ctx(t, settings, final);
  std::vector<Finding> out;
  for (const auto& r : an::all_rules())
    if (r->id() == rule) r->check(ctx, out);
  return out;
}

an::Settings with(const std::string& assignment) {
  an::Settings s;
  s.set(assignment);
  return s;
}

// Findings and warnings of this file's rules only (other rules may be registered too).
std::vector<Finding> mine(const std::vector<Finding>& all) {
  std::vector<Finding> out;
  for (const Finding& f : all)
    if (kMine.count(f.rule)) out.push_back(f);
  return out;
}

// Rewrites the loss/metric curves (per iteration, records and epoch means).
void set_curve(Trace& t, const std::function<double(int64_t, double)>& loss,
               const std::function<double(int64_t, double)>& metric) {
  const int64_t n = static_cast<int64_t>(t.loss.size());
  const int64_t b = t.header.batches_per_epoch;
  t.epochs.clear();
  double el = 0, em = 0;
  for (int64_t it = 0; it < n; ++it) {
    const double p = double(it) / double(std::max<int64_t>(n - 1, 1));
    t.loss[size_t(it)] = float(loss(it, p));
    t.metric[size_t(it)] = float(metric(it, p));
    el += t.loss[size_t(it)], em += t.metric[size_t(it)];
    if ((it + 1) % b == 0) {
      an::EpochRecord e;
      e.epoch = it / b;
      e.loss = el / double(b);
      e.metric = em / double(b);
      t.epochs.push_back(e);
      el = em = 0;
    }
  }
  for (an::IterationRecord& r : t.records) {
    r.loss = t.loss[size_t(r.iteration)];
    r.metric = t.metric[size_t(r.iteration)];
  }
}

// Sets ||dw||/||w|| of every parameter update in every record.
void set_update_ratio(Trace& t, double ratio) {
  for (size_t p = 0; p < t.header.probes.size(); ++p)
    if (t.header.probes[p].kind == an::ProbeKind::kUpdate)
      for (size_t r = 0; r < t.size(); ++r) t.at(r, p).mean = float(ratio);
}

Trace healthy(TraceBuilder& b) { return b.dense("relu", 16).dense("relu", 8).dense("softmax", 3).build(200); }

// A run that does not learn: loss flat around 1.1 with a little noise, accuracy at chance.
void flat_run(Trace& t) {
  set_curve(
      t, [](int64_t it, double) { return 1.1 + 0.01 * std::sin(double(it)); },
      [](int64_t it, double) { return 0.33 + 0.01 * std::sin(0.7 * double(it)); });
}

}  // namespace

// --- healthy ----------------------------------------------------------------------------------

TEST_CASE("rule stat: the healthy builder trace raises nothing from these rules") {
  TraceBuilder b;
  Trace t = healthy(b);
  for (const std::string& rule : kMine) {
    CAPTURE(rule);
    CHECK(run(rule, t, true).empty());
    CHECK(run(rule, t, false).empty());
  }
  an::Diagnosis d = an::analyze(t, an::Settings(), true);
  CHECK(mine(d.findings).empty());
  CHECK(mine(d.warnings).empty());
}

TEST_CASE("rule stat: a healthy regression and a healthy binary model raise nothing") {
  TraceBuilder b;
  Trace t = b.dense("relu", 16).dense("linear", 1).config("loss", "mse").build(200);
  t.header.metric_name = "mae";
  t.header.metric_higher_is_better = false;
  t.header.data_summary.target_columns = {{-3.0, 4.0, 0.2, 1.1, 0, 0}};
  t.header.data_summary.targets_are_classes = false;
  set_curve(
      t, [](int64_t, double p) { return 1.0 * std::exp(-3 * p) + 0.05; },
      [](int64_t, double p) { return 0.8 * std::exp(-3 * p) + 0.1; });
  for (const std::string& rule : kMine) {
    CAPTURE(rule);
    CHECK(run(rule, t).empty());
  }
  TraceBuilder b2;
  Trace bin = b2.dense("tanh", 8).dense("sigmoid", 1).config("loss", "binary_crossentropy").build(200);
  bin.header.data_summary.target_columns = {{0.0, 1.0, 0.4, 0.49, 0, 0}};
  for (const std::string& rule : kMine) {
    CAPTURE(rule);
    CHECK(run(rule, bin).empty());
  }
}

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

// --- labels_invalid ---------------------------------------------------------------------------------

TEST_CASE("rule labels_invalid: class ids 1..C") {
  TraceBuilder b;
  Trace t = b.dense("relu", 16).dense("softmax", 3).build(0);
  an::DataSummary& d = t.header.data_summary;
  d.label_issues = {"data.csv:3: class id 3 is outside 0..2", "data.csv:7: class id 3 is outside 0..2"};
  d.label_issue_count = 52;
  d.target_columns[0].max = 0;  // no valid class 0
  auto f = run("labels_invalid", t, false);
  REQUIRE(f.size() == 1);
  CHECK(f[0].symptom == "invalid_labels");
  CHECK(f[0].conclusive);
  CHECK(f[0].layer == -1);
  CHECK(f[0].root_cause == RootCause::kLabels);
  CHECK(f[0].recommendation.find("subtract 1") != std::string::npos);
  CHECK(f[0].evidence["invalid_labels"] == 52);
  CHECK(f[0].evidence["first_issues"].size() == 2);
  CHECK(f[0].evidence["first_issues"][0] == "data.csv:3: class id 3 is outside 0..2");
  // --set: list only one line.
  f = run("labels_invalid", t, false, with("labels_invalid.shown_issues=1"));
  CHECK(f[0].evidence["first_issues"].size() == 1);
  an::Diagnosis diag = an::analyze(t, an::Settings(), false);
  REQUIRE(diag.fault);
  CHECK(diag.findings[0].rule == "labels_invalid");
}

TEST_CASE("rule labels_invalid: NaN data, loss domain and other ids") {
  SUBCASE("NaN features: data, conclusive") {
    TraceBuilder b;
    Trace t = healthy(b);
    t.header.data_summary.all_features.nan = 2;
    t.header.data_summary.feature_columns[1].nan = 2;
    auto f = run("labels_invalid", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].symptom == "nonfinite_data");
    CHECK(f[0].root_cause == RootCause::kData);
    CHECK(f[0].conclusive);
    CHECK(f[0].evidence["first_feature_column"] == 1);
  }
  SUBCASE("an Inf target: data") {
    TraceBuilder b;
    Trace t = healthy(b);
    t.header.data_summary.target_columns[2].inf = 1;
    auto f = run("labels_invalid", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].evidence["nonfinite_targets"] == 1);
  }
  SUBCASE("binary_crossentropy with class ids 0..4") {
    TraceBuilder b;
    Trace t = b.dense("relu", 8).dense("sigmoid", 1).config("loss", "binary_crossentropy").build(0);
    t.header.data_summary.target_columns = {{0.0, 4.0, 2.0, 1.4, 0, 0}};
    t.header.data_summary.targets_integer = true;
    auto f = run("labels_invalid", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].symptom == "targets_outside_loss_domain");
    CHECK(f[0].root_cause == RootCause::kLabels);
    CHECK(f[0].recommendation.find("sparse_categorical_crossentropy") != std::string::npos);
    // Edge: exactly [0, 1] is the domain.
    t.header.data_summary.target_columns = {{0.0, 1.0, 0.5, 0.5, 0, 0}};
    CHECK(run("labels_invalid", t).empty());
  }
  SUBCASE("non-integer and too large ids") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("softmax", 3).build(0);
    t.header.data_summary.label_issues = {"data.csv:4: class id 1.5 is not an integer"};
    t.header.data_summary.label_issue_count = 1;
    auto f = run("labels_invalid", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].recommendation.find("integers") != std::string::npos);
    t.header.data_summary.label_issues = {"data.csv:4: class id 9 is outside 0..2"};
    f = run("labels_invalid", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].recommendation.find("10 units") != std::string::npos);
  }
}

// --- unnormalized_inputs ---------------------------------------------------------------------------------

TEST_CASE("rule unnormalized_inputs: large features are a warning confirmed only by a failing run") {
  TraceBuilder b;
  Trace t = healthy(b);
  an::DataSummary& d = t.header.data_summary;
  d.feature_columns[2] = {0.0, 5000.0, 1500.0, 1200.0, 0, 0};
  d.all_features = {-2.0, 5000.0, 375.0, 800.0, 0, 0};
  auto f = run("unnormalized_inputs", t);
  REQUIRE(f.size() == 1);
  CHECK_FALSE(f[0].conclusive);
  CHECK(f[0].root_cause == RootCause::kData);
  CHECK(f[0].layer == -1);
  CHECK(f[0].recommendation.find("standardise") != std::string::npos);
  // A healthy run keeps it a warning; a failing one makes it a finding.
  an::Diagnosis d1 = an::analyze(t, an::Settings(), true);
  CHECK(mine(d1.findings).empty());
  CHECK(mine(d1.warnings).size() == 1);
  flat_run(t);
  an::Diagnosis d2 = an::analyze(t, an::Settings(), true);
  REQUIRE(d2.fault);
  bool found = false;
  for (const Finding& x : d2.findings) found = found || x.rule == "unnormalized_inputs";
  CHECK(found);
}

TEST_CASE("rule unnormalized_inputs: pixels, mixed scales and the threshold") {
  TraceBuilder b;
  Trace t = healthy(b);
  an::DataSummary& d = t.header.data_summary;
  SUBCASE("0..255 pixels: divide by 255") {
    for (auto& c : d.feature_columns) c = {0.0, 255.0, 90.0, 70.0, 0, 0};
    d.all_features = {0.0, 255.0, 90.0, 70.0, 0, 0};
    auto f = run("unnormalized_inputs", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].recommendation.find("255") != std::string::npos);
  }
  SUBCASE("features of very different scales") {
    d.feature_columns[0] = {-0.002, 0.002, 0.0, 0.001, 0, 0};
    d.feature_columns[1] = {-30.0, 30.0, 0.0, 10.0, 0, 0};
    d.all_features = {-30.0, 30.0, 0.0, 5.0, 0, 0};
    auto f = run("unnormalized_inputs", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].evidence["std_ratio"].get<double>() == doctest::Approx(1e4));
  }
  SUBCASE("exactly at max_abs is fine; --set lowers it") {
    d.feature_columns[0] = {-100.0, 100.0, 0.0, 40.0, 0, 0};
    d.all_features = {-100.0, 100.0, 0.0, 20.0, 0, 0};
    CHECK(run("unnormalized_inputs", t).empty());
    CHECK(run("unnormalized_inputs", t, true, with("unnormalized_inputs.max_abs=50")).size() == 1);
  }
  SUBCASE("codes around 67 with a spread of 2: not centred") {
    d.feature_columns[1] = {65.0, 70.0, 67.4, 1.7, 0, 0};
    d.all_features = {-2.0, 70.0, 17.0, 29.0, 0, 0};
    auto f = run("unnormalized_inputs", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].evidence["offset_feature"] == 1);
    CHECK(f[0].message.find("not centred") != std::string::npos);
    CHECK(run("unnormalized_inputs", t, true, with("unnormalized_inputs.max_offset=100")).empty());
  }
  SUBCASE("a feature around 5 with a spread of 1 is fine") {
    d.feature_columns[1] = {2.0, 8.0, 5.0, 1.0, 0, 0};
    CHECK(run("unnormalized_inputs", t).empty());
  }
  SUBCASE("a constant feature does not make the scales differ") {
    d.feature_columns[0] = {3.0, 3.0, 3.0, 0.0, 0, 0};
    CHECK(run("unnormalized_inputs", t).empty());
  }
}

TEST_CASE("rule unnormalized_inputs: unscaled regression targets and in-graph normalisation") {
  TraceBuilder b;
  Trace t = b.dense("relu", 16).dense("linear", 1).config("loss", "mse").build(20);
  t.header.data_summary.target_columns = {{1.2e4, 5e5, 1.8e5, 9e4, 0, 0}};
  auto f = run("unnormalized_inputs", t);
  REQUIRE(f.size() == 1);
  CHECK(f[0].symptom == "unnormalized_targets");
  CHECK(f[0].root_cause == RootCause::kData);
  CHECK(f[0].recommendation.find("standardise the targets") != std::string::npos);
  // At the threshold: fine; a bounded output is output_range's finding.
  t.header.data_summary.target_columns = {{-1000.0, 1000.0, 0.0, 300.0, 0, 0}};
  CHECK(run("unnormalized_inputs", t).empty());
  CHECK(run("unnormalized_inputs", t, true, with("unnormalized_inputs.max_target_abs=500")).size() == 1);

  // Raw features, but the graph standardises them before the first Gemm (Sub, Div steps).
  TraceBuilder b2;
  Trace g = healthy(b2);
  g.header.data_summary.all_features = {0.0, 5000.0, 900.0, 1200.0, 0, 0};
  REQUIRE(run("unnormalized_inputs", g).size() == 1);
  an::Probe div = g.header.probes[b2.forward(0, false)];
  div.node = "/pre/Div";
  div.op = an::OpDescription();
  div.op.role = "elementwise";
  Trace g2 = g;
  g2.header.probes.insert(g2.header.probes.begin(), div);
  g2.records.clear();
  g2.stats.clear();
  an::IterationRecord r;
  an::TensorStats* s = g2.begin_record(r);
  for (size_t p = 0; p < g2.header.probes.size(); ++p) s[p].count = 1;
  s[0].min = -3, s[0].max = 3;
  CHECK(run("unnormalized_inputs", g2).empty());
  s[0].min = -3000, s[0].max = 3000;  // the in-graph step does not normalise
  CHECK(run("unnormalized_inputs", g2).size() == 1);
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
    CHECK(run("bad_initialization", t, true, with("bad_initialization.min_fan_in=300")).empty());
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

// --- loss_not_decreasing -------------------------------------------------------------------------------------------

TEST_CASE("rule loss_not_decreasing: a tiny learning rate") {
  TraceBuilder b;
  Trace t = b.dense("relu", 16).dense("relu", 8).dense("softmax", 3).config("learning_rate", "1e-6").build(200);
  flat_run(t);
  set_update_ratio(t, 1e-7);
  CHECK(run("loss_not_decreasing", t, false).empty());  // trend rules judge at the end only
  auto f = run("loss_not_decreasing", t);
  REQUIRE(f.size() == 1);
  CHECK(f[0].stage == an::Stage::kLoss);
  CHECK(f[0].layer == -1);
  CHECK(f[0].root_cause == RootCause::kLearningRate);
  CHECK(f[0].recommendation.find("increase the learning rate") != std::string::npos);
  CHECK(f[0].iteration == 199);
  an::Diagnosis d = an::analyze(t, an::Settings(), true);
  REQUIRE(d.fault);
}

TEST_CASE("rule loss_not_decreasing: root causes from the evidence") {
  TraceBuilder b;
  Trace t = healthy(b);
  flat_run(t);
  SUBCASE("huge updates: lower the rate") {
    set_update_ratio(t, 0.5);
    auto f = run("loss_not_decreasing", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].root_cause == RootCause::kLearningRate);
    CHECK(f[0].recommendation.find("lower") != std::string::npos);
  }
  SUBCASE("one huge first step, then nothing moves: the rate is too large") {
    set_update_ratio(t, 0.0);
    for (size_t p = 0; p < t.header.probes.size(); ++p)
      if (t.header.probes[p].kind == an::ProbeKind::kUpdate) t.at(0, p).mean = 0.99f;
    auto f = run("loss_not_decreasing", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].root_cause == RootCause::kLearningRate);
    CHECK(f[0].recommendation.find("lower") != std::string::npos);
    CHECK(run("loss_not_decreasing", t, true, with("loss_not_decreasing.peak_update=2"))[0].root_cause ==
          RootCause::kUnknown);
  }
  SUBCASE("normal updates: unknown") {
    auto f = run("loss_not_decreasing", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].root_cause == RootCause::kUnknown);
  }
  SUBCASE("tiny updates with a normal rate are vanishing gradients, not the rate") {
    set_update_ratio(t, 1e-7);
    auto f = run("loss_not_decreasing", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].root_cause == RootCause::kUnknown);
  }
  SUBCASE("a static mismatch explains it") {
    TraceBuilder b2;
    Trace s = b2.dense("relu", 16).dense("softmax", 1).config("loss", "binary_crossentropy").build(200);
    flat_run(s);
    auto f = run("loss_not_decreasing", s);
    REQUIRE(f.size() == 1);
    CHECK(f[0].root_cause == RootCause::kActivation);
    CHECK(f[0].layer == 1);
  }
  SUBCASE("still falling slowly and steadily: training length") {
    set_curve(
        t, [](int64_t, double p) { return 1.1 - 0.04 * p; }, [](int64_t, double p) { return 0.33 + 0.05 * p; });
    auto f = run("loss_not_decreasing", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].root_cause == RootCause::kTrainingLength);
  }
}

TEST_CASE("rule loss_not_decreasing: edge cases at the threshold") {
  TraceBuilder b;
  Trace t = healthy(b);
  // The loss falls 7%: above the default 5%, below a --set 10%.
  set_curve(
      t, [](int64_t it, double p) { return 1.0 - 0.07 * p + 0.001 * std::sin(double(it)); },
      [](int64_t, double p) { return 0.5 + 0.2 * p; });
  CHECK(run("loss_not_decreasing", t).empty());
  CHECK(run("loss_not_decreasing", t, true, with("loss_not_decreasing.min_improvement=0.1")).size() == 1);
  // A NaN loss belongs to the numerical rules.
  flat_run(t);
  t.loss.back() = NAN;
  CHECK(run("loss_not_decreasing", t).empty());
  // Too few iterations to judge.
  TraceBuilder b2;
  Trace s = b2.dense("relu", 8).dense("softmax", 3).batches_per_epoch(5).build(8);
  flat_run(s);
  CHECK(run("loss_not_decreasing", s).empty());
}

// --- oscillating_loss ----------------------------------------------------------------------------------------------

TEST_CASE("rule oscillating_loss: a loss that jumps between epochs") {
  TraceBuilder b;
  Trace t = b.dense("relu", 16).dense("relu", 8).dense("softmax", 3).config("learning_rate", "5").build(200);
  set_curve(
      t, [](int64_t it, double) { return (it / 10) % 2 ? 6.0 : 2.0; }, [](int64_t, double) { return 0.33; });
  auto f = run("oscillating_loss", t);
  REQUIRE(f.size() == 1);
  CHECK(f[0].root_cause == RootCause::kLearningRate);
  CHECK(f[0].recommendation.find("--lr 0.5") != std::string::npos);
  CHECK(f[0].evidence["reversal_share"].get<double>() == doctest::Approx(1.0));
  CHECK(run("oscillating_loss", t, false).empty());
  // Batches of one: the batch size.
  t.header.config["batch_size"] = "1";
  f = run("oscillating_loss", t);
  REQUIRE(f.size() == 1);
  CHECK(f[0].root_cause == RootCause::kOptimizer);
  // --set: a larger amplitude is required.
  CHECK(run("oscillating_loss", t, true, with("oscillating_loss.amplitude=1.5")).empty());
}

TEST_CASE("rule oscillating_loss: edge cases") {
  TraceBuilder b;
  Trace t = healthy(b);
  SUBCASE("small wobble of a flat loss is not oscillation") {
    set_curve(
        t, [](int64_t it, double) { return (it / 10) % 2 ? 1.1 : 1.0; }, [](int64_t, double) { return 0.33; });
    CHECK(run("oscillating_loss", t).empty());
  }
  SUBCASE("a large swing that keeps decreasing is learning") {
    set_curve(
        t, [](int64_t it, double p) { return (3.0 * std::exp(-4 * p)) * ((it / 10) % 2 ? 1.6 : 1.0); },
        [](int64_t, double p) { return 0.33 + 0.6 * p; });
    CHECK(run("oscillating_loss", t).empty());
  }
}

// --- accuracy_not_increasing --------------------------------------------------------------------------------------

TEST_CASE("rule accuracy_not_increasing: accuracy at chance") {
  TraceBuilder b;
  Trace t = healthy(b);
  flat_run(t);
  auto f = run("accuracy_not_increasing", t);
  REQUIRE(f.size() == 1);
  CHECK(f[0].stage == an::Stage::kAccuracy);
  CHECK(f[0].root_cause == RootCause::kUnknown);
  CHECK(f[0].evidence["at_chance"] == true);
  CHECK(run("accuracy_not_increasing", t, false).empty());
  // Explained by a huge learning rate.
  set_update_ratio(t, 0.5);
  f = run("accuracy_not_increasing", t);
  REQUIRE(f.size() == 1);
  CHECK(f[0].root_cause == RootCause::kLearningRate);
}

TEST_CASE("rule accuracy_not_increasing: edge cases") {
  TraceBuilder b;
  Trace t = healthy(b);
  SUBCASE("the loss falls and accuracy rises slowly above chance: not failing") {
    set_curve(
        t, [](int64_t, double p) { return 1.1 - 0.5 * p; }, [](int64_t, double p) { return 0.33 + 0.3 * p; });
    CHECK(run("accuracy_not_increasing", t).empty());
  }
  SUBCASE("flat but already good accuracy on a stuck loss") {
    set_curve(
        t, [](int64_t it, double) { return 0.2 + 0.001 * std::sin(double(it)); }, [](int64_t, double) { return 0.95; });
    CHECK(run("accuracy_not_increasing", t).empty());
    CHECK(run("accuracy_not_increasing", t, true, with("accuracy_not_increasing.good_accuracy=0.99")).size() == 1);
  }
  SUBCASE("the loss fell and still falls steadily: accuracy lags, the model learns") {
    set_curve(
        t, [](int64_t it, double p) { return 0.69 - 0.25 * p + 0.005 * std::sin(double(it)); },
        [](int64_t, double) { return 0.333; });
    CHECK(run("accuracy_not_increasing", t).empty());
    CHECK(run("accuracy_not_increasing", t, true, with("accuracy_not_increasing.learning_t=1e9")).size() == 1);
  }
  SUBCASE("regression has no accuracy") {
    flat_run(t);
    t.header.metric_name = "mae";
    CHECK(run("accuracy_not_increasing", t).empty());
  }
}

// --- training_too_short -------------------------------------------------------------------------------------------

TEST_CASE("rule training_too_short: still learning at the end with a poor accuracy") {
  TraceBuilder b;
  Trace t = b.dense("relu", 16).dense("relu", 8).dense("softmax", 3).config("epochs", "3").build(30);
  set_curve(
      t, [](int64_t, double p) { return 1.1 - 0.3 * p; }, [](int64_t, double p) { return 0.33 + 0.2 * p; });
  auto f = run("training_too_short", t);
  REQUIRE(f.size() == 1);
  CHECK(f[0].conclusive);
  CHECK(f[0].root_cause == RootCause::kTrainingLength);
  CHECK(f[0].layer == -1);
  CHECK(f[0].recommendation.find("--epochs") != std::string::npos);
  const double suggested = f[0].evidence["suggested_epochs"].get<double>();
  CHECK(suggested >= 6);
  CHECK(suggested <= 30);
  an::Diagnosis d = an::analyze(t, an::Settings(), true);
  REQUIRE(d.fault);
  CHECK(d.findings[0].rule == "training_too_short");
  // --set: "poor" only below 10% of the way from chance (the loss falls 12% per epoch: steep,
  // so the mediocre bound applies unless the steep rate is raised too).
  CHECK(run("training_too_short", t, true, with("training_too_short.poor_fraction=0.1")).size() == 1);
  an::Settings s = with("training_too_short.poor_fraction=0.1");
  s.set("training_too_short.steep_rate=1");
  CHECK(run("training_too_short", t, true, s).empty());
}

TEST_CASE("rule training_too_short: edge cases") {
  SUBCASE("converging (flattening) loss") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("softmax", 3).config("epochs", "10").build(100);
    set_curve(
        t, [](int64_t, double p) { return 0.6 + 0.5 * std::exp(-12 * p); },
        [](int64_t, double p) { return 0.33 + 0.2 * p; });
    CHECK(run("training_too_short", t).empty());
  }
  SUBCASE("batch noise around a flat loss is not a steady decrease") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("softmax", 3).config("epochs", "3").build(30);
    set_curve(
        t, [](int64_t it, double p) { return 1.1 - 0.1 * p + 0.25 * std::sin(2.3 * double(it)); },
        [](int64_t, double) { return 0.4; });
    CHECK(run("training_too_short", t).empty());
    // --set: a looser significance lets the trend through.
    CHECK(run("training_too_short", t, true, with("training_too_short.min_t=0")).size() == 1);
  }
  SUBCASE("a single epoch can be too short") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("softmax", 3).config("epochs", "1").batches_per_epoch(25).build(25);
    set_curve(
        t, [](int64_t it, double p) { return 1.15 - 0.15 * p + 0.02 * std::sin(2.3 * double(it)); },
        [](int64_t, double p) { return 0.3 + 0.15 * p; });
    auto f = run("training_too_short", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].evidence["suggested_epochs"].get<double>() >= 2);
  }
  SUBCASE("a steep loss at a mediocre accuracy: one epoch of ten classes") {
    TraceBuilder b;
    Trace t = b.dense("relu", 64).dense("softmax", 10).config("epochs", "1").batches_per_epoch(57).build(57);
    set_curve(
        t, [](int64_t it, double p) { return 2.3 - 0.6 * p + 0.03 * std::sin(2.3 * double(it)); },
        [](int64_t, double p) { return 0.1 + 0.6 * p; });
    auto f = run("training_too_short", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].message.find("unfinished") != std::string::npos);
    CHECK(f[0].evidence["suggested_epochs"].get<double>() >= 4);
    // Already at 0.85: finished enough.
    set_curve(
        t, [](int64_t it, double p) { return 2.3 - 0.6 * p + 0.03 * std::sin(2.3 * double(it)); },
        [](int64_t, double p) { return 0.25 + 0.6 * p; });
    CHECK(run("training_too_short", t).empty());
  }
  SUBCASE("fewer than 20 iterations cannot show a trend (the demo's 2 epochs of 4 batches)") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("softmax", 3).config("epochs", "2").batches_per_epoch(4).build(8);
    set_curve(
        t, [](int64_t, double p) { return 1.5 - 0.6 * p; }, [](int64_t, double p) { return 0.35 + 0.45 * p; });
    CHECK(run("training_too_short", t).empty());
    CHECK(run("training_too_short", t, true, with("training_too_short.min_iterations=8")).size() == 1);
  }
  SUBCASE("stopped early by another fault") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("softmax", 3).config("epochs", "20").build(30);
    set_curve(
        t, [](int64_t, double p) { return 1.1 - 0.3 * p; }, [](int64_t, double p) { return 0.33 + 0.2 * p; });
    CHECK(run("training_too_short", t).empty());
  }
  SUBCASE("regression: a poor mae") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("linear", 1).config("loss", "mse").config("epochs", "4").build(40);
    t.header.metric_name = "mae";
    t.header.metric_higher_is_better = false;
    t.header.data_summary.target_columns = {{-3.0, 3.0, 0.0, 1.0, 0, 0}};
    t.header.data_summary.targets_are_classes = false;
    set_curve(
        t, [](int64_t, double p) { return 1.0 - 0.3 * p; }, [](int64_t, double p) { return 0.8 - 0.1 * p; });
    auto f = run("training_too_short", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].root_cause == RootCause::kTrainingLength);
  }
}

// --- loss_plateau -------------------------------------------------------------------------------------------

// Loss falls over the first fifth of the run, then stays flat; accuracy stuck at 0.6 (chance 1/3).
void plateau_run(Trace& t) {
  set_curve(
      t, [](int64_t it, double p) { return 0.46 + 0.6 * std::max(0.0, 1 - 5 * p) + 0.01 * std::sin(double(it)); },
      [](int64_t it, double p) { return std::min(0.62, 0.33 + 1.5 * p) + 0.02 * std::sin(0.7 * double(it)); });
}

TEST_CASE("rule loss_plateau: a flat loss at a poor accuracy after huge steps") {
  TraceBuilder b;
  Trace t = b.dense("relu", 16).dense("relu", 8).dense("softmax", 3).config("epochs", "20").build(200);
  plateau_run(t);
  for (size_t p = 0; p < t.header.probes.size(); ++p)
    if (t.header.probes[p].kind == an::ProbeKind::kUpdate) t.at(0, p).mean = 0.9f;
  auto f = run("loss_plateau", t);
  REQUIRE(f.size() == 1);
  CHECK(f[0].conclusive);
  CHECK(f[0].root_cause == RootCause::kLearningRate);
  CHECK(f[0].recommendation.find("--lr 0.0001") != std::string::npos);
  CHECK(run("loss_plateau", t, false).empty());
  // The analyzer's gate does not see this run (the loss fell); the rule makes it a fault.
  an::Diagnosis d = an::analyze(t, an::Settings(), true);
  REQUIRE(d.fault);
  CHECK(mine(d.findings)[0].rule == "loss_plateau");
  CHECK(run("loss_plateau", t, true, with("loss_plateau.peak_update=1")).empty());
}

TEST_CASE("rule loss_plateau: edge cases") {
  TraceBuilder b;
  Trace t = b.dense("relu", 16).dense("relu", 8).dense("softmax", 3).config("epochs", "20").build(200);
  plateau_run(t);
  SUBCASE("a plateau with normal updates is a capacity limit, not this fault") {
    CHECK(run("loss_plateau", t).empty());
  }
  SUBCASE("a learning rate 10x the default is evidence by itself") {
    t.header.config["learning_rate"] = "0.01";
    CHECK(run("loss_plateau", t).size() == 1);
    CHECK(run("loss_plateau", t, true, with("loss_plateau.high_lr_factor=20")).empty());
  }
  SUBCASE("a plateau at a good accuracy is convergence") {
    t.header.config["learning_rate"] = "0.01";
    set_curve(
        t, [](int64_t, double p) { return 0.1 + 0.6 * std::max(0.0, 1 - 5 * p); },
        [](int64_t, double p) { return std::min(0.95, 0.33 + 3 * p); });
    CHECK(run("loss_plateau", t).empty());
  }
}

TEST_CASE("rule stat: unknown threshold keys are rejected") {
  an::Settings s;
  CHECK_THROWS(s.set("output_range.nope=1"));
  CHECK_NOTHROW(s.set("training_too_short.min_rate=0.05"));
}

TEST_CASE("rule stat: chance accuracy from the target summary (one-hot, binary, sparse ids, multi-label)") {
  TraceBuilder b;
  Trace t = healthy(b);  // one-hot, 3 classes of 1/3 each
  auto chance = [&](const Trace& tr) { return an::AnalysisContext(tr, an::Settings(), true).progress().chance_metric; };
  CHECK(chance(t) == doctest::Approx(1.0 / 3));
  t.header.data_summary.target_columns = {{0.0, 1.0, 0.3, 0.46, 0, 0}};
  CHECK(chance(t) == doctest::Approx(0.7));
  t.header.data_summary.target_columns = {{0.0, 9.0, 4.49, 2.9, 0, 0}};  // sparse class ids
  t.header.output_width = 10;
  CHECK(chance(t) == doctest::Approx(0.1));
  t.header.data_summary.target_columns = {{0.0, 1.0, 0.5, 0.5, 0, 0}, {0.0, 1.0, 0.6, 0.5, 0, 0}, {0.0, 1.0, 0.4, 0.5, 0, 0}};
  CHECK(chance(t) < 0);  // multi-label: rows sum to 1.5, no majority class
}
