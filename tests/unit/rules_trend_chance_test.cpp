// Trend rules judged against the loss of a constant prediction (issue 15's calibration on
// the suite's development split): training_too_short's unfinished and creeping cases,
// unlearnable_labels, loss_above_chance, and loss_not_decreasing's quiet zone far below
// that loss. Each: a true positive, the healthy run beside it, and a --set override at the
// threshold.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "analysis/analyzer.h"
#include "rules_stat_util.h"

using namespace dl;
using namespace dl::test::rules_stat;

namespace {

void set_update_ratio(Trace& t, double ratio) {
  for (size_t p = 0; p < t.header.probes.size(); ++p)
    if (t.header.probes[p].kind == an::ProbeKind::kUpdate)
      for (size_t r = 0; r < t.size(); ++r) t.at(r, p).mean = float(ratio);
}

const double kChance3 = std::log(3.0);  // the builder's 3 balanced classes

}  // namespace

TEST_CASE("rule training_too_short: one epoch that stopped mid-descent, its accuracy short of a fit") {
  TraceBuilder b;
  Trace t = b.dense("relu", 16).dense("softmax", 3).config("epochs", "1").batches_per_epoch(10).build(10);
  // Ten batches: the loss halves within the epoch (0.4 of the chance loss at the end), while
  // the per-batch accuracy already reads 0.9: the poor-metric judgement alone lets it pass.
  set_curve(
      t, [](int64_t it, double p) { return 1.0 - 0.55 * p + 0.01 * std::sin(2.3 * double(it)); },
      [](int64_t, double p) { return 0.6 + 0.3 * p; });
  auto f = run("training_too_short", t);
  REQUIRE(f.size() == 1);
  CHECK(f[0].conclusive);
  CHECK(f[0].root_cause == RootCause::kTrainingLength);
  CHECK(f[0].evidence["loss_share_of_constant_prediction"].get<double>() > 0.3);
  CHECK(f[0].evidence["suggested_epochs"].get<double>() >= 2);
  // A near-perfect accuracy (above chance + 95% of the way to 1): the rows are fitted already
  // (the demo at 2 epochs).
  set_curve(
      t, [](int64_t it, double p) { return 1.0 - 0.55 * p + 0.01 * std::sin(2.3 * double(it)); },
      [](int64_t, double p) { return 0.7 + 0.3 * p; });
  CHECK(run("training_too_short", t).empty());
  CHECK(run("training_too_short", t, true, with("training_too_short.unfinished_fraction=1.1")).size() == 1);
  // The same steep relative fall near a fit (healthy runs end below a tenth of the chance loss).
  set_curve(
      t, [](int64_t it, double p) { return 0.06 - 0.03 * p + 0.0005 * std::sin(2.3 * double(it)); },
      [](int64_t, double p) { return 0.95 + 0.04 * p; });
  CHECK(run("training_too_short", t).empty());
  // --set: a higher bar for "far from a fit".
  set_curve(
      t, [](int64_t it, double p) { return 1.0 - 0.55 * p + 0.01 * std::sin(2.3 * double(it)); },
      [](int64_t, double p) { return 0.6 + 0.3 * p; });
  CHECK(run("training_too_short", t, true, with("training_too_short.unfinished_loss=0.6")).empty());
  // Falling as steeply from a blow-up, but still far above the constant prediction's loss
  // (resnet18 with Adam at lr 10): a failing run, not an unfinished one.
  set_curve(
      t, [](int64_t it, double p) { return 40.0 * (1.0 - 0.85 * p) + 0.2 * std::sin(2.3 * double(it)); },
      [](int64_t, double p) { return 0.3 + 0.1 * p; });
  CHECK(run("training_too_short", t).empty());
  // (It peaks 40x above that loss: a blow-up too, so blowup is raised to see above_constant.)
  CHECK(run("training_too_short", t, true, with({"training_too_short.above_constant=100", "training_too_short.blowup=100"}))
            .size() == 1);
  // Fewer losses than min_points cannot show a trend.
  TraceBuilder b2;
  Trace s = b2.dense("relu", 16).dense("softmax", 3).config("epochs", "1").batches_per_epoch(8).build(8);
  set_curve(
      s, [](int64_t, double p) { return 1.0 - 0.5 * p; }, [](int64_t, double p) { return 0.6 + 0.3 * p; });
  CHECK(run("training_too_short", s).empty());
}

