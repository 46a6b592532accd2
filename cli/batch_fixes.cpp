// Scoring verified fixes over a batch (batch --verify-fixes): per case, the best repair
// tried and whether it confirms an accepted root cause; over the batch, how many faults got
// a verified fix and how close the repaired model comes to the case's fixed version.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cli/batch_scoring.h"
#include "io/text_escape.h"

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
  // The extra wall time the trials took (timing.fixes_s); older reports: their sum.
  double seconds = number(field(field(report, "timing"), "fixes_s"));
  if (!std::isfinite(seconds)) {
    seconds = 0;
    for (const json& f : fixes) seconds += std::max(0.0, number(field(f, "seconds")));
  }
  json r = {{"tried", fixes.size()}, {"verified", false}, {"seconds", seconds}, {"change", nullptr},
            {"root_cause", nullptr}, {"root_cause_matches", nullptr}, {"after", nullptr}};
  // Whether a repair confirms the diagnosis as first made (before a verified repair of
  // another cause corrected it): its root cause, and its layer (repair_localization).
  const json evidence = field(findings[0], "evidence");
  const json guess = field(evidence, "root_cause_before_fixes").is_string() ? evidence["root_cause_before_fixes"]
                                                                            : field(findings[0], "root_cause");
  bool guess_confirmed = false;
  for (const json& f : fixes)
    guess_confirmed = guess_confirmed || (field(f, "verified") == json(true) && field(f, "root_cause") == guess);
  r["first_root_cause"] = guess.is_string() ? guess : json(nullptr);
  r["first_root_cause_confirmed"] = guess_confirmed;
  const json loc = field(field(findings[0], "repair_localization"), "status");
  r["localization"] = loc.is_string() ? loc : json(nullptr);
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

namespace {

// The final metric of the case's fixed version (same pair), null when there is none.
json goal_of(const json& cases, const json& c) {
  const json pair = field(c, "pair");
  if (!pair.is_string() || pair.get<std::string>().empty()) return nullptr;
  for (const json& other : cases)
    if (field(other, "pair") == pair && field(other, "kind") == json("fixed") && field(other, "status") == json("ok") &&
        std::isfinite(number(field(field(other, "final"), "metric"))))
      return other["final"];
  return nullptr;
}

// Within 10% of the goal's metric, or better.
json close_to_goal(const json& goal, const json& fix) {
  if (!goal.is_object() || field(fix, "verified") != json(true)) return nullptr;
  const double want = number(field(goal, "metric")), got = number(field(field(fix, "after"), "metric"));
  const bool higher = field(goal, "metric_name") == json("accuracy");
  return std::isfinite(got) && (higher ? got >= want - 0.1 * std::fabs(want) : got <= want + 0.1 * std::fabs(want));
}

std::string cell(const json& v, int digits = 3) {
  if (!v.is_number()) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v.get<double>());
  return buf;
}

}  // namespace

json fix_totals(const json& cases) {
  int64_t tried = 0, verified = 0, matches = 0, compared = 0, close = 0, guess = 0, with_layer = 0, layer = 0;
  std::vector<double> seconds;
  for (const json& c : cases) {
    const json fix = field(c, "fix");
    if (!fix.is_object() || field(field(c, "scores"), "detected") != json(true)) continue;
    ++tried;
    seconds.push_back(number(field(fix, "seconds")));
    guess += field(fix, "first_root_cause_confirmed") == json(true);
    if (field(field(c, "primary"), "layer").is_object()) {
      ++with_layer;
      layer += field(fix, "localization") == json("confirmed");
    }
    if (field(fix, "verified") != json(true)) continue;
    ++verified;
    matches += field(fix, "root_cause_matches") == json(true);
    const json near = close_to_goal(goal_of(cases, c), fix);
    if (near.is_null()) continue;
    ++compared;
    close += near == json(true);
  }
  if (tried == 0) return nullptr;
  return {{"faults_with_trials", tried},
          {"verified", verified},
          {"root_cause_matches", matches},
          {"first_root_cause_confirmed", guess},
          {"primary_with_layer", with_layer},
          {"layer_confirmed", layer},
          {"compared_with_fixed", compared},
          {"within_10pct_of_fixed", close},
          {"median_extra_s", seconds.empty() ? json(nullptr) : json(median(seconds))}};
}

std::string fixes_markdown(const json& cases) {
  std::string out = "| case | verified fix | root cause | repaired | fixed version | within 10% | trials | extra s |\n";
  out += "|---|---|---|--:|--:|:-:|--:|--:|\n";
  bool any = false;
  for (const json& c : cases) {
    const json fix = field(c, "fix");
    if (!fix.is_object() || field(field(c, "scores"), "detected") != json(true)) continue;
    any = true;
    const json goal = goal_of(cases, c), near = close_to_goal(goal, fix);
    const bool ok = field(fix, "verified") == json(true);
    const std::string metric = goal.is_object() ? field(goal, "metric_name").get<std::string>() + " " : "";
    std::string change = io::visible(ok ? field(fix, "change").get<std::string>() : "none");
    std::string name = io::visible(field(c, "name").get<std::string>());  // from the manifest: untrusted
    for (std::string* s : {&change, &name}) {
      std::string cell;
      for (char ch : *s) {
        if (ch == '|') cell += '/';
        else if (ch == '<') cell += "&lt;";
        else if (ch == '>') cell += "&gt;";
        else cell += ch;
      }
      *s = cell;
    }
    out += "| " + name + " | " + change + " | " +
           (ok ? field(fix, "root_cause").get<std::string>() +
                     (field(fix, "root_cause_matches") == json(true) ? " \u2705" : field(fix, "root_cause_matches") == json(false) ? " \u274C" : "")
               : "") +
           " | " + (ok ? metric + cell(field(field(fix, "after"), "metric")) : "") + " | " +
           (goal.is_object() ? metric + cell(field(goal, "metric")) : "") + " | " +
           (near.is_null() ? "" : near == json(true) ? "\u2705" : "\u274C") + " | " + cell(field(fix, "tried")) + " | " +
           cell(field(fix, "seconds"), 2) + " |\n";
  }
  return any ? out : "";
}

}  // namespace dl::cli
