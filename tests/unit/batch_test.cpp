// `deeplocalize batch` and `merge` (cli/batch_*): case loading, options, shards, scoring,
// outputs, and the end-to-end property that two shards merged equal one unsharded run;
// the Keras baselines (analysis/baselines).
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>

#include "analysis/baselines.h"
#include "cli/batch_command.h"
#include "cli/batch_outputs.h"
#include "cli/batch_scoring.h"
#include "converter/errors.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace dl::cli;

void write(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
}

json read(const fs::path& p) {
  std::ifstream f(p);
  return json::parse(f);
}

// A directory of demo cases: a healthy one, one that diverges (SGD, lr 50), a short
// one without expectation, one with a bad options.json.
fs::path make_cases() {
  const fs::path dir = fs::temp_directory_path() / "dl_batch_test_cases";
  fs::remove_all(dir);
  const fs::path demo = fs::path(DL_SOURCE_DIR) / "models" / "demo";
  const std::map<std::string, std::pair<std::string, std::string>> cases = {
      {"a_healthy", {R"({"epochs": 5})", R"({"fault": false})"}},
      {"b_diverges", {R"({"epochs": 3, "optimizer": "sgd", "lr": 50})",
                      R"({"fault": true, "root_causes": ["learning_rate"], "nodes": []})"}},
      {"c_no_expectation", {R"({"epochs": 20, "batch_size": 30})", ""}},
      {"d_bad_options", {R"({"epochs": 2, "learning_rat": 0.1})", R"({"fault": false})"}},
  };
  for (const auto& [name, files] : cases) {
    fs::create_directories(dir / name);
    fs::copy_file(demo / "model.onnx", dir / name / "model.onnx");
    fs::copy_file(demo / "data.csv", dir / name / "data.csv");
    write(dir / name / "options.json", files.first);
    if (!files.second.empty()) write(dir / name / "expected.json", files.second);
  }
  fs::create_directories(dir / "not_a_case");  // no model.onnx: ignored
  return dir;
}

// A summary without what varies from run to run (timings).
json without_timings(json s) {
  s.erase("wall_s");
  for (json& c : s["cases"]) {
    c.erase("seconds");
    c.erase("timing");
    c.erase("time_to_verdict_s");
  }
  s["totals"].erase("median_time_to_verdict_s");
  return s;
}

int batch(const fs::path& input, const fs::path& out, const std::string& shard, bool in_process = false) {
  BatchOptions o;
  o.input = input.string();
  o.jobs = 2;
  o.shard = shard;
  o.json_file = out.string();
  o.quiet = true;
  o.in_process = in_process;
  return run_batch(o);
}

}  // namespace

TEST_CASE("batch: a directory of cases, sharded and merged, equals one unsharded run") {
  const fs::path dir = make_cases();
  const fs::path out = fs::temp_directory_path() / "dl_batch_test_out";
  fs::create_directories(out);
  const int code = batch(dir, out / "all.json", "");
  const json all = read(out / "all.json");
  REQUIRE(all["cases"].size() == 4);
  CHECK(all["total_cases"] == 4);
  CHECK(all["shard"].is_null());
  // Manifest (sorted folder) order, statuses and verdicts.
  CHECK(all["cases"][0]["name"] == "a_healthy");
  CHECK(all["cases"][0]["status"] == "ok");
  CHECK(all["cases"][0]["verdict"] == "ok");
  CHECK(all["cases"][0]["scores"]["false_alarm"] == false);
  CHECK(all["cases"][1]["verdict"] == "fault");
  CHECK(all["cases"][1]["scores"]["detected"] == true);
  CHECK(all["cases"][1]["kind"] == "buggy");
  CHECK(all["cases"][2]["expected"].is_null());
  CHECK(all["cases"][3]["status"] == "input_error");
  const std::string error = all["cases"][3]["error"];
  CHECK(error.find("options.json") != std::string::npos);
  CHECK(error.find("learning_rat") != std::string::npos);
  CHECK(all["totals"]["input_errors"] == 1);
  CHECK(all["totals"]["faulty"] == 1);
  CHECK(all["totals"]["non_faulty"] == 2);
  CHECK(code == 2);  // an input error

  CHECK(batch(dir, out / "s0.json", "0/2") == 0);  // a_healthy, c_no_expectation
  CHECK(batch(dir, out / "s1.json", "1/2", /*in_process=*/true) == 2);  // d_bad_options
  const json s0 = read(out / "s0.json"), s1 = read(out / "s1.json");
  CHECK(s0["cases"].size() == 2);
  CHECK(s0["shard"] == json{{"index", 0}, {"count", 2}});
  CHECK(s1["cases"][0]["name"] == "b_diverges");
  size_t missing = 9;
  const json merged = merge_summaries({s1, s0}, {"s1.json", "s0.json"}, missing);
  CHECK(missing == 0);
  CHECK(without_timings(merged)["cases"] == without_timings(all)["cases"]);
  CHECK(without_timings(merged)["totals"] == without_timings(all)["totals"]);
  CHECK(without_timings(merged) == without_timings(all));

  // A shard given twice, or a missing shard.
  CHECK_THROWS_AS(merge_summaries({s0, s0}, {"s0.json", "again.json"}, missing), dl::ConfigError);
  merge_summaries({s1}, {"s1.json"}, missing);
  CHECK(missing == 2);

  // The outputs of the merged summary.
  const std::string xml = junit_xml(merged);
  CHECK(xml.find("<testcase classname=\"deeplocalize.healthy\" name=\"a_healthy\"") != std::string::npos);
  CHECK(xml.find("tests=\"4\"") != std::string::npos);
  CHECK(xml.find("<error type=\"input_error\"") != std::string::npos);
  const std::string md = summary_markdown(merged);
  CHECK(md.find("| b_diverges |") != std::string::npos);
  fs::remove_all(dir);
  fs::remove_all(out);
}

