// Verified fixes, the analysis side (analysis/fixes.h): how judge_trial decides that a trial
// verifies a repair, how rank_fixes orders the outcomes, and the JSON of an outcome
// (CONTRACT.md's `fixes`). propose_fixes: fixes_test.cpp.
#include <doctest/doctest.h>

#include <limits>
#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "analysis/fixes.h"
#include "fixes_test_util.h"

namespace {

using namespace dl;
using an::Diagnosis;
using an::Finding;
using an::FixAction;
using an::FixMetrics;
using an::FixOutcome;
using an::RootCause;
using namespace test::fixes;
using Kind = FixAction::Kind;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

// --- judge_trial --------------------------------------------------------------------------------

namespace {

FixMetrics metrics(double loss, double metric) {
  FixMetrics m;
  m.loss = loss, m.metric = metric;
  return m;
}

an::TrialJudgement judge(const FixMetrics& before, const FixMetrics& after, const Diagnosis& trial = Diagnosis(),
                         bool higher = true, bool completed = true, bool comparable = true,
                         const an::VerifyMargins& margins = {}) {
  const Diagnosis original = faulty({finding("loss_plateau", RootCause::kLearningRate),
                                     finding("dead_units", RootCause::kActivation, 0, false)});
  return an::judge_trial(original, before, trial, after, higher, completed, comparable, margins);
}

bool starts(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

TEST_CASE("fixes: judge_trial verifies a clear improvement with the symptom gone") {
  const auto j = judge(metrics(1.0, 0.5), metrics(0.5, 0.9));
  CHECK(j.verified);
  CHECK(j.reason == "verified");
}

TEST_CASE("fixes: judge_trial rejects a trial whose primary symptom remains") {
  // However good the numbers, and even when the finding is only a warning now.
  const auto j = judge(metrics(1.0, 0.5), metrics(0.1, 0.99),
                       faulty({finding("loss_plateau", RootCause::kLearningRate, -1, false)}));
  CHECK_FALSE(j.verified);
  CHECK(starts(j.reason, "symptom remains: loss_plateau"));
}

TEST_CASE("fixes: a layer-local symptom remains only at its layer") {
  // The faulty run's primary: dead units at the output layer 2. A repair of that layer that
  // leaves dead units at layer 0 removed the symptom where it was (the trial can be built
  // on: models/benchmark's so_44066044, whose repair of the output ReLU reveals the unscaled
  // inputs' dead units upstream).
  const Diagnosis original = faulty({finding("dead_units", RootCause::kActivation, 2)});
  const auto elsewhere = an::judge_trial(original, metrics(1.0, 0.5),
                                         faulty({finding("dead_units", RootCause::kData, 0, false)}),
                                         metrics(0.5, 0.9), true, true, true, {});
  CHECK(elsewhere.status != an::TrialStatus::kSymptomRemains);
  const auto same = an::judge_trial(original, metrics(1.0, 0.5), faulty({finding("dead_units", RootCause::kData, 2)}),
                                    metrics(0.5, 0.9), true, true, true, {});
  CHECK(same.status == an::TrialStatus::kSymptomRemains);
  // A symptom without a layer remains wherever it is seen.
  const Diagnosis no_layer = faulty({finding("loss_plateau", RootCause::kLearningRate)});
  CHECK(an::judge_trial(no_layer, metrics(1.0, 0.5), faulty({finding("loss_plateau", RootCause::kData, 1)}),
                        metrics(0.5, 0.9), true, true, true, {})
            .status == an::TrialStatus::kSymptomRemains);
}

TEST_CASE("fixes: judge_trial rejects any conclusive fault left, not a warning or a consequence") {
  const auto bad = judge(metrics(1.0, 0.5), metrics(0.5, 0.9), faulty({finding("nan_loss", RootCause::kLearningRate)}));
  CHECK_FALSE(bad.verified);
  CHECK(bad.reason == "new fault: nan_loss");
  // A warning, or a consequence of another finding: no fault left.
  CHECK(judge(metrics(1.0, 0.5), metrics(0.5, 0.9), faulty({finding("nan_loss", RootCause::kData, -1, false)})).verified);
  Finding consequence = finding("nan_forward", RootCause::kData);
  consequence.consequence_of = 0;
  CHECK(judge(metrics(1.0, 0.5), metrics(0.5, 0.9),
              faulty({finding("dead_units", RootCause::kActivation, 0, false), consequence})).verified);
  // Another conclusive symptom the faulty run had, left once its primary symptom is gone:
  // the run still fails (random labels at a tenth of the rate no longer look random, yet
  // learn nothing), so the trial is no fix, though the repairs for it can build on it.
  const auto left = judge(metrics(1.0, 0.5), metrics(0.5, 0.9), faulty({finding("dead_units", RootCause::kActivation, 0)}));
  CHECK_FALSE(left.verified);
  CHECK(left.reason == "still faulty: dead_units");
  CHECK(left.status == an::TrialStatus::kNewFault);
}

TEST_CASE("fixes: judge_trial verifies NaN or Inf turned finite, and rejects an infinite loss") {
  CHECK(judge(metrics(kNaN, kNaN), metrics(0.7, 0.6)).verified);
  CHECK(judge(metrics(kInf, 0.1), metrics(50.0, 0.1)).verified);   // any finite loss is progress
  CHECK(judge(metrics(kNaN, kNaN), metrics(0.7, kNaN), Diagnosis(), false).verified);
  const auto inf = judge(metrics(kNaN, kNaN), metrics(kInf, 0.6));
  CHECK_FALSE(inf.verified);
  CHECK(inf.reason == "loss is infinite");
  CHECK_FALSE(judge(metrics(kNaN, kNaN), metrics(kNaN, kNaN)).verified);  // still NaN: nothing to show
}

TEST_CASE("fixes: judge_trial's loss margin") {
  CHECK(judge(metrics(1.0, 0.5), metrics(0.85, 0.5)).verified);          // 15% lower
  CHECK_FALSE(judge(metrics(1.0, 0.5), metrics(0.95, 0.5)).verified);    // 5%: within noise
  CHECK(judge(metrics(1.0, 0.5), metrics(0.95, 0.5)).reason == "no clear improvement");
  CHECK_FALSE(judge(metrics(1.0, 0.5), metrics(0.5, 0.45)).verified);    // lower loss, worse accuracy
  CHECK(judge(metrics(1.0, 0.5), metrics(0.5, 0.49)).verified);          // accuracy within its margin
  // --set fixes.loss_margin: a stricter margin.
  an::VerifyMargins strict;
  strict.loss = 0.5;
  CHECK_FALSE(judge(metrics(1.0, 0.5), metrics(0.8, 0.5), Diagnosis(), true, true, true, strict).verified);
  CHECK(judge(metrics(1.0, 0.5), metrics(0.4, 0.5), Diagnosis(), true, true, true, strict).verified);
}

TEST_CASE("fixes: judge_trial's metric margin") {
  CHECK(judge(metrics(1.0, 0.5), metrics(1.0, 0.55)).verified);          // +5 points, loss unchanged
  CHECK_FALSE(judge(metrics(1.0, 0.5), metrics(1.0, 0.51)).verified);    // +1 point: within its margin
  CHECK_FALSE(judge(metrics(1.0, 0.5), metrics(1.5, 0.6)).verified);     // better accuracy, much higher loss
  SUBCASE("an error metric (lower is better)") {
    CHECK(judge(metrics(1.0, 1.0), metrics(1.0, 0.9), Diagnosis(), false).verified);
    CHECK_FALSE(judge(metrics(1.0, 1.0), metrics(1.0, 0.99), Diagnosis(), false).verified);
    CHECK_FALSE(judge(metrics(1.0, 1.0), metrics(1.0, 1.2), Diagnosis(), false).verified);
  }
}

TEST_CASE("fixes: judge_trial counts a loss that is not comparable as unchanged") {
  // A change of loss function: a lower number of another loss proves nothing ...
  CHECK_FALSE(judge(metrics(1.0, 0.5), metrics(0.1, 0.5), Diagnosis(), true, true, false).verified);
  // ... nor does a higher one hold a better metric back.
  CHECK(judge(metrics(1.0, 0.5), metrics(5.0, 0.8), Diagnosis(), true, true, false).verified);
}

TEST_CASE("fixes: without a common loss or metric, a healthy trial is verified and a faulty one is not") {
  // Binary cross-entropy on regression targets (accuracy 0) repaired to mse (metric mae).
  const auto healthy = judge(metrics(-2.9, 0.0), metrics(0.36, kNaN), Diagnosis(), true, true, false);
  CHECK(healthy.verified);
  CHECK(starts(healthy.reason, "verified"));
  an::Diagnosis still = faulty({finding("training_too_short", RootCause::kTrainingLength)});
  CHECK_FALSE(judge(metrics(-2.9, 0.0), metrics(0.36, kNaN), still, true, true, false).verified);
  // A comparable loss still has to improve: the rule is only for a loss that changed.
  CHECK_FALSE(judge(metrics(1.0, kNaN), metrics(1.0, kNaN), Diagnosis(), true, true, true).verified);
}

TEST_CASE("fixes: judge_trial rejects a trial cut short by the budget") {
  const auto j = judge(metrics(1.0, 0.5), metrics(0.1, 0.99), Diagnosis(), true, false);
  CHECK_FALSE(j.verified);
  CHECK(j.reason.find("budget") != std::string::npos);
}

// --- rank_fixes ---------------------------------------------------------------------------------

namespace {

FixOutcome outcome(int order, bool verified, double loss, double metric, bool comparable = true) {
  FixOutcome o;
  o.change = "fix " + std::to_string(order);
  o.order = order;
  o.verified = verified;
  o.after = metrics(loss, metric);
  o.loss_comparable = comparable;
  return o;
}

std::vector<int> orders(const std::vector<FixOutcome>& v) {
  std::vector<int> out;
  for (const FixOutcome& o : v) out.push_back(o.order);
  return out;
}

}  // namespace

TEST_CASE("fixes: rank_fixes puts verified fixes first") {
  std::vector<FixOutcome> v = {outcome(0, false, 0.1, 0.99), outcome(1, true, 0.5, 0.8), outcome(2, false, 0.2, 0.9),
                               outcome(3, true, 0.5, 0.8)};
  an::rank_fixes(v, true);
  CHECK(orders(v) == std::vector<int>{1, 3, 0, 2});  // a better unverified result never jumps a verified one
}

TEST_CASE("fixes: rank_fixes moves a clear metric winner ahead, otherwise keeps the proposal order") {
  SUBCASE("accuracy: clear winner") {
    std::vector<FixOutcome> v = {outcome(0, true, 0.5, 0.80), outcome(1, true, 0.5, 0.95), outcome(2, true, 0.5, 0.80)};
    an::rank_fixes(v, true);
    CHECK(orders(v) == std::vector<int>{1, 0, 2});
  }
  SUBCASE("accuracy within its margin: proposal order, whatever the input order") {
    std::vector<FixOutcome> v = {outcome(2, true, 0.5, 0.805), outcome(0, true, 0.5, 0.80), outcome(1, true, 0.5, 0.803)};
    an::rank_fixes(v, true);
    CHECK(orders(v) == std::vector<int>{0, 1, 2});
  }
  SUBCASE("an error metric: lower wins by more than 5%") {
    std::vector<FixOutcome> v = {outcome(0, true, 0.5, 0.50), outcome(1, true, 0.5, 0.30), outcome(2, true, 0.5, 0.49)};
    an::rank_fixes(v, false);
    CHECK(orders(v) == std::vector<int>{1, 0, 2});
  }
  SUBCASE("a metric that does not measure the task (multi-label accuracy): the loss decides") {
    std::vector<FixOutcome> v = {outcome(0, true, 0.3, 0.63), outcome(1, true, 0.005, 0.56)};
    an::rank_fixes(v, true);
    CHECK(orders(v) == std::vector<int>{0, 1});
    an::rank_fixes(v, true, false);
    CHECK(orders(v) == std::vector<int>{1, 0});
  }
  SUBCASE("no metric: a clearly lower comparable loss, never a loss of another function") {
    std::vector<FixOutcome> v = {outcome(0, true, 1.0, kNaN), outcome(1, true, 0.5, kNaN)};
    an::rank_fixes(v, true);
    CHECK(orders(v) == std::vector<int>{1, 0});
    std::vector<FixOutcome> w = {outcome(0, true, 1.0, kNaN), outcome(1, true, 0.5, kNaN, false)};
    an::rank_fixes(w, true);
    CHECK(orders(w) == std::vector<int>{0, 1});
  }
  SUBCASE("a finite metric beats a missing one") {
    std::vector<FixOutcome> v = {outcome(0, true, 0.5, kNaN), outcome(1, true, 0.5, 0.7)};
    an::rank_fixes(v, true);
    CHECK(orders(v) == std::vector<int>{1, 0});
  }
}

// --- to_json ------------------------------------------------------------------------------------

TEST_CASE("fixes: to_json has the contract's fields, null for NaN") {
  FixOutcome o = outcome(0, true, 0.25, 0.9);
  o.change = "learning rate 1 -> 0.1";
  o.root_cause = RootCause::kLearningRate;
  o.metric_name = "accuracy";
  o.before = metrics(kNaN, 0.5);
  o.seconds = 1.5;
  o.actions = {action(Kind::kLearningRate, -1, "", 0.1)};
  o.epoch_loss = {0.9, kInf, 0.25};
  const nlohmann::json j = an::to_json(o);
  for (const char* key : {"change", "root_cause", "verified", "before", "after", "seconds"}) CHECK(j.contains(key));
  CHECK(j["change"] == "learning rate 1 -> 0.1");
  CHECK(j["root_cause"] == "learning_rate");
  CHECK(j["verified"] == true);
  CHECK(j["before"]["loss"].is_null());
  CHECK(j["before"]["accuracy"] == 0.5);
  CHECK(j["after"]["loss"] == 0.25);
  CHECK(j["after"]["accuracy"] == 0.9);
  CHECK(j["seconds"] == 1.5);
  CHECK(j["actions"][0]["kind"] == "learning_rate");
  CHECK(j["actions"][0]["factor"] == 0.1);
  CHECK_FALSE(j["actions"][0].contains("layer"));
  CHECK(j["after_loss_curve"][1].is_null());
  CHECK_FALSE(j.contains("python_code"));
  CHECK_FALSE(j.contains("after_train_units"));
  CHECK(j.dump().find("NaN") == std::string::npos);  // valid JSON, no NaN literal
}

TEST_CASE("fixes: to_json of an error metric and of a data repair") {
  FixOutcome o = outcome(3, false, kInf, 0.4);
  o.metric_name = "mae";
  o.before = metrics(2.0, kNaN);
  o.actions = {action(Kind::kActivation, 2, "Sigmoid")};
  o.targets_scaled = true;
  o.after_train_units = metrics(0.1, 0.2);
  o.python_code = "y = (y - 3.0) / 2.0";
  const nlohmann::json j = an::to_json(o);
  CHECK(j["verified"] == false);
  CHECK(j["after"]["loss"].is_null());
  CHECK(j["after"]["accuracy"].is_null());  // the contract's key stays, null: the metric is not accuracy
  CHECK(j["after"]["mae"] == 0.4);
  CHECK(j["before"]["mae"].is_null());
  CHECK(j["after_train_units"]["mae"] == 0.2);
  CHECK(j["python_code"] == o.python_code);
  CHECK(j["actions"][0]["layer"] == 2);
  CHECK(j["actions"][0]["value"] == "Sigmoid");
  CHECK_FALSE(j["actions"][0].contains("factor"));
}

TEST_CASE("fixes: judge_trial rejects a trial that learned nothing, whatever its findings") {
  // Random labels at a tenth of the rate: the rules fall quiet, the loss ends at 0.97 of the
  // constant prediction's (accuracy 0.20 of 10 classes). Not a fix.
  const Diagnosis faulty_run = faulty({finding("unlearnable_labels", RootCause::kLabels)});
  const auto stays = an::judge_trial(faulty_run, metrics(2.30, 0.10), Diagnosis(), metrics(2.23, 0.20), true, true,
                                     true, {}, 0.97);
  CHECK_FALSE(stays.verified);
  CHECK(stays.reason == "learned nothing: the loss ends at 97% of a constant prediction's");
  CHECK(an::judge_trial(faulty_run, metrics(2.30, 0.10), Diagnosis(), metrics(1.0, 0.70), true, true, true, {}, 0.43)
            .verified);
  // Unknown (regression without a constant level, another loss): the other checks decide.
  CHECK(an::judge_trial(faulty_run, metrics(2.30, 0.10), Diagnosis(), metrics(1.0, 0.70), true, true, true).verified);
}
