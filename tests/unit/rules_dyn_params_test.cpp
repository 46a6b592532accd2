// Dynamic rules for parameters that do not learn (analysis/rules): vanishing_gradient,
// unchanged_weights. Each: a true positive, root causes, edge cases, a --set override.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "rules_dyn_util.h"
#include "rules_stat_util.h"

using namespace dl;
using namespace dl::test::rules_dyn;

// --- vanishing_gradient -----------------------------------------------------------------------

namespace {

// A 4-layer stack that does not learn and whose first two layers get gradients ~1e-6 of
// the last layer's, with weights that do not move (plain SGD).
Trace vanishing_stack(TraceBuilder& b, const std::string& act) {
  Trace t = b.dense(act, 16).dense(act, 16).dense(act, 16).dense("softmax", 3).config("optimizer", "sgd").build(200);
  flat_run(t);
  set_param_grads(t, 0, 0, 200, 1e-8);
  set_param_grads(t, 1, 0, 200, 1e-7);
  set_updates(t, 0, 0, 200, 1e-10);
  set_updates(t, 1, 0, 200, 1e-9);
  return t;
}

}  // namespace

TEST_CASE("rule vanishing_gradient: a sigmoid stack") {
  TraceBuilder b;
  Trace t = vanishing_stack(b, "sigmoid");
  const std::vector<Finding> fs = run("vanishing_gradient", t);
  REQUIRE(fs.size() == 1);
  const Finding& f = fs[0];
  CHECK(f.symptom == "vanishing_gradient");
  CHECK(f.stage == Stage::kBackward);
  CHECK(f.layer == 1);  // the deepest layer where it collapses
  CHECK(f.iteration == 0);
  CHECK(!f.conclusive);
  CHECK(f.root_cause == RootCause::kActivation);
  CHECK(f.recommendation.find("ReLU") != std::string::npos);
  CHECK(run("vanishing_gradient", t, false).empty());  // a trend: judged at the end only
  // Confirmed by the failing run through the analyzer.
  CHECK(find(an::analyze(t, an::Settings(), true).findings, "vanishing_gradient") != nullptr);
}

TEST_CASE("rule vanishing_gradient: root causes, gate and thresholds") {
  SUBCASE("ReLU stack with tiny weights: initialization") {
    TraceBuilder b;
    Trace t = vanishing_stack(b, "relu");
    edit(t, b.weight(0), 0, 200, [](an::TensorStats& s, size_t) { s.std = 1e-4f; });
    CHECK(run("vanishing_gradient", t)[0].root_cause == RootCause::kInitialization);
  }
  SUBCASE("ReLU stack, normal weights: architecture") {
    TraceBuilder b;
    Trace t = vanishing_stack(b, "relu");
    CHECK(run("vanishing_gradient", t)[0].root_cause == RootCause::kArchitecture);
  }
  SUBCASE("a run that learns is spared") {
    TraceBuilder b;
    Trace t = b.dense("sigmoid", 16).dense("sigmoid", 16).dense("softmax", 3).build(200);
    set_param_grads(t, 0, 0, 200, 1e-8);
    set_updates(t, 0, 0, 200, 1e-10);
    CHECK(run("vanishing_gradient", t).empty());
  }
  SUBCASE("an adaptive optimizer that keeps the updates normal is spared") {
    TraceBuilder b;
    Trace t = vanishing_stack(b, "sigmoid");
    set_updates(t, -1, 0, 200, 1e-3);
    CHECK(run("vanishing_gradient", t).empty());
  }
  SUBCASE("just above the ratio is not vanishing; --set moves it") {
    TraceBuilder b;
    Trace t = vanishing_stack(b, "sigmoid");
    // Last layer ||g||/||w|| = (0.16 sqrt 2) / (1.2 sqrt 2); put layer 1 just above 1e-3 of it
    // and layer 0 well above.
    set_param_grads(t, 1, 0, 200, 0.16 * 1.2e-3);
    set_param_grads(t, 0, 0, 200, 0.16);
    CHECK(run("vanishing_gradient", t).empty());
    const std::vector<Finding> fs = run("vanishing_gradient", t, true, with({"vanishing_gradient.grad_ratio=2e-3"}));
    REQUIRE(fs.size() == 1);
    CHECK(fs[0].layer == 1);
  }
  SUBCASE("update_ratio (5e-6) lies between a slow sigmoid stack (2e-6) and the slowest healthy run (2e-5)") {
    TraceBuilder b;
    Trace t = vanishing_stack(b, "sigmoid");
    set_updates(t, 0, 0, 200, 2e-6);  // a 7-layer sigmoid stack's first layer under SGD (1.1e-6)
    set_updates(t, 1, 0, 200, 2e-6);
    std::vector<Finding> fs = run("vanishing_gradient", t);
    REQUIRE(fs.size() == 1);
    CHECK(fs[0].layer == 1);
    CHECK(run("vanishing_gradient", t, true, with({"vanishing_gradient.update_ratio=1e-6"})).empty());
    set_updates(t, 0, 0, 200, 2e-5);  // the suite's healthy minimum (1.9e-5)
    set_updates(t, 1, 0, 200, 2e-5);
    CHECK(run("vanishing_gradient", t).empty());
  }
  SUBCASE("zero gradients are left to dead_units / unchanged_weights") {
    TraceBuilder b;
    Trace t = vanishing_stack(b, "sigmoid");
    set_param_grads(t, 0, 0, 200, 0);
    set_param_grads(t, 1, 0, 200, 0);
    CHECK(run("vanishing_gradient", t).empty());
  }
}