TEST_CASE("batch: a timeout kills the case and the batch goes on") {
  const fs::path dir = fs::temp_directory_path() / "dl_batch_test_timeout";
  fs::remove_all(dir);
  const fs::path demo = fs::path(DL_SOURCE_DIR) / "models" / "demo";
  fs::create_directories(dir / "slow");
  fs::copy_file(demo / "model.onnx", dir / "slow" / "model.onnx");
  fs::copy_file(demo / "data.csv", dir / "slow" / "data.csv");
  write(dir / "slow" / "options.json", R"({"epochs": 1000000, "no_stop": true, "trace_max_mb": 8})");
  std::vector<CaseSpec> cases = load_cases(dir.string());
  REQUIRE(cases.size() == 1);
  cases[0].options.quiet = true;
  const std::vector<CaseOutcome> out = run_cases(cases, 1, 0, 0.5, false, nullptr);
  CHECK(out[0].status == "timeout");
  CHECK(out[0].error == "timeout after 0.5 s");
  CHECK(out[0].seconds < 5);
  CHECK_THROWS_AS(run_cases(cases, 1, 0, 0.5, /*in_process=*/true, nullptr), dl::ConfigError);
  fs::remove_all(dir);
}

TEST_CASE("batch: options.json keys, shards from the environment") {
  TrainOptions o;
  apply_case_options(json::parse(R"({"epochs": 5, "lr": "0.1", "loss": "mse", "nesterov": true,
                                      "set": {"dead_relu.max_fraction": 0.5}})"), "x/options.json", o);
  CHECK(*o.epochs == 5);
  CHECK(*o.lr == doctest::Approx(0.1));
  CHECK(*o.loss == "mse");
  CHECK(o.settings.size() == 1);
  CHECK_THROWS_WITH_AS(apply_case_options(json::parse(R"({"epoch": 5})"), "x/options.json", o),
                       doctest::Contains("x/options.json: 'epoch': unknown key"), dl::ConfigError);
  CHECK_THROWS_AS(apply_case_options(json::parse(R"({"epochs": "many"})"), "x/options.json", o), dl::ConfigError);
  CHECK_THROWS_AS(apply_case_options(json::parse(R"([1])"), "x/options.json", o), dl::ConfigError);

  std::map<std::string, std::string> env;
  auto getenv = [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  Shard s = resolve_shard("", 0, getenv);
  CHECK((s.index == 0 && s.count == 1));
  s = resolve_shard("2/3", 0, getenv);
  CHECK((s.index == 2 && s.count == 3));
  CHECK_THROWS_AS(resolve_shard("3/3", 0, getenv), dl::ConfigError);
  CHECK_THROWS_AS(resolve_shard("1", 0, getenv), dl::ConfigError);
  CHECK_THROWS_AS(resolve_shard("", 4, getenv), dl::ConfigError);  // no index anywhere
  env["JOB_COMPLETION_INDEX"] = "3";
  s = resolve_shard("", 4, getenv);
  CHECK((s.index == 3 && s.count == 4));
  env.clear();
  env["SLURM_ARRAY_TASK_ID"] = "11";
  env["SLURM_ARRAY_TASK_MIN"] = "10";
  s = resolve_shard("", 2, getenv);
  CHECK((s.index == 1 && s.count == 2));
  env.clear();
  env["CI_NODE_INDEX"] = "1";  // GitLab: 1-based
  env["CI_NODE_TOTAL"] = "3";
  s = resolve_shard("", 0, getenv);
  CHECK((s.index == 0 && s.count == 3));
  s = resolve_shard("2/5", 0, getenv);  // the flag wins
  CHECK((s.index == 2 && s.count == 5));
}

TEST_CASE("batch: scoring against expected results") {
  json r = {{"status", "ok"}, {"verdict", "fault"},
            {"primary", {{"root_cause", "activation"}, {"layer", {{"index", 1}, {"nodes", {"/2/Gemm", "/3/Softmax"}}}}}},
            {"expected", {{"fault", true}, {"root_causes", {"activation", "loss"}}, {"nodes", {"/3/Softmax"}}}}};
  json s = score_record(r);
  CHECK(s["detected"] == true);
  CHECK(s["localized"] == true);
  CHECK(s["root_cause"] == true);
  CHECK(s["false_alarm"].is_null());
  CHECK(s["as_expected"] == true);
  r["primary"]["root_cause"] = "learning_rate";
  CHECK(score_record(r)["root_cause"] == false);
  CHECK(score_record(r)["as_expected"] == false);
  r["expected"]["fault"] = false;
  CHECK(score_record(r)["false_alarm"] == true);
  r["verdict"] = "ok";
  CHECK(score_record(r)["as_expected"] == true);
  r["expected"] = nullptr;
  CHECK(score_record(r)["as_expected"] == true);
  r["status"] = "timeout";
  CHECK(score_record(r)["as_expected"] == false);
  CHECK(median({3, 1, 2}) == 2);
  CHECK(median({4, 1, 2, 3}) == 2.5);
  // What XML 1.0 cannot hold is written visibly (io/text_escape.h), not dropped.
  CHECK(xml_escape("a<b>&\"'\x01\xff") == "a&lt;b&gt;&amp;&quot;&apos;\\x01\\xff");
  CHECK(xml_escape("\u00e9") == "\u00e9");
}

TEST_CASE("Keras baselines follow the callbacks") {
  using namespace dl::an;
  Trace t;
  t.header.batches_per_epoch = 2;
  t.header.metric_name = "accuracy";
  auto epoch = [&t](double loss, double acc, float batch_loss) {
    const int64_t e = static_cast<int64_t>(t.epochs.size());
    t.add_loss(2 * e, batch_loss, 0);
    t.add_loss(2 * e + 1, batch_loss, 0);
    EpochRecord r;
    r.epoch = e, r.loss = loss, r.metric = acc;
    t.add_epoch(r);
  };
  epoch(1.0, 0.5, 1.0f);
  epoch(0.8, 0.6, 0.8f);
  CHECK_FALSE(baseline_diagnose(Detector::kUnion, t).fault);
  epoch(0.8, 0.7, 0.8f);  // loss equal to the best: no improvement (min_delta 0) -> stop
  Diagnosis d = baseline_diagnose(Detector::kEarlyStoppingLoss, t);
  REQUIRE(d.fault);
  CHECK(d.findings[0].symptom == "keras_early_stopping_loss");
  CHECK(d.findings[0].epoch == 2);
  CHECK(d.findings[0].iteration == 5);
  CHECK(d.findings[0].layer == -1);
  CHECK(d.findings[0].root_cause == RootCause::kUnknown);
  CHECK_FALSE(baseline_diagnose(Detector::kEarlyStoppingAccuracy, t).fault);
  CHECK_FALSE(baseline_diagnose(Detector::kTerminateOnNaN, t).fault);
  epoch(0.7, 0.7, std::numeric_limits<float>::infinity());
  d = baseline_diagnose(Detector::kUnion, t);
  REQUIRE(d.findings.size() == 3);
  CHECK(d.findings[0].symptom == "keras_early_stopping_loss");
  CHECK(d.findings[1].symptom == "keras_terminate_on_nan");
  CHECK(d.findings[1].iteration == 6);
  CHECK(d.findings[2].symptom == "keras_early_stopping_accuracy");
  CHECK(d.findings[2].epoch == 3);

  // A NaN epoch loss never improves; regression monitors its metric (mae) downwards.
  Trace r;
  r.header.metric_name = "mae";
  r.header.metric_higher_is_better = false;
  for (double mae : {3.0, 2.0, 1.0}) {
    EpochRecord e;
    e.epoch = static_cast<int64_t>(r.epochs.size()), e.loss = mae * mae, e.metric = mae;
    r.add_epoch(e);
  }
  CHECK_FALSE(baseline_diagnose(Detector::kUnion, r).fault);
  EpochRecord e;
  e.epoch = 3, e.loss = std::nan(""), e.metric = 0.5;
  r.add_epoch(e);
  d = baseline_diagnose(Detector::kUnion, r);
  REQUIRE(d.findings.size() == 1);
  CHECK(d.findings[0].symptom == "keras_early_stopping_loss");
  CHECK(detector_from("keras-union") == Detector::kUnion);
  CHECK_THROWS_AS(detector_from("keras"), dl::ConfigError);
}
