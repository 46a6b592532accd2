// Wilson score intervals of the batch's rates (cli/batch_scoring.h), against scipy's
// binomtest(k, n).proportion_ci(method="wilson") (values below).
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "cli/batch_scoring.h"

using dl::cli::wilson_interval;

TEST_CASE("batch: Wilson intervals of the rates") {
  auto [lo, hi] = wilson_interval(16, 19);
  CHECK(lo == doctest::Approx(0.6243452473).epsilon(1e-9));
  CHECK(hi == doctest::Approx(0.9447952836).epsilon(1e-9));
  std::tie(lo, hi) = wilson_interval(0, 10);  // no success: the interval still has width
  CHECK(lo == 0.0);
  CHECK(hi == doctest::Approx(0.2775327999).epsilon(1e-9));
  std::tie(lo, hi) = wilson_interval(10, 10);
  CHECK(lo == doctest::Approx(0.7224672001).epsilon(1e-9));
  CHECK(hi <= 1.0);
  std::tie(lo, hi) = wilson_interval(1, 33);
  CHECK(lo == doctest::Approx(0.0053694105).epsilon(1e-8));
  CHECK(hi == doctest::Approx(0.1531872538).epsilon(1e-9));
  std::tie(lo, hi) = wilson_interval(0, 0);
  CHECK(lo == 0.0);
  CHECK(hi == 1.0);
}

TEST_CASE("batch: the totals carry the intervals of their rates") {
  using nlohmann::json;
  const auto record = [](bool fault, bool verdict_fault) {
    return json{{"status", "ok"}, {"verdict", verdict_fault ? "fault" : "ok"},
                {"scores", {{"detected", fault ? json(verdict_fault) : json(nullptr)},
                            {"false_alarm", fault ? json(nullptr) : json(verdict_fault)},
                            {"localized", nullptr}, {"root_cause", nullptr}, {"as_expected", true}}},
                {"expected", {{"fault", fault}}}};
  };
  const json cases = {record(true, true), record(true, false), record(false, false), record(false, true)};
  const json t = dl::cli::summary_totals(cases);
  REQUIRE(t["intervals"]["detected"].is_array());
  const auto [lo, hi] = wilson_interval(1, 2);
  CHECK(t["intervals"]["detected"][0].get<double>() == lo);
  CHECK(t["intervals"]["detected"][1].get<double>() == hi);
  CHECK(t["intervals"]["false_alarms"][1].get<double>() == hi);
  CHECK(t["intervals"]["localized"].is_null());  // no case with expected nodes
}