TEST_CASE("rule training_too_short: one epoch descending from far above the constant prediction's loss") {
  TraceBuilder b;
  Trace t = b.dense("relu", 16).dense("softmax", 3).config("epochs", "1").batches_per_epoch(25).build(25);
  // A regression net's first loss is several times the targets' variance: one epoch falls
  // from 4x the constant prediction's loss to 2x, never rising above its start.
  set_curve(
      t, [](int64_t it, double p) { return kChance3 * (4.0 - 2.0 * p + 0.1 * std::sin(2.3 * double(it))); },
      [](int64_t, double p) { return 0.34 + 0.1 * p; });
  auto f = run("training_too_short", t);
  REQUIRE(f.size() == 1);
  CHECK(f[0].conclusive);
  CHECK(f[0].root_cause == RootCause::kTrainingLength);
  CHECK(f[0].evidence["loss_share_of_constant_prediction"].get<double>() > 1.2);
  // --set: below 1, any loss counts as a rise (a blow-up).
  CHECK(run("training_too_short", t, true, with("training_too_short.no_rise=0.9")).empty());
  // The same end after a rise from the constant prediction's loss: the updates blew it up,
  // more epochs are not the fix (above_constant applies).
  set_curve(
      t, [](int64_t it, double p) { return kChance3 * (it < 3 ? 1.0 : 4.0 - 2.0 * p); },
      [](int64_t, double p) { return 0.34 + 0.1 * p; });
  CHECK(run("training_too_short", t).empty());
  // A flat one-epoch loss at 4x, never rising either: no descent, no finding.
  set_curve(
      t, [](int64_t it, double) { return kChance3 * (4.0 + 0.1 * std::sin(2.3 * double(it))); },
      [](int64_t, double p) { return 0.34 + 0.1 * p; });
  CHECK(run("training_too_short", t).empty());
  // Several epochs still above that loss fail to learn: not only too short.
  TraceBuilder b2;
  Trace m = b2.dense("relu", 16).dense("softmax", 3).config("epochs", "4").batches_per_epoch(25).build(100);
  set_curve(
      m, [](int64_t it, double p) { return kChance3 * (4.0 - 2.0 * p + 0.1 * std::sin(2.3 * double(it))); },
      [](int64_t, double p) { return 0.34 + 0.1 * p; });
  CHECK(run("training_too_short", m).empty());
}

TEST_CASE("rule training_too_short: not for a run settling at the chance loss after a blow-up") {
  TraceBuilder b;
  Trace t = b.dense("relu", 16).dense("softmax", 3).config("epochs", "6").batches_per_epoch(8).build(48);
  // A BatchNorm resnet at Adam lr 10 (models/modern/resnet_bn_lr_x1000): the first loss is
  // ~200x the constant prediction's, then it falls steadily to about it, accuracy at chance.
  auto settling = [](int64_t it, double p) {
    return it == 0 ? 200.0 * kChance3 : kChance3 * (1.25 - 0.27 * p) + 0.005 * std::sin(2.3 * double(it));
  };
  set_curve(t, settling, [](int64_t, double) { return 0.34; });
  CHECK(run("training_too_short", t).empty());
  CHECK(run("training_too_short", t, true, with("training_too_short.blowup=1000")).size() == 1);
  CHECK(run("training_too_short", t, true, with("training_too_short.blowup_end=1.1")).size() == 1);
  // The same slow fall at chance without the blow-up is a run still learning, too slowly.
  set_curve(
      t, [&](int64_t it, double p) { return settling(it == 0 ? 1 : it, p); }, [](int64_t, double) { return 0.34; });
  auto f = run("training_too_short", t);
  REQUIRE(f.size() == 1);
  CHECK(f[0].root_cause == RootCause::kTrainingLength);
}

