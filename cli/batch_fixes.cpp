// Scoring verified fixes over a batch (batch --verify-fixes): per case, the best repair
// tried and whether it confirms an accepted root cause; over the batch, how many faults got
// a verified fix and how close the repaired model comes to the case's fixed version.
#include <algorithm>
#include <cmath>

#include "cli/batch_scoring.h"

namespace dl::cli {
namespace {

using nlohmann::json;

json field(const json& r, const char* key) { return r.is_object() && r.contains(key) ? r[key] : json(); }

double number(const json& v) { return v.is_number() ? v.get<double>() : std::nan(""); }

// The metric of a run's last epoch, as the report lists it ("accuracy" holds the metric).
json final_of(const json& report) {
  const json t = field(report, "training");
  const json loss = field(t, "loss"), metric = field(t, "accuracy");
  return {{"loss", loss.is_array() && !loss.empty() ? loss.back() : json(nullptr)},
          {"metric", metric.is_array() && !metric.empty() ? metric.back() : json(nullptr)},
          {"metric_name", field(t, "metric").is_string() ? field(t, "metric") : json("accuracy")}};
}

}  // namespace

json final_record(const json& report) { return final_of(report); }

json fix_record(const json& report, const json& expected) {
  const json findings = field(report, "findings");
  if (!findings.is_array() || findings.empty() || !field(findings[0], "fixes").is_array()) return nullptr;
  const json fixes = findings[0]["fixes"];
  double seconds = 0;
  for (const json& f : fixes) seconds += std::max(0.0, number(field(f, "seconds")));
  json r = {{"tried", fixes.size()}, {"verified", false}, {"seconds", seconds}, {"change", nullptr},
            {"root_cause", nullptr}, {"root_cause_matches", nullptr}, {"after", nullptr}};
  if (fixes.empty() || field(fixes[0], "verified") != json(true)) return r;
  const json& best = fixes[0];
  const std::string name = final_of(report)["metric_name"].get<std::string>();
  r["verified"] = true;
  r["change"] = field(best, "change");
  r["root_cause"] = field(best, "root_cause");
  // Metrics in the units the repaired model trained in (scaled targets stay scaled), so
  // that they compare with a fixed version that scales its data too.
  const json after = field(best, "after_train_units").is_object() ? best["after_train_units"] : field(best, "after");
  r["after"] = {{"loss", field(after, "loss")}, {"metric", name == "accuracy" ? field(after, "accuracy") : field(after, name.c_str())}};
  const json causes = field(expected, "root_causes");
  if (causes.is_array() && !causes.empty())
    r["root_cause_matches"] = std::find(causes.begin(), causes.end(), best["root_cause"]) != causes.end();
  return r;
}

json fix_totals(const json& cases) {
  int tried = 0, verified = 0, matches = 0, compared = 0, close = 0;
  std::vector<double> seconds;
  for (const json& c : cases) {
    const json fix = field(c, "fix");
    if (!fix.is_object() || field(field(c, "scores"), "detected") != json(true)) continue;
    ++tried;
    seconds.push_back(number(field(fix, "seconds")));
    if (field(fix, "verified") != json(true)) continue;
    ++verified;
    matches += field(fix, "root_cause_matches") == json(true);
    // The fixed version of the same post: its final metric is the goal.
    const std::string pair = field(c, "pair").is_string() ? c["pair"].get<std::string>() : "";
    if (pair.empty()) continue;
    for (const json& other : cases) {
      if (field(other, "pair") != json(pair) || field(other, "kind") != json("fixed") ||
          field(other, "status") != json("ok"))
        continue;
      const json goal = field(other, "final");
      const double want = number(field(goal, "metric")), got = number(field(field(fix, "after"), "metric"));
      if (!std::isfinite(want)) break;
      ++compared;
      const bool higher = field(goal, "metric_name") == json("accuracy");
      const bool ok = higher ? got >= want - 0.1 * std::fabs(want) : got <= want + 0.1 * std::fabs(want);
      close += std::isfinite(got) && ok;
      break;
    }
  }
  if (tried == 0) return nullptr;
  return {{"faults_with_trials", tried},
          {"verified", verified},
          {"root_cause_matches", matches},
          {"compared_with_fixed", compared},
          {"within_10pct_of_fixed", close},
          {"median_trial_s", seconds.empty() ? json(nullptr) : json(median(seconds))}};
}

}  // namespace dl::cli
