// Running one rule on a synthetic trace, shared by the rule tests (rules_*_test.cpp).
#pragma once

#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "analysis/context.h"
#include "analysis/rule.h"
#include "trace_builder.h"

namespace dl::test::rules {

using an::Finding;
using an::ProbeKind;
using an::RootCause;
using an::Stage;
using an::Trace;
using dl::test::TraceBuilder;

// The findings of the rule `rule` alone (`final`: judged as at the end of training).
inline std::vector<an::Finding> run(const std::string& rule, const an::Trace& t, bool final = true,
                                    const an::Settings& settings = an::Settings()) {
  an::AnalysisContext ctx(t, settings, final);
  std::vector<an::Finding> out;
  for (const auto& r : an::all_rules())
    if (r->id() == rule) r->check(ctx, out);
  return out;
}

// Settings with --set overrides ("rule.key=value").
inline an::Settings with(std::initializer_list<const char*> assignments) {
  an::Settings s;
  for (const char* a : assignments) s.set(a);
  return s;
}
inline an::Settings with(const std::string& assignment) { return with({assignment.c_str()}); }

// The findings (or warnings) in `all` of the rules named in `ids` (other rules may be
// registered too).
inline std::vector<an::Finding> of_rules(const std::vector<an::Finding>& all, const std::set<std::string>& ids) {
  std::vector<an::Finding> out;
  for (const an::Finding& f : all)
    if (ids.count(f.rule)) out.push_back(f);
  return out;
}

// The first `n` iterations of `t`, as the online analysis sees them while training (no
// epoch recorded yet).
inline an::Trace head(const an::Trace& t, size_t n) {
  an::Trace h = t;
  h.loss.resize(n);
  h.metric.resize(n);
  size_t kept = 0;
  while (kept < h.records.size() && h.records[kept].iteration < static_cast<int64_t>(n)) ++kept;
  h.records.resize(kept);
  h.stats.resize(kept * h.header.probes.size());
  h.epochs.clear();
  return h;
}

// The healthy classifier every rule test starts from: relu 16, relu 8, softmax 3, 200 iterations.
inline an::Trace healthy(TraceBuilder& b) {
  return b.dense("relu", 16).dense("relu", 8).dense("softmax", 3).build(200);
}

}  // namespace dl::test::rules
