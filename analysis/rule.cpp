#include "analysis/rule.h"

#include <cmath>
#include <cstdlib>

#include "analysis/context.h"
#include "converter/errors.h"

namespace dl::an {

#define DL_RULE(stem) std::unique_ptr<Rule> make_rule_##stem();
#include "analysis/rules/rule_list.def"
#undef DL_RULE

const std::vector<std::unique_ptr<Rule>>& all_rules() {
  static const std::vector<std::unique_ptr<Rule>> rules = [] {
    std::vector<std::unique_ptr<Rule>> v;
#define DL_RULE(stem) v.push_back(make_rule_##stem());
#include "analysis/rules/rule_list.def"
#undef DL_RULE
    return v;
  }();
  return rules;
}

void Settings::set(const std::string& assignment) {
  const auto eq = assignment.find('=');
  const auto dot = assignment.find('.');
  if (eq == std::string::npos || dot == std::string::npos || dot > eq)
    throw ConfigError("--set '" + assignment + "': expected rule.key=value");
  const std::string value = assignment.substr(eq + 1);
  char* end = nullptr;
  double v = std::strtod(value.c_str(), &end);
  // NaN would fail every comparison and so silently disable the check; Inf is no bound.
  if (value.empty() || *end != '\0' || !std::isfinite(v))
    throw ConfigError("--set '" + assignment + "': '" + value + "' is not a finite number");
  set(assignment.substr(0, dot), assignment.substr(dot + 1, eq - dot - 1), v);
}

void Settings::set(const std::string& rule, const std::string& key, double value) {
  std::string rules;
  for (const auto& r : all_rules()) {
    rules += (rules.empty() ? "" : ", ") + r->id();
    if (r->id() != rule) continue;
    std::string keys;
    for (const Threshold& t : r->thresholds()) {
      if (t.key == key) {
        overrides_[rule + "." + key] = value;
        return;
      }
      keys += (keys.empty() ? "" : ", ") + t.key;
    }
    throw ConfigError("--set " + rule + "." + key + ": rule '" + rule + "' has no threshold '" + key +
                      "' (it has: " + (keys.empty() ? "none" : keys) + ")");
  }
  throw ConfigError("--set " + rule + "." + key + ": no rule '" + rule + "' (rules: " + rules + ")");
}

double Settings::get(const std::string& rule, const Threshold& t) const {
  auto it = overrides_.find(rule + "." + t.key);
  return it == overrides_.end() ? t.value : it->second;
}

double Rule::threshold(const AnalysisContext& ctx, const std::string& key) const {
  for (const Threshold& t : thresholds())
    if (t.key == key) return ctx.settings().get(id(), t);
  throw InternalError("rule '" + id() + "' reads undeclared threshold '" + key + "'");
}

}  // namespace dl::an
