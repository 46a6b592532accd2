// Verified fixes, the analysis side (analysis/fixes.h): which repairs propose_fixes tries for
// a diagnosis and in which order. Diagnoses come from synthetic traces (trace_builder.h),
// through the analyzer where the rules give the finding, else built by hand with the symptom
// and root cause a rule emits. judge_trial, rank_fixes and to_json: fixes_verify_test.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "analysis/fixes.h"
#include "analysis/rules/rule_util.h"
#include "fixes_test_util.h"
#include "trace_builder.h"

namespace {

using namespace dl;
using an::Diagnosis;
using an::Finding;
using an::FixAction;
using an::FixCandidate;
using an::RootCause;
using an::Trace;
using test::TraceBuilder;
using namespace test::fixes;
using Kind = FixAction::Kind;

// One line per candidate, e.g. "learning_rate x0.1" or "activation 2=Sigmoid + loss=binary_crossentropy".
std::string text(const FixCandidate& c) {
  std::string s;
  for (const FixAction& a : c.actions) {
    if (!s.empty()) s += " + ";
    s += an::fix_kind_name(a.kind);
    if (a.kind == Kind::kLearningRate) {
      char buf[32];
      std::snprintf(buf, sizeof buf, " x%g", a.factor);
      s += buf;
    }
    if (a.layer >= 0) s += " " + std::to_string(a.layer);
    if (!a.value.empty()) s += (a.layer >= 0 ? "=" : " ") + a.value;
  }
  return s;
}
std::vector<std::string> texts(const std::vector<FixCandidate>& cs) {
  std::vector<std::string> out;
  for (const FixCandidate& c : cs) out.push_back(text(c));
  return out;
}
bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

// A regression MLP trained with plain SGD (the exploding-learning-rate case's shape).
Trace regression(TraceBuilder& b) {
  Trace t = b.dense("relu", 32).dense("relu", 32).dense("linear", 1).config("loss", "mse")
                .config("optimizer", "sgd").config("learning_rate", "1").build(60);
  t.header.metric_name = "mae";
  t.header.metric_higher_is_better = false;
  t.header.data_summary.target_columns = {{-2.0, 3.0, 0.0, 1.0, 0, 0}};
  t.header.data_summary.targets_are_classes = false;
  t.header.data_summary.classes = 0;
  return t;
}

// A binary task with a one-unit output (`activation`) and the loss `loss`.
Trace binary(TraceBuilder& b, const std::string& activation, const std::string& loss) {
  Trace t = b.dense("relu", 16).dense(activation, 1).config("loss", loss).config("optimizer", "rmsprop").build(60);
  t.header.data_summary.target_columns = {{0.0, 1.0, 0.5, 0.5, 0, 0}};
  t.header.data_summary.classes = 2;
  return t;
}

Trace multiclass(TraceBuilder& b) { return b.dense("relu", 16).dense("relu", 8).dense("softmax", 3).build(60); }

bool touches(const FixCandidate& c, Kind k, int layer) {
  for (const FixAction& a : c.actions)
    if (a.kind == k && a.layer == layer) return true;
  return false;
}

}  // namespace

// --- propose_fixes ------------------------------------------------------------------------------

TEST_CASE("fixes: NaN or exploding values from the learning rate lower it, tenfold first") {
  for (const char* symptom : {"nan_loss", "exploding_gradients", "inf_forward", "oscillating_loss"}) {
    CAPTURE(symptom);
    TraceBuilder b;
    const Trace t = regression(b);
    const auto cs = propose_fixes(faulty({finding(symptom, RootCause::kLearningRate)}), t);
    const auto v = texts(cs);
    REQUIRE(v.size() >= 2);
    CHECK(v[0] == "learning_rate x0.1");
    CHECK(v[1] == "learning_rate x0.01");
    CHECK(cs[0].root_cause == RootCause::kLearningRate);
    CHECK_FALSE(cs[0].why.empty());
    CHECK_FALSE(has(v, "learning_rate x10"));  // never the wrong direction
    CHECK(has(v, "optimizer adam"));           // a general remedy for an unstable run, after the evidence's
  }
}