TEST_CASE("rule training_too_short: a loss creeping down at a learning rate far below the default") {
  TraceBuilder b;
  Trace t = b.dense("relu", 16).dense("softmax", 3).config("epochs", "40").config("learning_rate", "1e-5").build(400);
  // Falls steadily but slowly (under 1% per epoch), still at 0.7 of the chance loss; the
  // accuracy (0.85) is not poor, so only the update sizes tell.
  set_curve(
      t, [](int64_t it, double p) { return 0.9 - 0.12 * p + 0.01 * std::sin(2.3 * double(it)); },
      [](int64_t, double) { return 0.85; });
  set_update_ratio(t, 5e-5);
  auto f = run("training_too_short", t);
  REQUIRE(f.size() == 1);
  CHECK(f[0].root_cause == RootCause::kLearningRate);
  CHECK(f[0].recommendation.find("increase the learning rate") != std::string::npos);
  CHECK(f[0].evidence["median_update_ratio"].get<double>() == doctest::Approx(5e-5));
  // Normal steps at the same rate: not the slow-rate case (and the metric is not poor).
  set_update_ratio(t, 1e-3);
  CHECK(run("training_too_short", t).empty());
  // The optimizer's default rate with tiny steps is something else (vanishing gradients).
  set_update_ratio(t, 5e-5);
  t.header.config["learning_rate"] = "0.001";
  CHECK(run("training_too_short", t).empty());
  t.header.config["learning_rate"] = "1e-5";
  CHECK(run("training_too_short", t, true, with("training_too_short.slow_update=1e-5")).empty());
}

TEST_CASE("rule unlearnable_labels: the second epoch at the chance loss, then slow memorisation") {
  TraceBuilder b;
  Trace t = b.dense("relu", 16).dense("softmax", 3).config("epochs", "20").build(200);
  set_curve(
      t, [](int64_t it, double p) { return kChance3 * (1.02 - 0.3 * p) + 0.01 * std::sin(double(it)); },
      [](int64_t, double p) { return 0.36 + 0.2 * p; });
  auto f = run("unlearnable_labels", t);
  REQUIRE(f.size() == 1);
  CHECK(f[0].conclusive);
  CHECK(f[0].root_cause == RootCause::kLabels);
  CHECK(f[0].layer == -1);
  CHECK(f[0].evidence["chance_loss"].get<double>() == doctest::Approx(kChance3));
  an::Diagnosis d = an::analyze(t, an::Settings(), true);
  REQUIRE(d.fault);
  CHECK(d.findings[0].root_cause == RootCause::kLabels);
  // loss_plateau does not blame the learning rate for the large steps random labels cause.
  for (size_t p = 0; p < t.header.probes.size(); ++p)
    if (t.header.probes[p].kind == an::ProbeKind::kUpdate) t.at(0, p).mean = 0.9f;
  CHECK(run("loss_plateau", t).empty());
  // Tiny steps: the learning rate's case, not the labels'.
  set_update_ratio(t, 1e-6);
  CHECK(run("unlearnable_labels", t).empty());
  set_update_ratio(t, 1e-3);
  // --set: a second epoch at 1.02 of the chance loss is below a bar of 1.1.
  CHECK(run("unlearnable_labels", t, true, with("unlearnable_labels.second_epoch=1.1")).empty());
  // A healthy run (the builder's) falls well below the chance loss by its second epoch.
  TraceBuilder b2;
  CHECK(run("unlearnable_labels", healthy(b2)).empty());
  // A slow start that then fits: the end is far below half the chance loss.
  set_curve(
      t, [](int64_t, double p) { return p < 0.15 ? kChance3 : kChance3 * std::exp(-6 * (p - 0.15)); },
      [](int64_t, double p) { return 0.36 + 0.6 * p; });
  CHECK(run("unlearnable_labels", t).empty());
}