// --- unchanged_weights ------------------------------------------------------------------------

TEST_CASE("rule unchanged_weights: no update anywhere with a zero learning rate") {
  TraceBuilder b;
  Trace t = b.dense("relu", 16).dense("softmax", 3).config("learning_rate", "0").build(200);
  flat_run(t);
  set_updates(t, -1, 0, 200, 0);
  const std::vector<Finding> fs = run("unchanged_weights", t, false);
  REQUIRE(fs.size() == 1);
  const Finding& f = fs[0];
  CHECK(f.symptom == "unchanged_weights");
  CHECK(f.stage == Stage::kWeights);
  CHECK(f.conclusive);
  CHECK(f.iteration == 0);
  CHECK(f.layer == -1);
  CHECK(f.root_cause == RootCause::kLearningRate);
  CHECK(f.recommendation.find("0.001") != std::string::npos);
}

TEST_CASE("rule unchanged_weights: root causes") {
  SUBCASE("gradients but no updates: optimizer") {
    TraceBuilder b;
    Trace t = healthy(b);
    flat_run(t);
    set_updates(t, -1, 100, 200, 0);
    const Finding f = run("unchanged_weights", t, false)[0];
    CHECK(f.conclusive);
    CHECK(f.iteration == 100);
    CHECK(f.root_cause == RootCause::kOptimizer);
  }
  SUBCASE("softmax over a single unit: no gradient from the loss") {
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("softmax", 1).config("loss", "binary_crossentropy").build(200);
    flat_run(t, 7.7);
    set_param_grads(t, -1, 0, 200, 0);
    edit(t, b.gradient(1, true), 0, 200, [](an::TensorStats& s, size_t) { s.l2 = 0, s.std = 0, s.mean_abs = 0; });
    const Finding f = run("unchanged_weights", t, false)[0];
    CHECK(f.conclusive);
    CHECK(f.layer == 1);
    CHECK(f.root_cause == RootCause::kLoss);
    CHECK(f.recommendation.find("sigmoid") != std::string::npos);
  }
  SUBCASE("the output saturated after huge first updates: learning rate") {
    TraceBuilder b;
    Trace t = healthy(b);
    flat_run(t, 10.5);
    set_updates(t, -1, 0, 1, 1.0);
    set_param_grads(t, -1, 1, 200, 0);
    edit(t, b.gradient(2, true), 1, 200, [](an::TensorStats& s, size_t) { s.l2 = 0, s.std = 0, s.mean_abs = 0; });
    edit(t, b.forward(2, true), 1, 200, [](an::TensorStats& s, size_t) { s.sat_frac = 1; });
    const Finding f = run("unchanged_weights", t, false)[0];
    CHECK(f.iteration == 1);
    CHECK(f.layer == 2);
    CHECK(f.root_cause == RootCause::kLearningRate);
    CHECK(f.lr_direction == -1);  // too large, whatever the symptom's pace says (repairs lower it)
  }
  SUBCASE("the output saturated after the loss climbed back from a fit: small steps that added up") {
    // SGD with momentum 0.999: the loss falls to a fifth of the chance loss, then climbs to
    // 4x it over the next 100 iterations, each step small; then the softmax saturates.
    TraceBuilder b;
    Trace t = b.dense("relu", 16).dense("relu", 8).dense("softmax", 3).config("optimizer", "sgd")
                  .config("momentum", "0.999").build(200);
    const double chance = std::log(3.0);
    dl::test::rules_stat::set_curve(
        t,
        [&](int64_t it, double) {
          return chance * (it < 50 ? 1.0 - 0.016 * double(it) : it < 150 ? 0.2 + 0.038 * double(it - 50) : 4.0);
        },
        [](int64_t, double) { return 0.33; });
    set_param_grads(t, -1, 150, 200, 0);
    edit(t, b.gradient(2, true), 150, 200, [](an::TensorStats& s, size_t) { s.l2 = 0, s.std = 0, s.mean_abs = 0; });
    edit(t, b.forward(2, true), 150, 200, [](an::TensorStats& s, size_t) { s.sat_frac = 1; });
    Finding f = run("unchanged_weights", t, false)[0];
    CHECK(f.iteration == 150);
    CHECK(f.root_cause == RootCause::kLearningRate);
    CHECK(f.lr_direction == -1);
    CHECK(f.message.find("momentum 0.999 (steps up to 1000x") != std::string::npos);
    CHECK(f.recommendation.find("--momentum 0.9") != std::string::npos);
    CHECK(f.evidence["loss_rose_to"].get<double>() >= chance);
    // --set: a run must have learned more (a tenth of the chance loss) to count as undone.
    f = run("unchanged_weights", t, false, with("unchanged_weights.learned=0.1"))[0];
    CHECK(f.root_cause == RootCause::kLoss);
    // Never below half the chance loss: the loss's own saturation, as before.
    dl::test::rules_stat::set_curve(
        t, [&](int64_t it, double) { return chance * (it < 150 ? 1.0 - 0.002 * double(it) : 4.0); },
        [](int64_t, double) { return 0.33; });
    f = run("unchanged_weights", t, false)[0];
    CHECK(f.root_cause == RootCause::kLoss);
  }
  SUBCASE("one layer behind a dead ReLU: a warning, with dead_units' root cause") {
    TraceBuilder b;
    Trace t = healthy(b);
    flat_run(t);
    set_updates(t, 0, 0, 200, 0);
    set_updates(t, 1, 0, 200, 0);
    set_param_grads(t, 0, 0, 200, 0);
    set_param_grads(t, 1, 0, 200, 0);
    edit(t, b.forward(1, true), 0, 200, [](an::TensorStats& s, size_t) { s.dead_units = 1; });
    const std::vector<Finding> fs = run("unchanged_weights", t);
    REQUIRE(fs.size() == 1);
    CHECK(!fs[0].conclusive);
    CHECK(fs[0].layer == 1);  // the deepest unchanged layer
    // Dead from the first record: dead_units says initialization, and so does this rule.
    CHECK(fs[0].root_cause == RootCause::kInitialization);
    CHECK(fs[0].evidence["see"] == "dead_units");
    CHECK(run("unchanged_weights", t, false).empty());  // warnings are judged at the end
  }
  SUBCASE("tiny (not zero) learning rate: a warning, learning rate") {
    TraceBuilder b;
    Trace t = healthy(b);
    t.header.config["learning_rate"] = "1e-9";
    flat_run(t);
    set_updates(t, -1, 0, 200, 1e-10);
    const Finding f = run("unchanged_weights", t)[0];
    CHECK(!f.conclusive);
    CHECK(f.layer == -1);
    CHECK(f.root_cause == RootCause::kLearningRate);
    CHECK(f.lr_direction == 0);  // the pace (too slow) says it
  }
}

TEST_CASE("rule unchanged_weights: edges") {
  SUBCASE("a loss of ~0 with zero gradients is a fit, not a stall") {
    TraceBuilder b;
    Trace t = healthy(b);
    flat_run(t, 1e-8);
    set_param_grads(t, -1, 100, 200, 0);
    CHECK(run("unchanged_weights", t).empty());
  }
  SUBCASE("zero updates for fewer records than the window; --set window") {
    TraceBuilder b;
    Trace t = healthy(b);
    set_updates(t, -1, 181, 200, 0);  // 19 records
    CHECK(run("unchanged_weights", t, false).empty());
    const std::vector<Finding> fs = run("unchanged_weights", t, false, with({"unchanged_weights.window=19"}));
    REQUIRE(fs.size() == 1);
    CHECK(fs[0].iteration == 181);
  }
  SUBCASE("updates just above the ratio are not unchanged") {
    TraceBuilder b;
    Trace t = healthy(b);
    flat_run(t);
    set_updates(t, 0, 0, 200, 1.5e-8);
    CHECK(run("unchanged_weights", t).empty());
    CHECK(run("unchanged_weights", t, true, with({"unchanged_weights.update_ratio=2e-8"})).size() == 1);
  }
}
