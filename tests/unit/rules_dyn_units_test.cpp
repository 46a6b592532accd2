// Dynamic rules for units that stop passing signal (analysis/rules): dead_units,
// saturated_units. Each: a true positive, root causes, edge cases, a --set override.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "rules_dyn_util.h"

using namespace dl;
using namespace dl::test::rules_dyn;

// --- dead_units -------------------------------------------------------------------------------

namespace {

void kill(Trace& t, TraceBuilder& b, int layer, size_t from, size_t to) {
  edit(t, b.forward(layer, true), from, to, [](an::TensorStats& s, size_t) {
    s.dead_units = 1, s.dead_frac = 1, s.zero_frac = 1, s.max = 0, s.mean = 0, s.std = 0, s.l2 = 0, s.mean_abs = 0;
  });
  set_param_grads(t, layer, from, to, 0);
}

}  // namespace

TEST_CASE("rule dead_units: a layer dead to the end is conclusive") {
  TraceBuilder b;
  Trace t = healthy(b);
  set_updates(t, -1, 35, 40, 0.6);  // large updates just before it died
  kill(t, b, 1, 40, 200);
  kill(t, b, 0, 60, 200);
  const std::vector<Finding> fs = run("dead_units", t, false);
  REQUIRE(fs.size() == 1);
  const Finding& f = fs[0];
  CHECK(f.symptom == "dead_units");
  CHECK(f.stage == Stage::kForward);
  CHECK(f.layer == 0);  // the first dead layer in graph order
  CHECK(f.iteration == 60);
  CHECK(f.conclusive);
  CHECK(f.root_cause == RootCause::kLearningRate);
  CHECK(f.evidence["other_dead_layers"].size() == 1);
  CHECK(f.recommendation.find("--lr 0.0001") != std::string::npos);
}

TEST_CASE("rule dead_units: root causes and edges") {
  SUBCASE("dead from the first record: initialization") {
    TraceBuilder b;
    Trace t = healthy(b);
    kill(t, b, 1, 0, 200);
    t.header.initializers[1].mean = -20;
    const Finding f = run("dead_units", t)[0];
    CHECK(f.root_cause == RootCause::kInitialization);
    CHECK(f.iteration == 0);
  }
  SUBCASE("huge inputs: data") {
    TraceBuilder b;
    Trace t = healthy(b);
    kill(t, b, 1, 0, 200);
    t.header.data_summary.all_features.min = -900;
    CHECK(run("dead_units", t)[0].root_cause == RootCause::kData);
  }
  SUBCASE("died without large updates: activation (LeakyReLU)") {
    TraceBuilder b;
    Trace t = healthy(b);
    kill(t, b, 1, 80, 200);
    const Finding f = run("dead_units", t)[0];
    CHECK(f.root_cause == RootCause::kActivation);
    CHECK(f.recommendation.find("LeakyReLU") != std::string::npos);
  }
  SUBCASE("dead only briefly: nothing") {
    TraceBuilder b;
    Trace t = healthy(b);
    kill(t, b, 1, 10, 60);
    CHECK(run("dead_units", t).empty());
  }
  SUBCASE("dead for fewer records than the window: not conclusive; --set window") {
    TraceBuilder b;
    Trace t = healthy(b);
    kill(t, b, 1, 185, 200);  // 15 records
    CHECK(run("dead_units", t).empty());
    const std::vector<Finding> fs = run("dead_units", t, false, with({"dead_units.window=15"}));
    REQUIRE(fs.size() == 1);
    CHECK(fs[0].conclusive);
    CHECK(fs[0].iteration == 185);
  }
  SUBCASE("dead units that still get gradient (e.g. another path) are not a dead layer") {
    TraceBuilder b;
    Trace t = healthy(b);
    kill(t, b, 1, 0, 200);
    set_param_grads(t, 1, 0, 200, 0.1);
    CHECK(run("dead_units", t, false).empty());
  }
  SUBCASE("outputs zeroed by NaN weights do not count as dead") {
    TraceBuilder b;
    Trace t = healthy(b);
    kill(t, b, 1, 100, 200);
    poison_from(t, 100);
    CHECK(run("dead_units", t).empty());
  }
  SUBCASE("mostly dead: a warning only when the run fails to learn") {
    TraceBuilder b;
    Trace t = healthy(b);
    edit(t, b.forward(1, true), 120, 200, [](an::TensorStats& s, size_t) { s.dead_units = 0.8f; });
    CHECK(run("dead_units", t).empty());
    flat_run(t);
    const std::vector<Finding> fs = run("dead_units", t);
    REQUIRE(fs.size() == 1);
    CHECK(!fs[0].conclusive);
    CHECK(fs[0].iteration == 120);
    CHECK(run("dead_units", t, true, with({"dead_units.partial_frac=0.9"})).empty());
  }
}

