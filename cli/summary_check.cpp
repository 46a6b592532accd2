// Checking a batch summary read back by merge. A summary is an input like any other: a
// file edited by hand, cut short or from another version must be refused with the field
// at fault, not merged into totals that lie, printed as a wrapped number or dumped as
// gigabytes of indentation. The rules mirror what case_record and make_summary write.
#include <cmath>
#include <cstdint>
#include <set>

#include "analysis/baselines.h"
#include "analysis/finding.h"
#include "cli/batch_scoring.h"
#include "converter/errors.h"

namespace dl::cli {
namespace {

using nlohmann::json;

// A value as the error shows it: short, one line.
std::string shown(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

class Checker {
 public:
  explicit Checker(const std::string& file) : file_(file) {}

  [[noreturn]] void fail(const std::string& path, const std::string& problem) const {
    throw ConfigError(file_ + ": " + path + ": " + problem);
  }

  // An object with exactly these keys, `optional` ones may be absent.
  void object(const json& v, const std::string& path, std::initializer_list<const char*> keys,
              std::initializer_list<const char*> optional = {}) const {
    if (!v.is_object()) fail(path.empty() ? "summary" : path, "must be an object, not " + shown(v));
    std::set<std::string> known(keys.begin(), keys.end());
    known.insert(optional.begin(), optional.end());
    const std::string prefix = path.empty() ? "" : path + ".";
    for (const char* k : keys)
      if (!v.contains(k)) fail(prefix + k, "missing");
    for (auto it = v.begin(); it != v.end(); ++it)
      if (!known.count(it.key())) fail(prefix + it.key(), "unknown field");
  }

  // A whole number in [lo, hi] (hi at most INT64_MAX).
  int64_t integer(const json& v, const std::string& path, int64_t lo, uint64_t hi) const {
    bool ok = false;
    if (v.is_number_unsigned()) {
      ok = v.get<uint64_t>() <= hi && (lo <= 0 || v.get<uint64_t>() >= static_cast<uint64_t>(lo));
    } else if (v.is_number_integer()) {
      const int64_t x = v.get<int64_t>();
      ok = x >= lo && (x < 0 || static_cast<uint64_t>(x) <= hi);
    }
    if (!ok)
      fail(path, "must be a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) + ", not " + shown(v));
    return v.get<int64_t>();
  }
  uint64_t count(const json& v, const std::string& path, uint64_t hi = kMaxCases) const {
    return static_cast<uint64_t>(integer(v, path, 0, hi));
  }
  // A finite number >= 0 (seconds).
  void seconds(const json& v, const std::string& path) const {
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
      fail(path, "must be a number of seconds (0 or more), not " + shown(v));
  }
  void number_or_null(const json& v, const std::string& path) const {
    if (!v.is_null() && !v.is_number()) fail(path, "must be a number or null, not " + shown(v));
  }
  void text(const json& v, const std::string& path) const {
    if (!v.is_string()) fail(path, "must be a string, not " + shown(v));
  }
  void text_or_null(const json& v, const std::string& path) const {
    if (!v.is_null()) text(v, path);
  }
  void boolean(const json& v, const std::string& path) const {
    if (!v.is_boolean()) fail(path, "must be true or false, not " + shown(v));
  }
  void strings(const json& v, const std::string& path) const {
    if (!v.is_array()) fail(path, "must be an array of strings, not " + shown(v));
    for (size_t k = 0; k < v.size(); ++k) text(v[k], path + "[" + std::to_string(k) + "]");
  }
  template <typename List>
  void one_of(const json& v, const std::string& path, const List& names, const std::string& what) const {
    if (v.is_string())
      for (const auto& n : names)
        if (v.get<std::string>() == n) return;
    fail(path, shown(v) + " is not a known " + what);
  }

  void primary(const json& p, const std::string& path) const {
    object(p, path, {"symptom", "stage", "layer", "root_cause", "message", "recommendation", "epoch", "iteration"});
    for (const char* k : {"symptom", "message", "recommendation"}) text(p[k], path + "." + k);
    std::vector<std::string> stages;
    for (an::Stage s : {an::Stage::kStatic, an::Stage::kForward, an::Stage::kBackward, an::Stage::kWeights,
                        an::Stage::kLoss, an::Stage::kAccuracy})
      stages.push_back(an::stage_name(s));
    one_of(p["stage"], path + ".stage", stages, "stage");
    const std::string cause = p["root_cause"].is_string() ? p["root_cause"].get<std::string>() : "";
    if (cause != an::root_cause_name(an::root_cause_from(cause))) fail(path + ".root_cause", shown(p["root_cause"]) + " is not a known root cause");
    for (const char* k : {"epoch", "iteration"})
      if (!p[k].is_null()) integer(p[k], path + "." + k, -1, uint64_t(INT64_MAX));
    if (const json& layer = p["layer"]; !layer.is_null()) {
      object(layer, path + ".layer", {"index", "name", "nodes"});
      count(layer["index"], path + ".layer.index", uint64_t(INT32_MAX));
      text(layer["name"], path + ".layer.name");
      strings(layer["nodes"], path + ".layer.nodes");
    }
  }

  void expected(const json& e, const std::string& path) const {
    object(e, path, {"fault", "root_causes", "nodes"}, {"notes"});
    boolean(e["fault"], path + ".fault");
    strings(e["root_causes"], path + ".root_causes");
    strings(e["nodes"], path + ".nodes");
    if (e.contains("notes")) text(e["notes"], path + ".notes");
  }

  void fix(const json& f, const std::string& path) const {
    object(f, path, {"tried", "verified", "seconds", "change", "root_cause", "root_cause_matches", "after"},
           {"first_root_cause", "first_root_cause_confirmed", "localization"});
    count(f["tried"], path + ".tried", 1'000'000);
    boolean(f["verified"], path + ".verified");
    seconds(f["seconds"], path + ".seconds");
    if (f["verified"] == json(true)) {
      text(f["change"], path + ".change");
      text(f["root_cause"], path + ".root_cause");
      object(f["after"], path + ".after", {"loss", "metric"});
      for (const char* k : {"loss", "metric"}) number_or_null(f["after"][k], path + ".after." + k);
    } else {
      for (const char* k : {"change", "root_cause", "after"})
        if (!f[k].is_null()) fail(path + "." + k, "must be null for a repair that was not verified");
    }
    if (!f["root_cause_matches"].is_null()) boolean(f["root_cause_matches"], path + ".root_cause_matches");
    if (f.contains("first_root_cause") && !f["first_root_cause"].is_null())
      text(f["first_root_cause"], path + ".first_root_cause");
    if (f.contains("first_root_cause_confirmed"))
      boolean(f["first_root_cause_confirmed"], path + ".first_root_cause_confirmed");
    if (f.contains("localization") && !f["localization"].is_null()) text(f["localization"], path + ".localization");
  }

  void record(const json& c, const std::string& path) const {
    object(c, path,
           {"index", "name", "kind", "source", "pair", "model", "data", "status", "error", "verdict", "findings",
            "primary", "expected", "training", "timing", "time_to_verdict_s", "seconds", "scores"},
           {"final", "fix", "split"});
    for (const char* k : {"name", "kind", "source", "pair", "model", "data"}) text(c[k], path + "." + k);
    if (c.contains("split") && !c["split"].is_null()) text(c["split"], path + ".split");
    one_of(c["status"], path + ".status", kCaseStatuses, "case status (ok, input_error, crashed, timeout)");
    const bool ran = c["status"] == json("ok");
    if (ran) {
      if (!c["error"].is_null()) fail(path + ".error", "must be null for a case that ran");
      one_of(c["verdict"], path + ".verdict", std::vector<std::string>{"ok", "fault"}, "verdict (ok, fault)");
    } else {
      text(c["error"], path + ".error");
      for (const char* k : {"verdict", "primary", "training", "timing", "time_to_verdict_s", "final", "fix"})
        if (c.contains(k) && !c[k].is_null()) fail(path + "." + k, "must be null for a case that did not run");
    }
    count(c["findings"], path + ".findings", 1'000'000'000);
    if (!c["primary"].is_null()) {
      if (c["verdict"] != json("fault")) fail(path + ".primary", "must be null without verdict fault");
      primary(c["primary"], path + ".primary");
    }
    if (!c["expected"].is_null()) expected(c["expected"], path + ".expected");
    if (const json& t = c["training"]; !t.is_null()) {
      object(t, path + ".training", {"iterations", "epochs", "stopped_early"});
      count(t["iterations"], path + ".training.iterations", uint64_t(INT64_MAX));
      count(t["epochs"], path + ".training.epochs", uint64_t(INT64_MAX));
      boolean(t["stopped_early"], path + ".training.stopped_early");
    }
    if (const json& t = c["timing"]; !t.is_null()) {
      object(t, path + ".timing", {"import_s", "train_s", "analysis_s"}, {"fixes_s"});
      for (auto it = t.begin(); it != t.end(); ++it) seconds(it.value(), path + ".timing." + it.key());
    }
    if (!c["time_to_verdict_s"].is_null()) seconds(c["time_to_verdict_s"], path + ".time_to_verdict_s");
    seconds(c["seconds"], path + ".seconds");
    if (c.contains("final") && !c["final"].is_null()) {
      object(c["final"], path + ".final", {"loss", "metric", "metric_name"});
      number_or_null(c["final"]["loss"], path + ".final.loss");
      number_or_null(c["final"]["metric"], path + ".final.metric");
      text(c["final"]["metric_name"], path + ".final.metric_name");
    }
    if (c.contains("fix") && !c["fix"].is_null()) fix(c["fix"], path + ".fix");
    if (c["scores"] != score_record(c))
      fail(path + ".scores", shown(c["scores"]) + " are not the scores of the case's verdict and expectation");
  }

  void options(const json& o) const {
    object(o, "options", {"no_stop", "verify_fixes", "max_trials", "trial_budget_s", "timeout_s", "set"});
    boolean(o["no_stop"], "options.no_stop");
    boolean(o["verify_fixes"], "options.verify_fixes");
    count(o["max_trials"], "options.max_trials", 1'000'000);
    seconds(o["trial_budget_s"], "options.trial_budget_s");
    seconds(o["timeout_s"], "options.timeout_s");
    strings(o["set"], "options.set");
  }

 private:
  const std::string& file_;
};

}  // namespace

void check_summary(const json& s, const std::string& file) {
  const Checker check(file);
  if (!s.is_object() || s.value("tool", json()) != json("deeplocalize") || !s.contains("cases"))
    throw ConfigError(file + ": not a deeplocalize batch summary (written by batch --json)");
  if (!s.contains("summary_version")) check.fail("summary_version", "missing");
  if (s["summary_version"] != json(kSummaryVersion))
    check.fail("summary_version", shown(s["summary_version"]) + " is not " + std::to_string(kSummaryVersion) +
                                      ", the version this deeplocalize writes and merges (re-run the batch with it)");
  check.object(s, "", {"tool", "version", "summary_version", "input", "detector", "shard", "total_cases",
                              "manifest", "options", "cases", "totals", "wall_s"});
  check.text(s["version"], "version");
  check.text(s["input"], "input");
  check.one_of(s["detector"], "detector", an::detector_names(), "detector");
  check.text(s["manifest"], "manifest");
  check.options(s["options"]);
  check.seconds(s["wall_s"], "wall_s");
  const uint64_t total = check.count(s["total_cases"], "total_cases");
  if (total == 0) check.fail("total_cases", "must be at least 1");
  uint64_t shard_index = 0, shard_count = 1;
  if (const json& shard = s["shard"]; !shard.is_null()) {
    check.object(shard, "shard", {"index", "count"});
    shard_count = check.count(shard["count"], "shard.count", uint64_t(INT32_MAX));  // Shard::count is an int
    if (shard_count < 2) check.fail("shard.count", "must be at least 2 (an unsharded run has shard null)");
    shard_index = check.count(shard["index"], "shard.index", shard_count - 1);
  }
  const json& cases = s["cases"];
  if (!cases.is_array()) check.fail("cases", "must be an array of case records");
  if (cases.size() > total)
    check.fail("cases", std::to_string(cases.size()) + " cases, more than total_cases " + std::to_string(total));
  std::set<uint64_t> indices;
  std::set<std::string> names;
  for (size_t k = 0; k < cases.size(); ++k) {
    const std::string path = "cases[" + std::to_string(k) + "]";
    check.record(cases[k], path);
    const uint64_t index = check.count(cases[k]["index"], path + ".index", total - 1);
    if (index % shard_count != shard_index)
      check.fail(path + ".index", std::to_string(index) + " is not in shard " + std::to_string(shard_index) + "/" +
                                      std::to_string(shard_count));
    if (!indices.insert(index).second) check.fail(path + ".index", std::to_string(index) + " appears twice");
    if (!names.insert(cases[k]["name"].get<std::string>()).second)
      check.fail(path + ".name", shown(cases[k]["name"]) + " appears twice");
  }
  const json totals = summary_totals(cases);
  const json& given = s["totals"];
  if (!given.is_object()) check.fail("totals", "must be an object");
  for (auto it = given.begin(); it != given.end(); ++it)
    if (!totals.contains(it.key())) check.fail("totals." + it.key(), "unknown field (or no case gives it)");
  for (auto it = totals.begin(); it != totals.end(); ++it) {
    if (!given.contains(it.key())) check.fail("totals." + it.key(), "missing");
    if (given[it.key()] != it.value())
      check.fail("totals." + it.key(), shown(given[it.key()]) + ", but its cases give " + shown(it.value()));
  }
}

}  // namespace dl::cli
