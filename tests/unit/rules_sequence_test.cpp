// The recurrent and embedding rules (saturated_gates, exploding_state, frozen_layer) on
// synthetic traces: a healthy classifier whose first layer is made recurrent (its
// kGates .. kStateLast probes) or an embedding (a kRows probe), bent into each symptom.
#include <doctest/doctest.h>

#include <functional>

#include "analysis/analyzer.h"
#include "rules_test_util.h"

namespace {

using namespace dl::test::rules;
using dl::an::Probe;
using dl::an::TensorStats;

// Appends a probe to every record of `t` (the stats array is records x probes).
size_t add_probe(Trace& t, Probe p, const std::function<TensorStats(size_t record)>& stats) {
  const size_t old = t.header.probes.size();
  std::vector<TensorStats> s;
  for (size_t r = 0; r < t.size(); ++r) {
    for (size_t k = 0; k < old; ++k) s.push_back(t.at(r, k));
    s.push_back(stats(r));
  }
  t.header.probes.push_back(p);
  t.stats.assign(s.begin(), s.end());
  return old;
}

Probe inner_probe(ProbeKind kind, bool bounded = true) {
  Probe p;
  p.kind = kind;
  p.layer = 0;
  p.node = "/rnn/LSTM";
  p.op_type = "LSTM";
  p.op.role = "parameterized";
  p.op.recurrent = true;
  p.op.bounded_state = bounded;
  return p;
}

TensorStats part(float sat, uint32_t count = 1000) {
  TensorStats s;
  s.count = count;
  s.sat_frac = sat;
  s.mean = 0.5f;
  return s;
}

TensorStats state(float rms, uint32_t count = 64) {
  TensorStats s;
  s.count = count;
  s.l2 = rms * std::sqrt(float(count));
  s.max = 2 * rms;
  return s;
}

// The run stops learning: a flat loss at chance accuracy.
void fail(Trace& t) {
  for (size_t i = 0; i < t.loss.size(); ++i) t.loss[i] = 1.1f, t.metric[i] = 0.34f;
  for (auto& r : t.records) r.loss = 1.1f, r.metric = 0.34f;
}

Trace base() {
  TraceBuilder b;
  return healthy(b);
}

TEST_CASE("saturated_gates: saturated LSTM gates in a failing run, at the recurrent layer") {
  Trace t = base();
  add_probe(t, inner_probe(ProbeKind::kGates), [](size_t r) { return part(r < 50 ? 0.05f : 0.9f); });
  add_probe(t, inner_probe(ProbeKind::kCandidates), [](size_t) { return part(0.1f); });
  SUBCASE("a run that learns well: nothing") { CHECK(run("saturated_gates", t).empty()); }
  fail(t);
  SUBCASE("saturated later, without large updates: initialization") {
    const auto f = run("saturated_gates", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].symptom == "saturated_gates");
    CHECK(f[0].layer == 0);
    CHECK(f[0].iteration == 50);
    CHECK(f[0].conclusive);
    CHECK(f[0].root_cause == RootCause::kInitialization);
  }
  SUBCASE("unscaled inputs to the first layer: data") {
    t.header.data_summary.all_features.max = 300;
    t.header.data_summary.feature_columns[0].max = 300;
    const auto f = run("saturated_gates", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].root_cause == RootCause::kData);
  }
  SUBCASE("below the threshold: nothing") {
    CHECK(run("saturated_gates", t, true, with("saturated_gates.sat_frac=0.95")).empty());
  }
}

TEST_CASE("saturated_gates: judged on the run so far while training, and on a run stopped early") {
  // Gates saturated from the second iteration on (learning rate x100: the evidence is
  // complete after a few updates, long before the epoch ends).
  Trace t = base();
  add_probe(t, inner_probe(ProbeKind::kGates), [](size_t r) { return part(r < 1 ? 0.05f : 0.95f); });
  SUBCASE("a failing run: conclusive after 8 iterations, not before") {
    fail(t);
    CHECK(run("saturated_gates", head(t, 7), false).empty());
    const auto f = run("saturated_gates", head(t, 8), false);
    REQUIRE(f.size() == 1);
    CHECK(f[0].conclusive);
    CHECK(f[0].iteration == 1);
    // The final analysis of the run the online analysis stopped there finds it too.
    const auto g = run("saturated_gates", head(t, 8), true);
    REQUIRE(g.size() == 1);
    CHECK(g[0].iteration == 1);
  }
  SUBCASE("a run whose loss falls: nothing while it learns, nothing at its end") {
    CHECK(run("saturated_gates", head(t, 40), false).empty());
    CHECK(run("saturated_gates", head(t, 40), true).empty());  // stopped early by another finding
    CHECK(run("saturated_gates", t, true).empty());
  }
  SUBCASE("a loss falling from far above the constant prediction's, still above it: failing") {
    // 2.0 -> 1.2 in 16 iterations (a 38% fall), against the chance loss ln 3 = 1.10.
    for (size_t i = 0; i < t.loss.size(); ++i) t.loss[i] = 2.0f - 0.8f * float(std::min<size_t>(i, 16)) / 16;
    CHECK(run("saturated_gates", head(t, 16), false).size() == 1);
    for (size_t i = 0; i < t.loss.size(); ++i) t.loss[i] = 2.0f - 1.2f * float(std::min<size_t>(i, 16)) / 16;
    CHECK(run("saturated_gates", head(t, 16), false).empty());  // 2.0 -> 0.8: below it
  }
}