// --- saturated_units --------------------------------------------------------------------------

namespace {

Trace saturated_stack(TraceBuilder& b, float sat) {
  Trace t = b.dense("sigmoid", 16).dense("sigmoid", 16).dense("softmax", 3).config("optimizer", "sgd").build(200);
  flat_run(t, 2.3);
  for (int l : {0, 1}) edit(t, b.forward(l, true), 0, 200, [&](an::TensorStats& s, size_t) { s.sat_frac = sat; });
  return t;
}

}  // namespace

TEST_CASE("rule saturated_units: a saturated sigmoid stack that does not learn") {
  TraceBuilder b;
  Trace t = saturated_stack(b, 0.9f);
  t.header.initializers[0].std = 8;  // saturated from the start by huge initial weights
  const std::vector<Finding> fs = run("saturated_units", t);
  REQUIRE(fs.size() == 1);
  const Finding& f = fs[0];
  CHECK(f.symptom == "saturated_units");
  CHECK(f.stage == Stage::kForward);
  CHECK(f.layer == 0);
  CHECK(f.iteration == 0);
  CHECK(!f.conclusive);  // the weights still move
  CHECK(f.root_cause == RootCause::kInitialization);
  CHECK(run("saturated_units", t, false).empty());
  CHECK(find(an::analyze(t, an::Settings(), true).findings, "saturated_units") != nullptr);

  SUBCASE("weights that stopped moving too: conclusive") {
    set_updates(t, 0, 0, 200, 1e-9);
    CHECK(run("saturated_units", t)[0].conclusive);
  }
}

TEST_CASE("rule saturated_units: root causes, gate and edges") {
  SUBCASE("large inputs into the first layer: data") {
    TraceBuilder b;
    Trace t = saturated_stack(b, 0.95f);
    t.header.data_summary.all_features.max = 80;
    CHECK(run("saturated_units", t)[0].root_cause == RootCause::kData);
  }
  SUBCASE("saturated after large updates: learning rate") {
    TraceBuilder b;
    Trace t = saturated_stack(b, 0.95f);
    for (int l : {0, 1}) edit(t, b.forward(l, true), 0, 30, [](an::TensorStats& s, size_t) { s.sat_frac = 0.02f; });
    set_updates(t, -1, 20, 25, 0.4);
    const Finding f = run("saturated_units", t)[0];
    CHECK(f.iteration == 30);
    CHECK(f.root_cause == RootCause::kLearningRate);
  }
  SUBCASE("otherwise: activation") {
    TraceBuilder b;
    Trace t = saturated_stack(b, 0.95f);
    CHECK(run("saturated_units", t)[0].root_cause == RootCause::kActivation);
  }
  SUBCASE("a run that learns is spared") {
    TraceBuilder b;
    Trace t = saturated_stack(b, 0.95f);
    TraceBuilder b2;
    Trace learning = b2.dense("sigmoid", 16).dense("softmax", 3).build(200);
    edit(learning, b2.forward(0, true), 0, 200, [](an::TensorStats& s, size_t) { s.sat_frac = 0.95f; });
    CHECK(run("saturated_units", learning).empty());
  }
  SUBCASE("a saturated softmax output is left to the output rules") {
    TraceBuilder b;
    Trace t = saturated_stack(b, 0.0f);
    edit(t, b.forward(2, true), 0, 200, [](an::TensorStats& s, size_t) { s.sat_frac = 1.0f; });
    CHECK(run("saturated_units", t).empty());
  }
  SUBCASE("below the threshold; --set lowers it") {
    TraceBuilder b;
    Trace t = saturated_stack(b, 0.74f);
    CHECK(run("saturated_units", t).empty());
    CHECK(run("saturated_units", t, true, with({"saturated_units.sat_frac=0.7"})).size() == 1);
  }
}