TEST_CASE("fixes: a diverged trace through the analyzer proposes the smaller learning rates first") {
  TraceBuilder b;
  Trace t = regression(b);
  // Large updates, then NaN everywhere: what a too-high learning rate looks like.
  for (size_t k = 0; k < t.header.probes.size(); ++k)
    if (t.header.probes[k].kind == an::ProbeKind::kUpdate)
      for (size_t r = 25; r < 30; ++r) t.at(r, k).mean = 0.5f, t.at(r, k).l2 = 0.6f;
  for (size_t r = 30; r < t.size(); ++r) {
    t.records[r].loss = std::numeric_limits<float>::quiet_NaN();
    t.loss[size_t(t.records[r].iteration)] = std::numeric_limits<float>::quiet_NaN();
    for (size_t k = 0; k < t.header.probes.size(); ++k) t.at(r, k).nan = t.at(r, k).count;
  }
  const Diagnosis d = an::analyze(t, an::Settings(), true);
  REQUIRE(d.fault);
  REQUIRE(d.findings.front().root_cause == RootCause::kLearningRate);
  const auto v = texts(propose_fixes(d, t));
  REQUIRE(v.size() >= 2);
  CHECK(v[0] == "learning_rate x0.1");
  CHECK(v[1] == "learning_rate x0.01");
}

TEST_CASE("fixes: a loss plateau from the learning rate raises it tenfold first") {
  for (const char* symptom : {"loss_plateau", "loss_not_decreasing", "unchanged_weights"}) {
    CAPTURE(symptom);
    TraceBuilder b;
    const Trace t = multiclass(b);
    const auto v = texts(propose_fixes(faulty({finding(symptom, RootCause::kLearningRate)}), t));
    REQUIRE_FALSE(v.empty());
    CHECK(v[0] == "learning_rate x10");
    CHECK_FALSE(has(v, "learning_rate x0.1"));
    CHECK_FALSE(has(v, "learning_rate x0.01"));
  }
  SUBCASE("no direction in the symptom: both directions, smaller first") {
    TraceBuilder b;
    const auto v = texts(propose_fixes(faulty({finding("dead_units", RootCause::kLearningRate, 0)}), multiclass(b)));
    REQUIRE(v.size() >= 3);
    CHECK(v[0] == "learning_rate x0.1");
    CHECK(v[1] == "learning_rate x0.01");
    CHECK(v[2] == "learning_rate x10");
  }
}

TEST_CASE("fixes: a softmax over one unit with binary targets proposes a sigmoid") {
  SUBCASE("with binary_crossentropy already: the sigmoid alone, found by the analyzer") {
    TraceBuilder b;
    const Trace t = binary(b, "softmax", "binary_crossentropy");
    const Diagnosis d = an::analyze(t, an::Settings(), true);
    REQUIRE(d.fault);
    CHECK(d.findings.front().symptom == "softmax_single_unit");
    const auto cs = propose_fixes(d, t);
    REQUIRE_FALSE(cs.empty());
    CHECK(text(cs[0]) == "activation 1=Sigmoid");
    CHECK(cs[0].root_cause == RootCause::kActivation);
    for (const FixCandidate& c : cs) CHECK_FALSE(touches(c, Kind::kLoss, -1));  // the loss is right
  }
  SUBCASE("with a categorical loss: sigmoid and binary_crossentropy together, then the sigmoid alone") {
    TraceBuilder b;
    const Trace t = binary(b, "softmax", "categorical_crossentropy");
    const auto v = texts(propose_fixes(faulty({finding("softmax_single_unit", RootCause::kActivation, 1)}), t));
    REQUIRE(v.size() >= 2);
    CHECK(v[0] == "activation 1=Sigmoid + loss binary_crossentropy");
    CHECK(v[1] == "activation 1=Sigmoid");
  }
}

