// Hostile batch inputs (issue 18): case directories with symlink loops, dangling links,
// unreadable folders and names that collide as file names or hold newlines; --reports
// onto a file; and merge of summaries that are nested deep, lie about their fields or
// come from another batch.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "cli/batch_command.h"
#include "cli/batch_outputs.h"
#include "cli/batch_scoring.h"
#include "cli/json_input.h"
#include "converter/errors.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace dl::cli;

void write(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
}

// A case folder of the demo model, one epoch.
void demo_case(const fs::path& dir) {
  const fs::path demo = fs::path(DL_SOURCE_DIR) / "models" / "demo";
  fs::create_directories(dir);
  fs::copy_file(demo / "model.onnx", dir / "model.onnx");
  fs::copy_file(demo / "data.csv", dir / "data.csv");
  write(dir / "options.json", R"({"epochs": 1})");
}

const CaseSpec* named(const std::vector<CaseSpec>& cases, const std::string& name) {
  for (const CaseSpec& c : cases)
    if (c.name == name) return &c;
  return nullptr;
}

// A summary as batch --json writes it, read back from its text: cases of shard
// `index`/`count` of a manifest of `total` cases, faulty, healthy and failed ones.
json summary_of(int index, int count, size_t total) {
  json cases = json::array();
  for (size_t k = static_cast<size_t>(index); k < total; k += static_cast<size_t>(count)) {
    CaseSpec spec;
    spec.index = k;
    spec.name = "case" + std::to_string(k);
    spec.options.model = spec.name + "/model.onnx";
    spec.options.data = spec.name + "/data.csv";
    spec.expected = {{"fault", k % 2 == 0}, {"root_causes", {"learning_rate"}}, {"nodes", json::array()}};
    CaseOutcome out;
    out.seconds = 0.25 * static_cast<double>(k + 1);
    if (k % 3 == 2) {
      out.status = "input_error";
      out.error = "bad data";
    } else {
      const bool fault = k % 2 == 0;
      json findings = json::array();
      if (fault)
        findings.push_back({{"symptom", "nan_loss"}, {"stage", "loss"}, {"layer", nullptr}, {"root_cause", "learning_rate"},
                            {"message", "m"}, {"recommendation", "r"}, {"epoch", 0}, {"iteration", 3}});
      out.report = {{"verdict", fault ? "fault" : "ok"},
                    {"findings", findings},
                    {"training", {{"iterations", 4}, {"epochs", 1}, {"stopped_early", fault},
                                  {"loss", {0.5}}, {"accuracy", {0.75}}, {"metric", "accuracy"}}},
                    {"timing", {{"import_s", 0.01}, {"train_s", 0.1 * static_cast<double>(k)}, {"analysis_s", 0.02}}}};
    }
    cases.push_back(case_record(spec, out));
  }
  SummaryInfo info;
  info.input = "cases";
  info.shard = {index, count};
  info.total_cases = total;
  info.manifest = "0123456789abcdef";
  info.options = batch_options_record(BatchOptions{});
  info.wall_s = 1.5;
  return json::parse(make_summary(cases, info).dump());
}