TEST_CASE("rule loss_above_chance: worse than a constant prediction, or a badly scaled start") {
  TraceBuilder b;
  Trace t = b.dense("relu", 16).dense("softmax", 3).config("epochs", "20").build(200);
  SUBCASE("ends above the chance loss") {
    set_curve(
        t, [](int64_t it, double p) { return 6.0 - 3.5 * p + 0.01 * std::sin(double(it)); },
        [](int64_t, double p) { return 0.5 + 0.2 * p; });
    auto f = run("loss_above_chance", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].conclusive);
    CHECK(f[0].evidence["ends_above_chance"] == true);
    CHECK(run("loss_above_chance", t, true, with("loss_above_chance.end_factor=3")).empty());
  }
  SUBCASE("starts at 5x the chance loss with too wide initial weights, ends below it") {
    an::InitializerSummary& w = t.header.initializers[0];
    w.count = 16 * 4, w.std = 10, w.min = -30, w.max = 30;
    set_curve(
        t, [](int64_t it, double p) { return 5.5 * std::exp(-4 * p) + 0.4 + 0.01 * std::sin(double(it)); },
        [](int64_t, double p) { return 0.5 + 0.4 * p; });
    auto f = run("loss_above_chance", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].root_cause == RootCause::kInitialization);
    CHECK(f[0].evidence["ends_above_chance"] == false);
    an::Diagnosis d = an::analyze(t, an::Settings(), true);
    REQUIRE(d.fault);
    CHECK(d.findings[0].root_cause == RootCause::kInitialization);
    CHECK(d.findings[0].layer == 0);  // the wide layer, from the confirmed upstream warning
    // Without the warning a high start alone says nothing.
    w.std = 0.15, w.min = -0.3, w.max = 0.3;
    CHECK(run("loss_above_chance", t).empty());
  }
  SUBCASE("a healthy run") { CHECK(run("loss_above_chance", t).empty()); }
}

TEST_CASE("rule loss_not_decreasing: a regression that converged inside the first window has learned") {
  // models/benchmark cv_284189_fixed: a one-unit linear regression on standardised data, SGD
  // with batch 1, so the first window already holds hundreds of updates; the loss then only
  // wobbles around a third of the targets' variance (R^2 0.67), 4.5% below its first window.
  TraceBuilder b;
  Trace t = b.dense("linear", 1).config("loss", "mse").build(200);
  t.header.metric_name = "mae";
  t.header.metric_higher_is_better = false;
  t.header.data_summary.target_columns = {{-3.0, 3.0, 0.0, 1.0, 0, 0}};  // std 1: constant loss 1
  t.header.data_summary.targets_are_classes = false;
  set_update_ratio(t, 1e-2);
  const auto converged = [](int64_t it, double p) { return 0.356 - 0.016 * p + 0.003 * std::sin(double(it)); };
  set_curve(t, converged, [](int64_t, double) { return 0.45; });
  CHECK(run("loss_not_decreasing", t).empty());
  CHECK(run("loss_not_decreasing", t, true, with("loss_not_decreasing.learned_fraction=0.3")).size() == 1);
  an::Diagnosis d = an::analyze(t, an::Settings(), true);
  CHECK_FALSE(d.fault);
  // The same flat curve at the constant prediction's level (0.97 and above) learned nothing.
  set_curve(
      t, [](int64_t it, double p) { return 1.0 - 0.016 * p + 0.003 * std::sin(double(it)); },
      [](int64_t, double) { return 0.8; });
  CHECK(run("loss_not_decreasing", t).size() == 1);
  // Between the two, above half the constant loss, a flat curve still counts as stuck.
  set_curve(
      t, [](int64_t it, double p) { return 0.62 - 0.016 * p + 0.003 * std::sin(double(it)); },
      [](int64_t, double) { return 0.6; });
  CHECK(run("loss_not_decreasing", t).size() == 1);
}