TEST_CASE("fixes: multi-label targets under a softmax and categorical loss propose sigmoid with binary_crossentropy") {
  TraceBuilder b;
  Trace t = b.dense("relu", 16).dense("softmax", 4).build(60);
  CHECK_FALSE(an::ru::multilabel_targets(t.header));  // one-hot rows sum to 1
  for (an::ColumnSummary& c : t.header.data_summary.target_columns) c.mean = 0.5;  // two labels per row
  CHECK(an::ru::multilabel_targets(t.header));
  const Diagnosis d = an::analyze(t, an::Settings(), true);
  REQUIRE(d.fault);
  CHECK(d.findings.front().symptom == "multilabel_categorical");
  const auto cs = propose_fixes(d, t);
  REQUIRE_FALSE(cs.empty());
  const FixCandidate& first = cs[0];
  REQUIRE(first.actions.size() == 2);
  bool sigmoid = false, bce = false;
  for (const FixAction& a : first.actions) {
    sigmoid = sigmoid || (a.kind == Kind::kActivation && a.layer == 1 && a.value == "Sigmoid");
    bce = bce || (a.kind == Kind::kLoss && a.value == "binary_crossentropy");
  }
  CHECK(sigmoid);
  CHECK(bce);
}

TEST_CASE("fixes: dead ReLUs propose LeakyRelu, then Elu") {
  TraceBuilder b;
  const Trace t = multiclass(b);
  const auto cs = propose_fixes(faulty({finding("dead_units", RootCause::kActivation, 0)}), t);
  REQUIRE(cs.size() >= 2);
  for (const auto& want : {std::pair<size_t, const char*>{0, "LeakyRelu"}, {1, "Elu"}}) {
    const size_t i = want.first;
    const char* op = want.second;  // not a structured binding: CAPTURE's lambda cannot take one in C++17 (clang)
    CAPTURE(op);
    CHECK(touches(cs[i], Kind::kActivation, 0));
    for (const FixAction& a : cs[i].actions) {
      CHECK(a.kind == Kind::kActivation);
      CHECK(a.value == op);
      CHECK(a.layer < 2);  // hidden layers only, never the softmax output
    }
  }
  CHECK(cs[0].root_cause == RootCause::kActivation);
}

TEST_CASE("fixes: constant-initialised layers propose re-initialisation") {
  TraceBuilder b;
  Trace t = b.dense("relu", 16).dense("sigmoid", 8).dense("softmax", 3).build(60);
  for (an::InitializerSummary& i : t.header.initializers)
    if (i.name == "0.weight" || i.name == "2.weight") i.min = i.max = i.mean = 0.0, i.std = 0;
  const auto cs = propose_fixes(faulty({finding("constant_initialization", RootCause::kInitialization, 0)}), t);
  REQUIRE_FALSE(cs.empty());
  // Both constant layers in one repair: He for the ReLU layer, Glorot for the sigmoid one.
  CHECK(text(cs[0]) == "reinitialize 0=he_uniform + reinitialize 1=glorot_uniform");
  CHECK(cs[0].root_cause == RootCause::kInitialization);
  SUBCASE("a badly scaled (not constant) layer: that layer") {
    TraceBuilder b2;
    const Trace t2 = multiclass(b2);
    const auto v = texts(propose_fixes(faulty({finding("bad_initialization", RootCause::kInitialization, 1)}), t2));
    REQUIRE_FALSE(v.empty());
    CHECK(v[0] == "reinitialize 1=he_uniform");
  }
}

TEST_CASE("fixes: every too-wide layer is re-initialised together, whichever finding leads") {
  TraceBuilder b;
  const Trace t = multiclass(b);
  Finding wide = finding("wide_initialization", RootCause::kInitialization, 0, false);
  wide.evidence["wide_layers"] = {0, 2};
  // The primary finding is a consequence at the output (the loss stays above chance).
  const auto v = texts(propose_fixes(faulty({finding("loss_above_chance", RootCause::kInitialization, 2), wide}), t));
  REQUIRE_FALSE(v.empty());
  CHECK(v[0] == "reinitialize 0=he_uniform + reinitialize 2=glorot_uniform");
}

