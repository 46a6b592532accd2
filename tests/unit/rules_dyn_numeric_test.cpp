// Dynamic rules for non-finite and exploding values (analysis/rules): numerical_error,
// exploding_tensor. Each: a true positive, root causes, edge cases, a --set override.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "rules_dyn_util.h"

using namespace dl;
using namespace dl::test::rules_dyn;

// --- numerical_error --------------------------------------------------------------------------

TEST_CASE("rule numerical_error: NaN in a forward value, first layer in graph order") {
  TraceBuilder b;
  Trace t = healthy(b);
  poison_from(t, 31);
  // At record 30 layer 1's activation overflows first; later layers follow.
  t.at(30, b.forward(1, true)).inf = 3;
  t.at(30, b.forward(2, true)).nan = 5;
  t.at(30, b.gradient(0, false)).nan = 7;
  std::vector<Finding> fs = run("numerical_error", t, false);
  REQUIRE(fs.size() == 1);
  const Finding& f = fs[0];
  CHECK(f.symptom == "inf_forward");
  CHECK(f.stage == Stage::kForward);
  CHECK(f.layer == 1);
  CHECK(f.iteration == 30);
  CHECK(f.epoch == 3);
  CHECK(f.conclusive);
  // No NaN in the data, healthy updates before, a bounded activation: the learning rate.
  CHECK(f.root_cause == RootCause::kLearningRate);
  CHECK(f.message.find("layer 1") != std::string::npos);
  CHECK(f.recommendation.find("--lr 0.0001") != std::string::npos);
  CHECK(f.evidence["inf_count"] == 3);

  // NaN (not only Inf) reads nan_forward.
  t.at(30, b.forward(1, true)).nan = 1;
  CHECK(run("numerical_error", t)[0].symptom == "nan_forward");
}

TEST_CASE("rule numerical_error: root causes") {
  SUBCASE("large updates before the fault: learning rate") {
    TraceBuilder b;
    Trace t = healthy(b);
    set_updates(t, 1, 25, 30, 0.5);
    poison_from(t, 30);
    const Finding f = run("numerical_error", t)[0];
    CHECK(f.root_cause == RootCause::kLearningRate);
    CHECK(f.message.find("too high") != std::string::npos);
    CHECK(f.evidence["max_update_ratio_before"].get<double>() == doctest::Approx(0.5));
  }
  SUBCASE("NaN in the data") {
    TraceBuilder b;
    Trace t = healthy(b);
    t.header.data_summary.feature_columns[2].nan = 4;
    poison_from(t, 0);
    const Finding f = run("numerical_error", t)[0];
    CHECK(f.root_cause == RootCause::kData);
    CHECK(f.iteration == 0);
    CHECK(f.layer == 0);
  }
  SUBCASE("NaN in an initializer") {
    TraceBuilder b;
    Trace t = healthy(b);
    t.header.initializers[1].nan = 2;
    poison_from(t, 0);
    CHECK(run("numerical_error", t)[0].root_cause == RootCause::kInitialization);
  }
  SUBCASE("unnormalised inputs") {
    TraceBuilder b;
    Trace t = healthy(b);
    t.header.data_summary.all_features.max = 5000;
    poison_from(t, 12);
    CHECK(run("numerical_error", t)[0].root_cause == RootCause::kData);
  }
  SUBCASE("an unbounded op overflows on finite inputs: activation") {
    TraceBuilder b;
    Trace t = healthy(b);
    an::OpDescription& op = t.header.probes[b.forward(0, true)].op;  // make it a Log-like op
    op.role = "elementwise";
    op.out_lo = -std::numeric_limits<double>::infinity();
    op.has_dead_zone = false;
    t.header.probes[b.forward(0, true)].op_type = "Log";
    poison_from(t, 6);
    t.at(5, b.forward(0, true)).inf = 9;
    const Finding f = run("numerical_error", t)[0];
    CHECK(f.iteration == 5);
    CHECK(f.layer == 0);
    CHECK(f.root_cause == RootCause::kActivation);
    CHECK(f.recommendation.find("Log") != std::string::npos);
    // The same with large updates before: the learning rate wins; --set lowers the bar.
    set_updates(t, -1, 0, 5, 0.05);
    CHECK(run("numerical_error", t)[0].root_cause == RootCause::kActivation);
    CHECK(run("numerical_error", t, true, with({"numerical_error.large_update=0.01"}))[0].root_cause ==
          RootCause::kLearningRate);
  }
}

