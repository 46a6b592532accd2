#include "cli/batch_scoring.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "cli/output.h"
#include "converter/errors.h"

namespace dl::cli {
namespace {

using nlohmann::json;

// A field of a record, null when absent (records read back by merge may lack one).
json field(const json& r, const char* key) { return r.is_object() && r.contains(key) ? r[key] : json(); }

bool contains(const json& array, const json& value) {
  return array.is_array() && std::find(array.begin(), array.end(), value) != array.end();
}

json primary_of(const json& report) {
  if (report.value("verdict", "") != "fault" || !report.contains("findings") || report["findings"].empty())
    return nullptr;
  const json& f = report["findings"][0];
  json layer = f.value("layer", json());
  return {{"symptom", f.value("symptom", "")},
          {"stage", f.value("stage", "")},
          {"layer", layer},
          {"root_cause", f.value("root_cause", "unknown")},
          {"message", f.value("message", "")},
          {"recommendation", f.value("recommendation", "")},
          {"epoch", f.value("epoch", json())},
          {"iteration", f.value("iteration", json())}};
}

int64_t count_true(const json& cases, const char* score) {
  int64_t n = 0;
  for (const json& c : cases)
    if (field(field(c, "scores"), score) == json(true)) ++n;
  return n;
}

int64_t count_applicable(const json& cases, const char* score) {
  int64_t n = 0;
  for (const json& c : cases)
    if (!field(field(c, "scores"), score).is_null()) ++n;
  return n;
}

}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

json case_record(const CaseSpec& spec, const CaseOutcome& out) {
  json r = {{"index", spec.index},
            {"name", spec.name},
            {"kind", spec.kind},
            {"source", spec.source},
            {"pair", spec.pair},
            {"split", spec.split.empty() ? json(nullptr) : json(spec.split)},
            {"model", spec.options.model},
            {"data", spec.options.data},
            {"status", out.status},
            {"error", out.status == "ok" ? json(nullptr) : json(out.error)},
            {"verdict", nullptr},
            {"findings", 0},
            {"primary", nullptr},
            {"expected", spec.expected},
            {"training", nullptr},
            {"timing", nullptr},
            {"time_to_verdict_s", nullptr},
            {"seconds", out.seconds}};
  if (out.status == "ok" && out.report.is_object()) {
    const json& rep = out.report;
    r["verdict"] = rep.value("verdict", "ok");
    r["findings"] = rep.contains("findings") ? rep["findings"].size() : 0;
    r["primary"] = primary_of(rep);
    if (rep.contains("training")) {
      const json& t = rep["training"];
      r["training"] = {{"iterations", t.value("iterations", 0)},
                       {"epochs", t.value("epochs", 0)},
                       {"stopped_early", t.value("stopped_early", false)}};
    }
    r["final"] = final_record(rep);
    if (const json fix = fix_record(rep, spec.expected); !fix.is_null()) r["fix"] = fix;
    if (rep.contains("timing")) {
      r["timing"] = rep["timing"];
      r["time_to_verdict_s"] = rep["timing"].value("train_s", 0.0) + rep["timing"].value("analysis_s", 0.0);
    }
  }
  r["scores"] = score_record(r);
  return r;
}

json score_record(const json& r) {
  const bool ran = r.value("status", "") == "ok";
  const bool fault = ran && r.value("verdict", json()) == json("fault");
  const json e = field(r, "expected");
  json s = {{"detected", nullptr}, {"false_alarm", nullptr}, {"localized", nullptr},
            {"root_cause", nullptr}, {"as_expected", false}};
  if (!e.is_object()) {
    s["as_expected"] = ran && !fault;
    return s;
  }
  const json primary = field(r, "primary");
  if (!e.value("fault", false)) {
    s["false_alarm"] = fault;
    s["as_expected"] = ran && !fault;
    return s;
  }
  s["detected"] = fault;
  if (e.contains("nodes") && !e["nodes"].empty()) {
    bool hit = false;
    const json nodes = field(field(primary, "layer"), "nodes");
    if (fault && nodes.is_array())
      for (const json& n : nodes) hit = hit || contains(e["nodes"], n);
    s["localized"] = hit;
  }
  if (e.contains("root_causes") && !e["root_causes"].empty())
    s["root_cause"] = fault && primary.is_object() && contains(e["root_causes"], field(primary, "root_cause"));
  s["as_expected"] = ran && fault && s["localized"] != json(false) && s["root_cause"] != json(false);
  return s;
}

namespace {
json totals_of(const json& cases);
}

json summary_totals(const json& cases) {
  json t = totals_of(cases);
  // Per split (a development and a held-out set scored in one run), in order of first
  // appearance; absent when no case names a split.
  std::vector<std::string> order;
  for (const json& c : cases)
    if (const json sp = field(c, "split"); sp.is_string() && std::find(order.begin(), order.end(), sp) == order.end())
      order.push_back(sp.get<std::string>());
  if (order.empty()) return t;
  json splits = json::object();
  for (const std::string& name : order) {
    json subset = json::array();
    for (const json& c : cases)
      if (field(c, "split") == json(name)) subset.push_back(c);
    splits[name] = totals_of(subset);
  }
  t["splits"] = splits;
  return t;
}

namespace {
json totals_of(const json& cases) {
  json t = {{"cases", cases.size()}};
  int64_t ran = 0, input_errors = 0, crashed = 0, timeouts = 0, faults = 0, with_expectation = 0, as_expected = 0;
  std::vector<double> ttv;
  for (const json& c : cases) {
    const std::string status = c.value("status", "");
    ran += status == "ok";
    input_errors += status == "input_error";
    crashed += status == "crashed";
    timeouts += status == "timeout";
    faults += c.value("verdict", json()) == json("fault");
    with_expectation += field(c, "expected").is_object();
    as_expected += field(field(c, "scores"), "as_expected") == json(true);
    if (field(c, "time_to_verdict_s").is_number()) ttv.push_back(field(c, "time_to_verdict_s").get<double>());
  }
  t["ran"] = ran;
  t["input_errors"] = input_errors;
  t["crashed"] = crashed;
  t["timeouts"] = timeouts;
  t["faults"] = faults;
  t["with_expectation"] = with_expectation;
  t["faulty"] = count_applicable(cases, "detected");
  t["detected"] = count_true(cases, "detected");
  t["localizable"] = count_applicable(cases, "localized");
  t["localized"] = count_true(cases, "localized");
  t["root_cause_cases"] = count_applicable(cases, "root_cause");
  t["root_cause"] = count_true(cases, "root_cause");
  t["non_faulty"] = count_applicable(cases, "false_alarm");
  t["false_alarms"] = count_true(cases, "false_alarm");
  t["as_expected"] = as_expected;
  t["unexpected"] = static_cast<int64_t>(cases.size()) - as_expected;
  t["median_time_to_verdict_s"] = ttv.empty() ? json(nullptr) : json(median(ttv));
  json intervals = json::object();
  for (const auto& [name, k, n] : {std::tuple{"detected", "detected", "faulty"},
                                   std::tuple{"localized", "localized", "localizable"},
                                   std::tuple{"root_cause", "root_cause", "root_cause_cases"},
                                   std::tuple{"false_alarms", "false_alarms", "non_faulty"}}) {
    const long long nn = t[n].get<long long>();
    if (nn == 0) {
      intervals[name] = nullptr;
      continue;
    }
    const auto [lo, hi] = wilson_interval(t[k].get<long long>(), nn);
    intervals[name] = {lo, hi};
  }
  t["intervals"] = intervals;
  if (const json fixes = fix_totals(cases); !fixes.is_null()) t["fixes"] = fixes;
  return t;
}
}  // namespace

std::pair<double, double> wilson_interval(long long k, long long n) {
  if (n <= 0) return {0.0, 1.0};
  const double z = 1.959963984540054, z2 = z * z;  // the normal quantile of 97.5%
  const double p = static_cast<double>(k) / static_cast<double>(n), nd = static_cast<double>(n);
  const double centre = (p + z2 / (2 * nd)) / (1 + z2 / nd);
  const double half = z / (1 + z2 / nd) * std::sqrt(p * (1 - p) / nd + z2 / (4 * nd * nd));
  return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

json make_summary(const json& cases, const SummaryInfo& info) {
  return {{"tool", "deeplocalize"},
          {"version", DL_VERSION_STRING},
          {"summary_version", kSummaryVersion},
          {"input", info.input},
          {"detector", info.detector},
          {"shard", info.shard.count > 1 ? json{{"index", info.shard.index}, {"count", info.shard.count}} : json(nullptr)},
          {"total_cases", info.total_cases},
          {"manifest", info.manifest},
          {"options", info.options},
          {"cases", cases},
          {"totals", summary_totals(cases)},
          {"wall_s", info.wall_s}};
}

int summary_exit_code(const json& totals) {
  if (totals.value("input_errors", int64_t{0}) > 0) return 2;
  return totals.value("unexpected", int64_t{0}) > 0 ? 1 : 0;
}

}  // namespace dl::cli