TEST_CASE("fixes: a batch of one row tries a batch of 32, first when BatchNormalization normalises dense units") {
  TraceBuilder b;
  Trace t = multiclass(b);
  t.header.config["batch_size"] = "1";
  const Diagnosis d = faulty({finding("dead_units", RootCause::kLearningRate, 1)});
  // Without BatchNormalization: after the smaller learning rates.
  auto v = texts(propose_fixes(d, t));
  REQUIRE(v.size() >= 3);
  CHECK(v[0] == "learning_rate x0.1");
  CHECK(has(v, "batch_size"));
  CHECK(std::find(v.begin(), v.end(), "batch_size") > std::find(v.begin(), v.end(), "learning_rate x0.01"));
  // A BatchNormalization over 8 dense units: a batch of one row is the first repair.
  an::Probe bn;
  bn.layer = 1, bn.op_type = "BatchNormalization", bn.op.normalizes = true, bn.op.units = 8, bn.op.sample_size = 8;
  t.header.probes.push_back(bn);
  const auto cs = propose_fixes(d, t);
  REQUIRE_FALSE(cs.empty());
  CHECK(text(cs[0]) == "batch_size");
  CHECK(cs[0].actions[0].count == 32);
  CHECK(cs[0].root_cause == RootCause::kLearningRate);
  // Over 4x4 positions per channel it normalises 16 values per row: no collapse, no repair first.
  t.header.probes.back().op.sample_size = 8 * 16;
  CHECK(text(propose_fixes(d, t)[0]) == "learning_rate x0.1");
  // A batch of 16 rows: never.
  t.header.config["batch_size"] = "16";
  CHECK_FALSE(has(texts(propose_fixes(d, t)), "batch_size"));
}

TEST_CASE("fixes: label issues propose remapping the class ids") {
  TraceBuilder b;
  Trace t = multiclass(b);
  t.header.data_summary.label_issue_count = 12;
  t.header.data_summary.label_issues = {{"line 3", 3}};
  const auto cs = propose_fixes(faulty({finding("invalid_labels", RootCause::kLabels)}), t);
  REQUIRE_FALSE(cs.empty());
  CHECK(text(cs[0]) == "labels");
  CHECK(cs[0].root_cause == RootCause::kLabels);
  SUBCASE("edge: no label issue in the data summary, no remap") {
    t.header.data_summary.label_issue_count = 0;
    for (const FixCandidate& c : propose_fixes(faulty({finding("invalid_labels", RootCause::kLabels)}), t))
      CHECK(text(c) != "labels");
  }
}

TEST_CASE("fixes: a healthy diagnosis gets no candidates") {
  TraceBuilder b;
  const Trace t = multiclass(b);
  const Diagnosis healthy = an::analyze(t, an::Settings(), true);
  REQUIRE_FALSE(healthy.fault);
  CHECK(propose_fixes(healthy, t).empty());
  Diagnosis warned;  // warnings only: still healthy
  warned.warnings = {finding("unnormalized_inputs", RootCause::kData, -1, false)};
  CHECK(propose_fixes(warned, t).empty());
  Diagnosis empty_fault;  // edge: a fault without findings
  empty_fault.fault = true;
  CHECK(propose_fixes(empty_fault, t).empty());
}

