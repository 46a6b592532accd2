// Dynamic per-tensor rules (analysis/rules): numerical_error, exploding_tensor,
// vanishing_gradient, dead_units, saturated_units, unchanged_weights. Each: a true
// positive, the healthy builder trace, edge cases, and a --set override.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
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
using an::ProbeKind;
using an::RootCause;
using an::Stage;
using an::Trace;
using test::TraceBuilder;

const std::set<std::string> kDyn = {"numerical_error", "exploding_tensor", "vanishing_gradient",
                                    "dead_units",      "saturated_units",  "unchanged_weights"};
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<Finding> run(const std::string& rule, const Trace& t, bool final = true,
                         const an::Settings& settings = an::Settings()) {
  an::AnalysisContext ctx(t, settings, final);
  std::vector<Finding> out;
  for (const auto& r : an::all_rules())
    if (r->id() == rule) r->check(ctx, out);
  return out;
}

an::Settings with(std::initializer_list<const char*> assignments) {
  an::Settings s;
  for (const char* a : assignments) s.set(a);
  return s;
}

std::vector<Finding> dyn(const std::vector<Finding>& all) {
  std::vector<Finding> out;
  for (const Finding& f : all)
    if (kDyn.count(f.rule)) out.push_back(f);
  return out;
}

// Applies fn to the stats of `probe` in records [from, to).
void edit(Trace& t, size_t probe, size_t from, size_t to, const std::function<void(an::TensorStats&, size_t)>& fn) {
  for (size_t r = from; r < std::min(to, t.size()); ++r) fn(t.at(r, probe), r);
}

// Every probe of a kind (optionally of one layer).
std::vector<size_t> probes_of(const Trace& t, ProbeKind kind, int layer = -2) {
  std::vector<size_t> out;
  for (size_t k = 0; k < t.header.probes.size(); ++k)
    if (t.header.probes[k].kind == kind && (layer == -2 || t.header.probes[k].layer == layer)) out.push_back(k);
  return out;
}

// NaN everywhere from record `from` on (loss, every probe): what a diverged run looks like.
void poison_from(Trace& t, size_t from) {
  for (size_t r = from; r < t.size(); ++r) {
    t.records[r].loss = kNaN;
    t.loss[size_t(t.records[r].iteration)] = kNaN;
    for (size_t k = 0; k < t.header.probes.size(); ++k) t.at(r, k).nan = t.at(r, k).count;
  }
}

// A run that does not learn: flat loss, accuracy at chance.
void flat_run(Trace& t, double loss = 1.1) {
  for (size_t i = 0; i < t.loss.size(); ++i) {
    t.loss[i] = float(loss * (1 + 0.01 * std::sin(double(i))));
    t.metric[i] = 0.33f;
  }
  for (an::IterationRecord& r : t.records) {
    r.loss = t.loss[size_t(r.iteration)];
    r.metric = t.metric[size_t(r.iteration)];
  }
}

// Sets ||dw|| and ||dw||/||w|| of a layer's parameter updates (every layer with -1).
void set_updates(Trace& t, int layer, size_t from, size_t to, double ratio) {
  for (size_t k : probes_of(t, ProbeKind::kUpdate, layer == -1 ? -2 : layer))
    edit(t, k, from, to, [&](an::TensorStats& s, size_t) {
      s.mean = float(ratio);
      s.l2 = float(ratio * 1.2);
    });
}

void set_param_grads(Trace& t, int layer, size_t from, size_t to, double l2) {
  for (size_t k : probes_of(t, ProbeKind::kParamGrad, layer == -1 ? -2 : layer))
    edit(t, k, from, to, [&](an::TensorStats& s, size_t) {
      s.l2 = float(l2);
      s.std = float(l2 / 8);
      s.min = float(-l2 / 4), s.max = float(l2 / 4), s.mean_abs = float(l2 / 10);
    });
}

Trace healthy(TraceBuilder& b) { return b.dense("relu", 16).dense("relu", 8).dense("softmax", 3).build(200); }

const Finding* find(const std::vector<Finding>& fs, const std::string& symptom) {
  for (const Finding& f : fs)
    if (f.symptom == symptom) return &f;
  return nullptr;
}

}  // namespace

// --- healthy ----------------------------------------------------------------------------------

TEST_CASE("rule dyn: healthy builder traces raise nothing from the dynamic rules") {
  TraceBuilder b;
  Trace t = healthy(b);
  for (const std::string& rule : kDyn) {
    CAPTURE(rule);
    CHECK(run(rule, t, true).empty());
    CHECK(run(rule, t, false).empty());
  }
  an::Diagnosis d = an::analyze(t, an::Settings(), true);
  CHECK(dyn(d.findings).empty());
  CHECK(dyn(d.warnings).empty());

  // Saturating stacks and a regression with a linear output, healthy too.
  TraceBuilder b2;
  Trace sig = b2.dense("sigmoid", 16).dense("tanh", 8).dense("sigmoid", 1).config("loss", "binary_crossentropy").build(150);
  TraceBuilder b3;
  Trace reg = b3.dense("relu", 32).dense("linear", 1).config("loss", "mse").build(150);
  for (const std::string& rule : kDyn) {
    CAPTURE(rule);
    CHECK(run(rule, sig).empty());
    CHECK(run(rule, reg).empty());
  }
}

TEST_CASE("rule dyn: a run that fails to learn but has healthy tensors raises nothing dynamic") {
  TraceBuilder b;
  Trace t = healthy(b);
  flat_run(t);
  for (const std::string& rule : kDyn) {
    CAPTURE(rule);
    CHECK(run(rule, t).empty());
  }
}

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
  SUBCASE("zero gradients are left to dead_units / unchanged_weights") {
    TraceBuilder b;
    Trace t = vanishing_stack(b, "sigmoid");
    set_param_grads(t, 0, 0, 200, 0);
    set_param_grads(t, 1, 0, 200, 0);
    CHECK(run("vanishing_gradient", t).empty());
  }
}

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

TEST_CASE("rule dyn: thresholds are declared with reasons and unknown keys are rejected") {
  for (const auto& r : an::all_rules()) {
    if (!kDyn.count(r->id())) continue;
    CAPTURE(r->id());
    CHECK(!r->thresholds().empty());
    for (const an::Threshold& th : r->thresholds()) CHECK(!th.reason.empty());
  }
  an::Settings s;
  CHECK_THROWS(s.set("dead_units.no_such_key=1"));
  CHECK_NOTHROW(s.set("numerical_error.large_update=0.2"));
}
