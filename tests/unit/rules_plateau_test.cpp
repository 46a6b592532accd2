// Trend rule loss_plateau (analysis/rules): a true positive, edge cases at the thresholds,
// a --set override. The other trend rules are in rules_trend_test.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "rules_stat_util.h"

using namespace dl;
using namespace dl::test::rules_stat;

// --- loss_plateau -------------------------------------------------------------------------------------------

namespace {

// Loss falls over the first fifth of the run, then stays flat; accuracy stuck at 0.6 (chance 1/3).
void plateau_run(Trace& t) {
  set_curve(
      t, [](int64_t it, double p) { return 0.46 + 0.6 * std::max(0.0, 1 - 5 * p) + 0.01 * std::sin(double(it)); },
      [](int64_t it, double p) { return std::min(0.62, 0.33 + 1.5 * p) + 0.02 * std::sin(0.7 * double(it)); });
}

}  // namespace

TEST_CASE("rule loss_plateau: a flat loss at a poor accuracy after huge steps") {
  TraceBuilder b;
  Trace t = b.dense("relu", 16).dense("relu", 8).dense("softmax", 3).config("epochs", "20").build(200);
  plateau_run(t);
  for (size_t p = 0; p < t.header.probes.size(); ++p)
    if (t.header.probes[p].kind == an::ProbeKind::kUpdate) t.at(0, p).mean = 0.9f;
  auto f = run("loss_plateau", t);
  REQUIRE(f.size() == 1);
  CHECK(f[0].conclusive);
  CHECK(f[0].root_cause == RootCause::kLearningRate);
  CHECK(f[0].recommendation.find("--lr 0.0001") != std::string::npos);
  CHECK(run("loss_plateau", t, false).empty());
  // The analyzer's gate does not see this run (the loss fell); the rule makes it a fault.
  an::Diagnosis d = an::analyze(t, an::Settings(), true);
  REQUIRE(d.fault);
  CHECK(mine(d.findings)[0].rule == "loss_plateau");
  CHECK(run("loss_plateau", t, true, with("loss_plateau.peak_update=1")).empty());
}

TEST_CASE("rule loss_plateau: edge cases") {
  TraceBuilder b;
  Trace t = b.dense("relu", 16).dense("relu", 8).dense("softmax", 3).config("epochs", "20").build(200);
  plateau_run(t);
  SUBCASE("a plateau with normal updates is a capacity limit, not this fault") {
    CHECK(run("loss_plateau", t).empty());
  }
  SUBCASE("a learning rate 10x the default is evidence by itself") {
    t.header.config["learning_rate"] = "0.01";
    CHECK(run("loss_plateau", t).size() == 1);
    CHECK(run("loss_plateau", t, true, with("loss_plateau.high_lr_factor=20")).empty());
  }
  SUBCASE("a plateau at a good accuracy is convergence") {
    t.header.config["learning_rate"] = "0.01";
    set_curve(
        t, [](int64_t, double p) { return 0.1 + 0.6 * std::max(0.0, 1 - 5 * p); },
        [](int64_t, double p) { return std::min(0.95, 0.33 + 3 * p); });
    CHECK(run("loss_plateau", t).empty());
  }
}