// merge_summaries' error for the two shards of 5 cases, after `edit` changed shard 1.
template <typename Edit>
std::string merge_error(Edit edit) {
  json s0 = summary_of(0, 2, 5), s1 = summary_of(1, 2, 5);
  edit(s1);
  uint64_t missing = 0;
  try {
    merge_summaries({s0, s1}, {"s0.json", "s1.json"}, missing);
  } catch (const dl::ConfigError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("batch directories: loops, dangling links and unreadable folders are errors of their case") {
  const fs::path dir = fs::temp_directory_path() / "dl_batch_input_dirs";
  fs::remove_all(dir);
  demo_case(dir / "good");
  fs::create_directory_symlink("loop", dir / "loop");                 // a link to itself
  fs::create_directory_symlink(dir / "gone", dir / "dangling");       // a link to nothing
  demo_case(dir / "inner_loop");
  fs::remove(dir / "inner_loop" / "data.csv");
  fs::create_symlink("data.csv", dir / "inner_loop" / "data.csv");   // a loop inside a case
  demo_case(dir / "locked");
  fs::permissions(dir / "locked", fs::perms::none);
  std::vector<CaseSpec> cases;
  REQUIRE_NOTHROW(cases = load_cases(dir.string()));
  fs::permissions(dir / "locked", fs::perms::owner_all);
  REQUIRE(named(cases, "good"));
  CHECK(named(cases, "good")->load_error.empty());
  REQUIRE(named(cases, "loop"));
  CHECK(named(cases, "loop")->load_error.find("levels of symbolic links") != std::string::npos);
  REQUIRE(named(cases, "dangling"));
  CHECK(named(cases, "dangling")->load_error.find("a symbolic link to") != std::string::npos);
  REQUIRE(named(cases, "inner_loop"));
  CHECK(named(cases, "inner_loop")->load_error.find("data.csv") != std::string::npos);
  // Root reads every folder: the permission case can only be seen as another user.
  if (geteuid() != 0) {
    REQUIRE(named(cases, "locked"));
    CHECK(named(cases, "locked")->load_error.find("Permission denied") != std::string::npos);
  }

  // The batch goes on: the good case runs, the others are input errors (exit 2).
  BatchOptions o;
  o.input = dir.string();
  o.jobs = 2;
  o.quiet = true;
  o.json_file = (dir / "summary.json").string();
  fs::remove_all(dir / "locked");
  CHECK(run_batch(o) == 2);
  std::ifstream f(o.json_file);
  const json s = json::parse(f);
  CHECK(s["totals"]["ran"] == 1);
  CHECK(s["totals"]["input_errors"] == 3);
  fs::remove_all(dir);
}

TEST_CASE("batch: --reports onto a file is a usage error; report names are unique") {
  const fs::path dir = fs::temp_directory_path() / "dl_batch_input_reports";
  fs::remove_all(dir);
  demo_case(dir / "cases" / "a<b");
  demo_case(dir / "cases" / "a>b");
  demo_case(dir / "cases" / "a_b");
  write(dir / "file", "not a directory");
  BatchOptions o;
  o.input = (dir / "cases").string();
  o.jobs = 2;
  o.quiet = true;
  o.reports_dir = (dir / "file").string();
  CHECK_THROWS_WITH_AS(run_batch(o), doctest::Contains("not a directory"), dl::ConfigError);
  o.reports_dir = (dir / "file" / "below").string();
  CHECK_THROWS_AS(run_batch(o), dl::ConfigError);
  fs::create_directory_symlink(dir / "gone", dir / "dangling");
  o.reports_dir = (dir / "dangling").string();
  CHECK_THROWS_WITH_AS(run_batch(o), doctest::Contains("a symbolic link to"), dl::ConfigError);

  o.reports_dir = (dir / "reports").string();
  CHECK(run_batch(o) == 0);
  std::set<std::string> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir / "reports")) files.insert(e.path().filename().string());
  CHECK(files.size() == 3);  // one report per case
  CHECK(files.count("a_b.json") == 1);  // a safe name is kept as it is

  // Deterministic, safe, case-insensitively unique and short.
  std::vector<CaseSpec> cases(6);
  const char* names[] = {"a<b", "a>b", "Same", "same", "..", ""};
  for (size_t k = 0; k < cases.size(); ++k) cases[k].index = k, cases[k].name = names[k];
  cases.push_back(CaseSpec{});
  cases.back().index = 6;
  cases.back().name = std::string(300, 'x');
  const std::vector<std::string> a = report_file_names(cases), b = report_file_names(cases);
  CHECK(a == b);
  CHECK(std::set<std::string>(a.begin(), a.end()).size() == a.size());
  CHECK(a[2] == "Same.json");
  CHECK(a[3] == "same-3.json");
  for (const std::string& n : a) {
    CHECK(n.size() <= 120);
    CHECK(n.find('/') == std::string::npos);
    CHECK(n[0] != '.');
  }
  fs::remove_all(dir);
}

TEST_CASE("batch: case names with newlines and escapes are shown escaped") {
  const fs::path dir = fs::temp_directory_path() / "dl_batch_input_names";
  fs::remove_all(dir);
  demo_case(dir / "two\nlines");
  demo_case(dir / "esc\x1b[31m");
  const std::vector<CaseSpec> cases = load_cases(dir.string());
  REQUIRE(cases.size() == 2);
  CHECK(cases[0].name == "esc\\x1b[31m");
  CHECK(cases[1].name == "two\\nlines");
  CHECK(cases[1].options.model == (dir / "two\nlines" / "model.onnx").string());  // the files are the real ones
  fs::remove_all(dir);
}

TEST_CASE("json input: a nesting limit and a size limit") {
  const std::string deep = std::string(50000, '[') + std::string(50000, ']');
  CHECK_THROWS_WITH_AS(parse_json_text(deep, "s.json"), doctest::Contains("s.json:1:65: JSON nested deeper than 64"),
                       dl::ConfigError);
  CHECK(parse_json_text(std::string(64, '[') + std::string(64, ']'), "s.json").is_array());
  CHECK(parse_json_text(R"({"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"["})", "s.json")["a"]
            .is_string());  // brackets in strings are text
  CHECK_THROWS_WITH_AS(parse_json_text("{", "s.json"), doctest::Contains("s.json: invalid JSON"), dl::ConfigError);
}

