// Static checks and trend rules (analysis/rules), across the rules: the healthy builder
// traces raise nothing, unknown threshold keys are rejected, chance accuracy. The rules
// themselves: rules_stat_model_test.cpp (loss_activation_mismatch, output_range,
// linear_stack, bad_initialization), rules_stat_data_test.cpp (labels_invalid,
// unnormalized_inputs), rules_trend_test.cpp (loss_not_decreasing, oscillating_loss,
// accuracy_not_increasing, training_too_short, loss_plateau).
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "rules_stat_util.h"

using namespace dl;
using namespace dl::test::rules_stat;

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