TEST_CASE("fixes: candidates are distinct and never repeat or change again what is applied") {
  TraceBuilder b;
  const Trace reg = regression(b);
  TraceBuilder b2;
  const Trace bin = binary(b2, "softmax", "categorical_crossentropy");
  TraceBuilder b3;
  const Trace multi = multiclass(b3);
  struct Case {
    const Trace* trace;
    Diagnosis diagnosis;
    std::vector<FixAction> applied;
  };
  const std::vector<Case> cases = {
      {&reg, faulty({finding("nan_loss", RootCause::kLearningRate)}), {action(Kind::kLearningRate, -1, "", 0.1)}},
      {&reg, faulty({finding("loss_plateau", RootCause::kLearningRate)}), {action(Kind::kLearningRate, -1, "", 10)}},
      {&bin, faulty({finding("softmax_single_unit", RootCause::kActivation, 1)}), {action(Kind::kActivation, 1, "Sigmoid")}},
      {&bin, faulty({finding("softmax_single_unit", RootCause::kActivation, 1)}),
       {action(Kind::kActivation, 1, "Sigmoid"), action(Kind::kLoss, -1, "binary_crossentropy")}},
      {&multi, faulty({finding("dead_units", RootCause::kActivation, 0)}), {action(Kind::kActivation, 0, "LeakyRelu")}},
      {&reg, faulty({finding("loss_plateau", RootCause::kOptimizer)}), {action(Kind::kOptimizer, -1, "adam")}},
      {&reg, faulty({finding("unnormalized_inputs", RootCause::kData)}), {action(Kind::kFeatures, -1, "standardize")}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    CAPTURE(i);
    const Case& c = cases[i];
    const auto cs = propose_fixes(c.diagnosis, *c.trace, c.applied);
    const auto v = texts(cs);
    for (size_t j = 0; j < cs.size(); ++j) {
      CAPTURE(v[j]);
      for (size_t k = 0; k < j; ++k) CHECK(cs[k].actions != cs[j].actions);
      for (const FixAction& a : cs[j].actions)
        for (const FixAction& done : c.applied) {
          CHECK_FALSE(a == done);
          CHECK_FALSE((a.kind == done.kind && a.layer == done.layer));
        }
    }
  }
  // Without `applied`, the same diagnoses do propose those changes (the filter is what removed them).
  CHECK(has(texts(propose_fixes(cases[0].diagnosis, reg)), "learning_rate x0.1"));
  CHECK(has(texts(propose_fixes(cases[2].diagnosis, bin)), "activation 1=Sigmoid"));
  CHECK(has(texts(propose_fixes(cases[4].diagnosis, multi)), "activation 0=LeakyRelu + activation 1=LeakyRelu"));
}

TEST_CASE("fixes: a dropout above 0.5 proposes its keep-probability reading, then none") {
  TraceBuilder b;
  Trace t = multiclass(b);
  for (an::Probe& p : t.header.probes)
    if (p.kind == an::ProbeKind::kForward && p.layer == 1) p.op.drop_rate = 0.95;
  const auto cs = propose_fixes(faulty({finding("excessive_dropout", RootCause::kArchitecture, 1)}), t);
  REQUIRE(cs.size() >= 2);
  REQUIRE(cs[0].actions.size() == 1);
  CHECK(cs[0].actions[0].kind == Kind::kDropout);
  CHECK(cs[0].actions[0].layer == 1);
  CHECK(cs[0].actions[0].factor == doctest::Approx(0.05));
  CHECK(cs[1].actions[0].factor == 0.0);
  CHECK(cs[0].root_cause == RootCause::kArchitecture);
  // A usual rate (0.5 or less) is not a candidate.
  for (an::Probe& p : t.header.probes) p.op.drop_rate = p.op.drop_rate > 0 ? 0.5 : 0.0;
  for (const auto& c : propose_fixes(faulty({finding("loss_plateau", RootCause::kArchitecture)}), t))
    CHECK_FALSE(touches(c, Kind::kDropout, 1));
}

TEST_CASE("fixes: a learning rate far from the optimizer's default also tries the default") {
  TraceBuilder b;
  Trace t = b.dense("relu", 16).dense("softmax", 3).config("optimizer", "adam").config("learning_rate", "5e-06").build(60);
  auto v = texts(propose_fixes(faulty({finding("loss_not_decreasing", RootCause::kLearningRate)}), t));
  REQUIRE(v.size() >= 2);
  CHECK(v[0] == "learning_rate x10");
  CHECK(v[1] == "learning_rate x200");  // 5e-6 -> 0.001
  t.header.config["learning_rate"] = "1";
  v = texts(propose_fixes(faulty({finding("nan_loss", RootCause::kLearningRate)}), t));
  REQUIRE(v.size() >= 3);
  CHECK(v[0] == "learning_rate x0.1");
  CHECK(v[1] == "learning_rate x0.001");
  CHECK(v[2] == "learning_rate x0.01");
  t.header.config["learning_rate"] = "0.003";  // within 100x of it: the tenfold steps only
  v = texts(propose_fixes(faulty({finding("loss_not_decreasing", RootCause::kLearningRate)}), t));
  CHECK_FALSE(has(v, "learning_rate x0.333"));
}

TEST_CASE("fixes: a rule's own learning-rate direction wins over its symptom's pace") {
  TraceBuilder b;
  const Trace t = multiclass(b);
  Finding f = finding("unchanged_weights", RootCause::kLearningRate);  // pace: too slow
  CHECK(texts(propose_fixes(faulty({f}), t))[0] == "learning_rate x10");
  f.lr_direction = -1;  // the weights stopped after a blow-up into saturation
  const auto v = texts(propose_fixes(faulty({f}), t));
  CHECK(v[0] == "learning_rate x0.1");
  CHECK_FALSE(has(v, "learning_rate x10"));
}
