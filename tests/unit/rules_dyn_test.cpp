// Dynamic per-tensor rules (analysis/rules), across the rules: the healthy builder
// traces raise nothing, thresholds are declared with reasons. The rules themselves:
// rules_dyn_numeric_test.cpp (numerical_error, exploding_tensor), rules_dyn_params_test.cpp
// (vanishing_gradient, unchanged_weights), rules_dyn_units_test.cpp (dead_units,
// saturated_units).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "rules_dyn_util.h"

using namespace dl;
using namespace dl::test::rules_dyn;

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