TEST_CASE("merge: shards of one batch merge; every field is checked") {
  uint64_t missing = 9;
  const json merged = merge_summaries({summary_of(1, 2, 5), summary_of(0, 2, 5)}, {"s1.json", "s0.json"}, missing);
  CHECK(missing == 0);
  CHECK(merged["cases"].size() == 5);
  CHECK(merged["cases"][3]["index"] == 3);
  CHECK(merged["manifest"] == "0123456789abcdef");
  check_summary(json::parse(merged.dump()), "merged.json");  // what merge writes, merge reads

  auto has = [](const std::string& error, const std::string& fragment) {
    INFO(error);
    CHECK(error.find(fragment) != std::string::npos);
  };
  has(merge_error([](json& s) { s["cases"][0]["index"] = -1; }), "s1.json: cases[0].index");
  has(merge_error([](json& s) { s["cases"][0]["index"] = 1000000000000000000ull; }), "s1.json: cases[0].index");
  has(merge_error([](json& s) { s["cases"][0]["index"] = 2; }), "not in shard 1/2");
  has(merge_error([](json& s) { s["cases"][1]["index"] = 1; }), "appears twice");
  has(merge_error([](json& s) { s["cases"][0]["status"] = "exploded"; }), "cases[0].status: \"exploded\" is not a known case status");
  has(merge_error([](json& s) { s["summary_version"] = 99; }), "s1.json: summary_version: 99");
  has(merge_error([](json& s) { s["manifest"] = "fedcba9876543210"; }), "s1.json: manifest");
  has(merge_error([](json& s) { s["total_cases"] = 1000000000000000ull; }), "s1.json: total_cases");
  has(merge_error([](json& s) { s["total_cases"] = 6; }), "s1.json: total_cases 6 differs");
  has(merge_error([](json& s) { s["options"]["set"] = {"dead_relu.max_fraction=0.5"}; }), "s1.json: options");
  has(merge_error([](json& s) { s["detector"] = "keras-union"; }), "s1.json: detector");
  has(merge_error([](json& s) { s["shard"]["index"] = 0; }), "s1.json: cases[0].index");
  has(merge_error([](json& s) { s["shard"] = {{"index", 1}, {"count", 3}}; }), "not in shard 1/3");
  has(merge_error([](json& s) { s["totals"]["ran"] = 1000000; }), "s1.json: totals.ran: 1000000, but its cases give");
  has(merge_error([](json& s) { s["cases"][0]["scores"]["detected"] = true; }), "s1.json: cases[0].scores");
  has(merge_error([](json& s) { s["cases"][0]["primary"] = {{"root_cause", 1}}; }), "s1.json: cases[0].primary");
  has(merge_error([](json& s) { s["cases"][0]["name"] = 7; }), "s1.json: cases[0].name: must be a string");
  has(merge_error([](json& s) { s["cases"][0]["name"] = "case0"; }), "case name \"case0\" is also in s0.json");
  has(merge_error([](json& s) { s["cases"][0]["extra"] = 1; }), "s1.json: cases[0].extra: unknown field");
  has(merge_error([](json& s) { s["cases"][0]["seconds"] = -1; }), "s1.json: cases[0].seconds");
  has(merge_error([](json& s) { s["cases"][0]["training"]["epochs"] = 1.5; }), "cases[0].training.epochs");
  has(merge_error([](json& s) { s["cases"][0]["expected"]["fault"] = "yes"; }), "cases[0].expected.fault");
  has(merge_error([](json& s) { s.erase("totals"); }), "s1.json: totals: missing");
  has(merge_error([](json& s) { s["shard"] = nullptr; }), "s1.json: shard: null");
  CHECK(merge_error([](json&) {}) == "(accepted)");
  // More shards than cases is pointless but what batch may write: merge reads it back.
  CHECK_NOTHROW(merge_summaries({summary_of(0, 20000000, 5)}, {"s.json"}, missing));
  CHECK(missing == 4);
}

TEST_CASE("batch outputs: counts print as 64-bit numbers") {
  json s = summary_of(0, 2, 5);
  s["total_cases"] = 1000000000000000ull;
  CHECK(summary_text(s).find("of 1000000000000000)") != std::string::npos);
  s["totals"]["cases"] = 3000000000ull;
  CHECK(summary_text(s).find("Summary: 3000000000 cases") != std::string::npos);
}