TEST_CASE("saturated_gates: tanh candidates count too; no probe, no finding") {
  Trace t = base();
  fail(t);
  CHECK(run("saturated_gates", t).empty());
  add_probe(t, inner_probe(ProbeKind::kCandidates), [](size_t) { return part(0.97f); });
  const auto f = run("saturated_gates", t);
  REQUIRE(f.size() == 1);
  CHECK(f[0].evidence["gates"] == "candidate");
}

TEST_CASE("exploding_state: an unbounded cell's state grows over the steps") {
  Trace t = base();
  const auto grow = [](size_t r) { return state(r < 30 ? 0.5f : 40.0f); };
  add_probe(t, inner_probe(ProbeKind::kStateFirst, false), [](size_t) { return state(1.0f); });
  const size_t last = add_probe(t, inner_probe(ProbeKind::kStateLast, false), grow);
  SUBCASE("the run learns anyway: nothing") { CHECK(run("exploding_state", t).empty()); }
  SUBCASE("the run falls short: conclusive, activation, from the record it grew") {
    fail(t);
    const auto f = run("exploding_state", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].symptom == "exploding_state");
    CHECK(f[0].root_cause == RootCause::kActivation);
    CHECK(f[0].iteration == 30);
    CHECK(f[0].layer == 0);
  }
  SUBCASE("an overflow is conclusive at once, online too") {
    t.at(12, last).inf = 5;
    const auto f = run("exploding_state", t, false);
    REQUIRE(f.size() == 1);
    CHECK(f[0].iteration == 12);
    CHECK(f[0].evidence["overflow"] == true);
  }
  SUBCASE("a bounded (tanh) cell cannot explode") {
    fail(t);
    for (auto& p : t.header.probes) p.op.bounded_state = true;
    CHECK(run("exploding_state", t).empty());
  }
}

TEST_CASE("exploding_state: a state that vanishes over the steps, in a failing run") {
  Trace t = base();
  add_probe(t, inner_probe(ProbeKind::kStateFirst), [](size_t) { return state(0.5f); });
  add_probe(t, inner_probe(ProbeKind::kStateLast), [](size_t) { return state(1e-5f); });
  CHECK(run("exploding_state", t).empty());  // learning
  fail(t);
  const auto f = run("exploding_state", t);
  REQUIRE(f.size() == 1);
  CHECK(f[0].symptom == "vanishing_state");
  CHECK_FALSE(f[0].conclusive);
  CHECK(run("exploding_state", t, true, with("exploding_state.vanish_ratio=1e-6")).empty());
}

TEST_CASE("frozen_layer: a layer no update moved while gradients reached it") {
  TraceBuilder b;
  Trace t = healthy(b);
  for (size_t r = 0; r < t.size(); ++r) {
    for (size_t k = 0; k < t.header.probes.size(); ++k) {
      const Probe& p = t.header.probes[k];
      if (p.layer == 0 && p.kind == ProbeKind::kUpdate) t.at(r, k).l2 = 0, t.at(r, k).mean = 0;
    }
  }
  t.header.config["frozen"] = "0.weight,0.bias";
  SUBCASE("the run learns (a frozen pretrained layer): nothing") { CHECK(run("frozen_layer", t).empty()); }
  SUBCASE("the run falls short: conclusive, learning rate, at the frozen layer") {
    fail(t);
    const auto f = run("frozen_layer", t);
    REQUIRE(f.size() == 1);
    CHECK(f[0].symptom == "frozen_layer");
    CHECK(f[0].layer == 0);
    CHECK(f[0].root_cause == RootCause::kLearningRate);
    CHECK(f[0].evidence["frozen"] == "0.weight,0.bias");
    // and it is the primary diagnosis of the whole analysis
    const auto d = dl::an::analyze(t, dl::an::Settings(), true);
    REQUIRE(!d.findings.empty());
    CHECK(d.findings[0].symptom == "frozen_layer");
  }
  SUBCASE("no layer moved at all: unchanged_weights', not this rule's") {
    fail(t);
    for (size_t r = 0; r < t.size(); ++r)
      for (size_t k = 0; k < t.header.probes.size(); ++k)
        if (t.header.probes[k].kind == ProbeKind::kUpdate) t.at(r, k).l2 = 0;
    CHECK(run("frozen_layer", t).empty());
  }
  SUBCASE("no gradient reached it either: not this rule's") {
    fail(t);
    for (size_t r = 0; r < t.size(); ++r)
      for (size_t k = 0; k < t.header.probes.size(); ++k)
        if (t.header.probes[k].layer == 0 && t.header.probes[k].kind == ProbeKind::kParamGrad) t.at(r, k).l2 = 0;
    CHECK(run("frozen_layer", t).empty());
  }
}

TEST_CASE("frozen_layer: most rows of an embedding table never updated") {
  Trace t = base();
  Probe p;
  p.kind = ProbeKind::kRows;
  p.layer = 0;
  p.node = "/emb/Gather";
  p.op_type = "Gather";
  p.op.embedding = true;
  float unused = 0.8f;
  add_probe(t, p, [&](size_t) {
    TensorStats s;
    s.count = 100;
    s.dead_frac = unused;
    s.zero_frac = 0.9f;
    return s;
  });
  fail(t);
  auto f = run("frozen_layer", t);
  REQUIRE(f.size() == 1);
  CHECK(f[0].symptom == "embedding_rows_unused");
  CHECK(f[0].root_cause == RootCause::kData);
  CHECK(f[0].evidence["rows"] == 100);
  unused = 0.1f;
  Trace ok = base();
  add_probe(ok, p, [&](size_t) {
    TensorStats s;
    s.count = 100;
    s.dead_frac = unused;
    return s;
  });
  fail(ok);
  CHECK(run("frozen_layer", ok).empty());
}

}  // namespace
