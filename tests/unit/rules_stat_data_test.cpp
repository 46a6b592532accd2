// Static checks of the data (analysis/rules): labels_invalid, unnormalized_inputs. Each: a
// true positive, edge cases, a --set override.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "rules_stat_util.h"

using namespace dl;
using namespace dl::test::rules_stat;

// --- labels_invalid ---------------------------------------------------------------------------------

TEST_CASE("rule labels_invalid: class ids 1..C") {
  TraceBuilder b;
  Trace t = b.dense("relu", 16).dense("softmax", 3).build(0);
  an::DataSummary& d = t.header.data_summary;
  d.label_issues = {{"data.csv:3", 3}, {"data.csv:7", 3}};
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
  SUBCASE("every input feature constant (integer pixels divided by 255): data, conclusive") {
    TraceBuilder b;
    Trace t = healthy(b);
    an::DataSummary& d = t.header.data_summary;
    d.all_features = {0.0, 0.0, 0.0, 0.0, 0, 0};
    for (auto& c : d.feature_columns) c = d.all_features;
    auto f = run("labels_invalid", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].symptom == "constant_inputs");
    CHECK(f[0].root_cause == RootCause::kData);
    CHECK(f[0].conclusive);
    CHECK(f[0].layer == -1);
    CHECK(f[0].evidence["one_value"] == true);
    CHECK(f[0].message.find("is 0, in all") != std::string::npos);
    // Each column constant at its own value: no information either.
    for (size_t k = 0; k < d.feature_columns.size(); ++k)
      d.feature_columns[k] = {double(k), double(k), double(k), 0.0, 0, 0};
    d.all_features = {0.0, 3.0, 1.5, 1.1, 0, 0};
    f = run("labels_invalid", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].evidence["one_value"] == false);
    // One column that varies is information: nothing to report.
    d.feature_columns[2].max = 2.5;
    CHECK(run("labels_invalid", t).empty());
    // Columns summarised only in part (a wide input): the overall range decides.
    d.feature_columns[2].max = 2.0;
    d.features = 5000;
    CHECK(run("labels_invalid", t).empty());
    // NaN in the features: nonfinite_data's, not a constant.
    d.all_features = {0.0, 0.0, 0.0, 0.0, 3, 0};
    f = run("labels_invalid", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].symptom == "nonfinite_data");
    // One row cannot vary.
    d.all_features = {0.0, 0.0, 0.0, 0.0, 0, 0};
    d.rows = 1;
    CHECK(run("labels_invalid", t).empty());
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
    CHECK(f[0].layer == 1);  // one yes/no output for 5 classes: the output layer is to change
    CHECK(f[0].nodes == std::vector<std::string>{"/2/Gemm", "/3/Sigmoid"});
    // Two classes coded 1/2: labels coded wrongly, which one sigmoid unit can represent.
    t.header.data_summary.target_columns = {{1.0, 2.0, 1.5, 0.5, 0, 0}};
    f = run("labels_invalid", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].symptom == "targets_outside_loss_domain");
    CHECK(f[0].layer == -1);
    // Edge: exactly [0, 1] is the domain.
    t.header.data_summary.target_columns = {{0.0, 1.0, 0.5, 0.5, 0, 0}};
    CHECK(run("labels_invalid", t).empty());
  }
  SUBCASE("binary_crossentropy with real-valued targets: a regression task given the wrong loss") {
    TraceBuilder b;
    Trace t = b.dense("relu", 8).dense("sigmoid", 1).config("loss", "binary_crossentropy").build(0);
    t.header.data_summary.target_columns = {{-2.1, 3.4, 0.0, 1.0, 0, 0}};
    t.header.data_summary.targets_integer = false;
    auto f = run("labels_invalid", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].symptom == "targets_outside_loss_domain");
    CHECK(f[0].root_cause == RootCause::kLoss);
    CHECK(f[0].conclusive);
    CHECK(f[0].recommendation.find("regression loss") != std::string::npos);
    CHECK(f[0].evidence["targets_integer"] == false);
    CHECK(f[0].layer == -1);  // the loss, not a layer
  }
  SUBCASE("non-integer and too large ids") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("softmax", 3).build(0);
    t.header.data_summary.label_issues = {{"data.csv:4", 1.5}};
    t.header.data_summary.label_issue_count = 1;
    auto f = run("labels_invalid", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].recommendation.find("integers") != std::string::npos);
    CHECK(f[0].layer == -1);  // the labels' encoding, not a layer
    t.header.data_summary.label_issues = {{"data.csv:4", 9}};
    f = run("labels_invalid", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].recommendation.find("10 units") != std::string::npos);
    CHECK(f[0].layer == 1);  // ids up to 9 for 3 outputs: the output layer is too narrow
  }
}

TEST_CASE("rule labels_invalid: judges the label values, never text (a file named like an issue)") {
  TraceBuilder b;
  Trace t = b.dense("relu", 16).dense("softmax", 3).build(0);
  an::DataSummary& d = t.header.data_summary;
  // Text parsing would read "class id 7" out of the file name and advise 8 output units.
  d.label_issues = {{"class id 7.csv:3", 3}, {"class id 7.csv:9", 3}};
  d.label_issue_count = 2;
  auto f = run("labels_invalid", t, false);
  REQUIRE(f.size() == 1);
  CHECK(f[0].recommendation.find("subtract 1") != std::string::npos);
  CHECK(f[0].evidence["max_listed_id"] == 3.0);
  CHECK(f[0].message.find("(first: class id 7.csv:3: class id 3 is outside 0..2)") != std::string::npos);
  CHECK(f[0].evidence["first_issues"][1] == "class id 7.csv:9: class id 3 is outside 0..2");
  // NaN and negative values are typed too.
  d.label_issues = {{"data.csv:2", std::nan("")}};
  f = run("labels_invalid", t, false);
  REQUIRE(f.size() == 1);
  CHECK(f[0].recommendation.find("integers") != std::string::npos);
  CHECK(f[0].evidence["first_issues"][0] == "data.csv:2: class id nan is not a number");
  d.label_issues = {{"data.csv:2", -1}};
  f = run("labels_invalid", t, false);
  REQUIRE(f.size() == 1);
  CHECK(f[0].recommendation.find("negative") != std::string::npos);
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
