// loss_above_chance while training (issue 17, time to a verdict): a run that started near
// the constant prediction's loss and whose updates drive the loss to 10x that for several
// iterations is a fault the online analysis reports at once, the learning rate its cause;
// a single wild batch, a bad start and a completed run that recovered are not.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <string>

#include "analysis/analyzer.h"
#include "rules_stat_util.h"

using namespace dl;
using namespace dl::test::rules_stat;

namespace {

const double kChance3 = std::log(3.0);  // the builder's 3 balanced classes

// 64 iterations (one epoch of 64 batches configured), the loss from `loss(it)`.
Trace run_of(const std::function<double(int64_t)>& loss) {
  TraceBuilder b;
  Trace t = b.dense("relu", 16).dense("softmax", 3).config("epochs", "1").batches_per_epoch(64).build(64);
  set_curve(t, [&](int64_t it, double) { return loss(it); }, [](int64_t, double) { return 0.34; });
  return t;
}

}  // namespace

TEST_CASE("rule loss_above_chance: a blow-up while training is reported after a few iterations") {
  // resnet18 at Adam lr x100: 2.2 at the first batch, then 20-50, back near chance later.
  const double wild[] = {1.0, 9, 22, 8, 15, 18, 9, 12};
  const Trace t = run_of([&](int64_t it) { return it < 8 ? wild[it] * kChance3 : 1.05 * kChance3; });
  CHECK(run("loss_above_chance", head(t, 7), false).empty());  // too few iterations yet
  const auto f = run("loss_above_chance", head(t, 8), false);
  REQUIRE(f.size() == 1);
  CHECK(f[0].symptom == "exploding_loss");
  CHECK(f[0].conclusive);
  CHECK(f[0].iteration == 2);  // the median of iterations 1-4 is 12x the chance loss; 22x at 2
  CHECK(f[0].evidence["blowup_from"] == 1);
  CHECK(f[0].evidence["blowup_onset"] == 2);
  CHECK(f[0].root_cause == RootCause::kLearningRate);
  CHECK(f[0].lr_direction < 0);
  CHECK(f[0].evidence["blowup_median"].get<double>() == doctest::Approx(12 * kChance3).epsilon(1e-3));
  // The final analysis of the run the online analysis stopped there says the same, even
  // when the trainer recorded the unfinished epoch.
  Trace stopped = head(t, 8);
  stopped.epochs.push_back(t.epochs.front());
  const auto g = run("loss_above_chance", stopped, true);
  REQUIRE(g.size() == 1);
  CHECK(g[0].symptom == "exploding_loss");
  // A static finding explains a blow-up better than the step size: unscaled inputs.
  Trace unscaled = head(t, 8);
  unscaled.header.data_summary.all_features.max = 3000;
  unscaled.header.data_summary.feature_columns[0].max = 3000;
  unscaled.header.data_summary.feature_columns[0].std = 600;
  const auto u = run("loss_above_chance", unscaled, false);
  REQUIRE(u.size() == 1);
  CHECK(u[0].root_cause == RootCause::kData);
  CHECK(u[0].message.find("as expected from unnormalized_inputs") != std::string::npos);
  // A higher threshold: not a blow-up.
  CHECK(run("loss_above_chance", head(t, 8), false, with("loss_above_chance.blowup=20")).empty());
  // The whole epoch, complete: judged at its end as before, on the epoch's mean loss (2.4x
  // the chance loss, the blow-up included), not as a blow-up.
  const auto end = run("loss_above_chance", t, true);
  REQUIRE(end.size() == 1);
  CHECK(end[0].evidence.contains("ends_above_chance"));
  CHECK_FALSE(end[0].evidence.contains("blowup_median"));
}

TEST_CASE("rule loss_above_chance: a blow-up is placed where the loss reached the level, not at its window") {
  // Iterations 1-4 at 2, 2, 20, 20x the chance loss: their median (11x) is a blow-up, which
  // began at iteration 3 (a step's own finding there, an exploding state, is not later).
  const double jump[] = {1.0, 2, 2, 20, 20, 20, 20, 20};
  const Trace t = run_of([&](int64_t it) { return (it < 8 ? jump[it] : 20.0) * kChance3; });
  const auto f = run("loss_above_chance", head(t, 8), false);
  REQUIRE(f.size() == 1);
  CHECK(f[0].evidence["blowup_from"] == 1);
  CHECK(f[0].iteration == 3);
}

TEST_CASE("rule loss_above_chance: no blow-up from one wild batch, a bad start or a healthy run") {
  SUBCASE("one batch at 50x") {
    const Trace t = run_of([](int64_t it) { return (it == 3 ? 50.0 : 1.0 - 0.005 * double(it)) * kChance3; });
    CHECK(run("loss_above_chance", head(t, 16), false).empty());
  }
  SUBCASE("a start far above: the initial weights', not the updates'") {
    const Trace t = run_of([](int64_t it) { return (it < 8 ? 20.0 : 1.0) * kChance3; });
    CHECK(run("loss_above_chance", head(t, 16), false).empty());
  }
  SUBCASE("a healthy run") {
    const Trace t = run_of([](int64_t it) { return (1.0 - 0.01 * double(it)) * kChance3; });
    CHECK(run("loss_above_chance", head(t, 32), false).empty());
  }
}
