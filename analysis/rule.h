// Rules: one file each (analysis/rules/<id>.cpp, one line in rules/rule_list.def). A
// rule declares its named thresholds with defaults and a reason, reads the trace and
// emits findings with evidence and a recommendation. Rules ask op traits (in the
// trace's probe descriptions), never op types.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/finding.h"
#include "analysis/trace.h"

namespace dl::an {

struct Threshold {
  std::string key;
  double value;
  std::string reason;  // one line: why this default
};

// Threshold values: the rules' defaults, overridden by `--set rule.key=value`.
class Settings {
 public:
  // Throws ConfigError when the rule or key is unknown or the value not a number.
  void set(const std::string& assignment);
  void set(const std::string& rule, const std::string& key, double value);
  double get(const std::string& rule, const Threshold& t) const;
  const std::map<std::string, double>& overrides() const { return overrides_; }

 private:
  std::map<std::string, double> overrides_;  // "rule.key" -> value
};

class AnalysisContext;

class Rule {
 public:
  virtual ~Rule() = default;
  virtual std::string id() const = 0;
  virtual std::string description() const = 0;
  virtual std::vector<Threshold> thresholds() const = 0;
  virtual void check(const AnalysisContext& ctx, std::vector<Finding>& out) const = 0;

 protected:
  double threshold(const AnalysisContext& ctx, const std::string& key) const;
};

// All rules in rule_list.def order.
const std::vector<std::unique_ptr<Rule>>& all_rules();

}  // namespace dl::an
