// Benchmark splits in a batch (issue 15): a manifest case may name its split (dev,
// heldout), the records carry it, and the totals are also given per split so that the
// development and held-out scores of one run are reported separately.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "cli/batch_command.h"
#include "cli/batch_scoring.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json scored(const char* split, bool fault, bool verdict_fault) {
  json r = {{"status", "ok"}, {"verdict", verdict_fault ? "fault" : "ok"},
            {"scores", {{"detected", fault ? json(verdict_fault) : json(nullptr)},
                        {"false_alarm", fault ? json(nullptr) : json(verdict_fault)},
                        {"localized", nullptr}, {"root_cause", nullptr}, {"as_expected", fault == verdict_fault}}},
            {"expected", {{"fault", fault}}}};
  r["split"] = split ? json(split) : json(nullptr);
  return r;
}

}  // namespace

TEST_CASE("batch splits: totals per split beside the overall ones") {
  const json cases = {scored("dev", true, true), scored("dev", false, true), scored("heldout", true, false),
                      scored("heldout", true, true), scored("heldout", false, false), scored(nullptr, true, true)};
  const json t = dl::cli::summary_totals(cases);
  CHECK(t["detected"] == 3);
  CHECK(t["faulty"] == 4);
  REQUIRE(t["splits"].is_object());
  CHECK(t["splits"].size() == 2);  // a case without a split counts only in the overall totals
  const json& dev = t["splits"]["dev"];
  const json& held = t["splits"]["heldout"];
  CHECK(dev["cases"] == 2);
  CHECK(dev["detected"] == 1);
  CHECK(dev["faulty"] == 1);
  CHECK(dev["false_alarms"] == 1);
  CHECK(held["detected"] == 1);
  CHECK(held["faulty"] == 2);
  CHECK(held["false_alarms"] == 0);
  const auto [lo, hi] = dl::cli::wilson_interval(1, 2);
  CHECK(held["intervals"]["detected"][0].get<double>() == lo);
  CHECK(held["intervals"]["detected"][1].get<double>() == hi);
  CHECK_FALSE(held.contains("splits"));
}

TEST_CASE("batch splits: no split named, no per-split totals") {
  const json cases = {scored(nullptr, true, true), scored(nullptr, false, false)};
  CHECK_FALSE(dl::cli::summary_totals(cases).contains("splits"));
}

TEST_CASE("batch splits: read from the manifest, kept in the record, checked in a summary") {
  const fs::path dir = fs::temp_directory_path() / "dl_batch_split_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "manifest.json") << R"({"cases": [
    {"name": "a", "model": "a.onnx", "data": "a.csv", "kind": "buggy", "split": "heldout"},
    {"name": "b", "model": "b.onnx", "data": "b.csv", "kind": "fixed"},
    {"name": "c", "model": "c.onnx", "data": "c.csv", "split": 3}]})";
  const std::vector<dl::cli::CaseSpec> cases = dl::cli::load_cases((dir / "manifest.json").string());
  REQUIRE(cases.size() == 3);
  CHECK(cases[0].split == "heldout");
  CHECK(cases[1].split.empty());
  CHECK(cases[2].load_error.find("'split' must be a string") != std::string::npos);

  dl::cli::CaseOutcome failed;
  failed.status = "input_error";
  failed.error = "no such file";
  const json a = dl::cli::case_record(cases[0], failed), b = dl::cli::case_record(cases[1], failed);
  CHECK(a["split"] == "heldout");
  CHECK(b["split"].is_null());

  dl::cli::SummaryInfo info;
  info.input = (dir / "manifest.json").string();
  info.total_cases = 2;
  info.manifest = dl::cli::manifest_digest({cases[0], cases[1]});
  info.options = dl::cli::batch_options_record(dl::cli::BatchOptions{});
  json summary = dl::cli::make_summary(json::array({a, b}), info);
  CHECK(summary["totals"]["splits"]["heldout"]["cases"] == 1);
  CHECK_NOTHROW(dl::cli::check_summary(summary, "s.json"));
  summary["cases"][0]["split"] = 7;
  CHECK_THROWS_WITH(dl::cli::check_summary(summary, "s.json"), doctest::Contains("cases[0].split"));
  fs::remove_all(dir);
}

TEST_CASE("batch splits: the split is part of the manifest digest (shards must agree on it)") {
  dl::cli::CaseSpec c;
  c.name = "x";
  c.kind = "buggy";
  const std::string before = dl::cli::manifest_digest({c});
  c.split = "dev";
  CHECK(dl::cli::manifest_digest({c}) != before);
}