TEST_CASE("rule numerical_error: backward, loss, weights and decimated records") {
  SUBCASE("gradients: the deepest layer") {
    TraceBuilder b;
    Trace t = healthy(b);
    t.at(40, b.gradient(0, true)).nan = 2;
    t.at(40, b.gradient(1, false)).nan = 2;
    t.at(40, b.param_grad(1)).inf = 1;
    const Finding f = run("numerical_error", t)[0];
    CHECK(f.symptom == "nan_backward");
    CHECK(f.stage == Stage::kBackward);
    CHECK(f.layer == 1);
    CHECK(f.iteration == 40);
  }
  SUBCASE("only the loss: stage loss, no layer") {
    TraceBuilder b;
    Trace t = healthy(b);
    t.records[50].loss = kNaN;
    t.loss[50] = kNaN;
    const Finding f = run("numerical_error", t)[0];
    CHECK(f.symptom == "nan_loss");
    CHECK(f.stage == Stage::kLoss);
    CHECK(f.layer == -1);
    CHECK(f.iteration == 50);
  }
  SUBCASE("a loss NaN in an iteration that was not recorded") {
    TraceBuilder b;
    Trace t = healthy(b);
    t.loss[77] = kNaN;  // the records (decimated in long runs) do not hold iteration 77
    const Finding f = run("numerical_error", t)[0];
    CHECK(f.symptom == "nan_loss");
    CHECK(f.iteration == 77);
    CHECK(f.epoch == 7);
  }
  SUBCASE("updates and weights") {
    TraceBuilder b;
    Trace t = healthy(b);
    t.at(60, b.update(2)).nan = 1;
    t.at(60, b.weight(2)).nan = 1;
    CHECK(run("numerical_error", t)[0].symptom == "nan_update");
    t.at(60, b.update(2)).nan = 0;
    const Finding f = run("numerical_error", t)[0];
    CHECK(f.symptom == "nan_weights");
    CHECK(f.stage == Stage::kWeights);
    CHECK(f.layer == 2);
  }
  SUBCASE("edge: a single NaN in the last record") {
    TraceBuilder b;
    Trace t = healthy(b);
    t.at(t.size() - 1, b.forward(2, true)).nan = 1;
    const std::vector<Finding> fs = run("numerical_error", t, false);
    REQUIRE(fs.size() == 1);
    CHECK(fs[0].iteration == 199);
    CHECK(fs[0].layer == 2);
    an::Diagnosis d = an::analyze(t, an::Settings(), false);
    REQUIRE(!d.findings.empty());
    CHECK(d.fault);
    CHECK(d.findings[0].rule == "numerical_error");
  }
}

// --- exploding_tensor -------------------------------------------------------------------------

TEST_CASE("rule exploding_tensor: forward values still growing are conclusive") {
  TraceBuilder b;
  Trace t = healthy(b);
  const size_t p = b.forward(1, false);
  edit(t, p, 150, 200, [](an::TensorStats& s, size_t r) { s.max = float(2.5 * std::pow(1.6, double(r - 149))); });
  std::vector<Finding> fs = run("exploding_tensor", t, false);
  REQUIRE(fs.size() == 1);
  const Finding& f = fs[0];
  CHECK(f.symptom == "exploding_values");
  CHECK(f.stage == Stage::kForward);
  CHECK(f.layer == 1);
  CHECK(f.conclusive);
  CHECK(f.root_cause == RootCause::kLearningRate);
  // First record above 1e6 and 1000x the first record's 2.5: 2.5 * 1.6^k > 1e6 -> k = 28.
  CHECK(f.iteration == 149 + 28);
  CHECK(f.recommendation.find("--lr 0.0001") != std::string::npos);

  SUBCASE("unnormalised inputs: data") {
    t.header.data_summary.feature_columns[0].max = 300;
    CHECK(run("exploding_tensor", t)[0].root_cause == RootCause::kData);
  }
  SUBCASE("override: a higher absolute threshold") {
    CHECK(run("exploding_tensor", t, true, with({"exploding_tensor.value_abs=1e12"})).empty());
  }
}

TEST_CASE("rule exploding_tensor: plateaus, NaN afterwards, gradients and weights") {
  SUBCASE("grew then levelled off: a warning") {
    TraceBuilder b;
    Trace t = healthy(b);
    edit(t, b.forward(0, false), 100, 200, [](an::TensorStats& s, size_t) { s.max = 5e6f; });
    const std::vector<Finding> fs = run("exploding_tensor", t);
    REQUIRE(fs.size() == 1);
    CHECK(!fs[0].conclusive);
    CHECK(fs[0].iteration == 100);
    // A warning is not confirmed by a run that learns.
    CHECK(dyn(an::analyze(t, an::Settings(), true).findings).empty());
  }
  SUBCASE("grew then NaN: a precursor warning, numerical_error is primary") {
    TraceBuilder b;
    Trace t = healthy(b);
    edit(t, b.forward(1, false), 40, 50, [](an::TensorStats& s, size_t r) { s.max = float(std::pow(10.0, double(r - 37))); });
    poison_from(t, 50);
    const std::vector<Finding> fs = run("exploding_tensor", t);
    REQUIRE(fs.size() == 1);
    CHECK(!fs[0].conclusive);
    an::Diagnosis d = an::analyze(t, an::Settings(), true);
    REQUIRE(!d.findings.empty());
    CHECK(d.findings[0].rule == "numerical_error");
  }
  SUBCASE("parameter gradients: the deepest layer where it starts") {
    TraceBuilder b;
    Trace t = healthy(b);
    set_param_grads(t, 0, 120, 200, 1e5);
    set_param_grads(t, 1, 120, 200, 1e5);
    const std::vector<Finding> fs = run("exploding_tensor", t);
    const Finding* f = find(fs, "exploding_gradients");
    REQUIRE(f != nullptr);
    CHECK(f->layer == 1);
    CHECK(f->stage == Stage::kBackward);
    CHECK(f->iteration == 120);
    CHECK(!f->conclusive);  // flat at 1e5: not still growing
  }
  SUBCASE("weights: exactly at the growth threshold is not exploding") {
    TraceBuilder b;
    Trace t = healthy(b);
    // Initial norm: 1.2 from the initializer summary (weight) + 0 (bias not summarised).
    const double w0 = std::sqrt(64 * 0.15 * 0.15);
    auto scale = [&](double factor) {
      for (size_t k : probes_of(t, ProbeKind::kWeight, 0))
        edit(t, k, 100, 200, [&](an::TensorStats& s, size_t) { s.l2 = float(factor * w0 / std::sqrt(2.0)); });
    };
    scale(99);
    CHECK(run("exploding_tensor", t).empty());
    scale(101);
    const std::vector<Finding> fs = run("exploding_tensor", t);
    REQUIRE(fs.size() == 1);
    CHECK(fs[0].symptom == "exploding_weights");
    CHECK(fs[0].layer == 0);
    CHECK(run("exploding_tensor", t, true, with({"exploding_tensor.weight_growth=200"})).empty());
  }
}
