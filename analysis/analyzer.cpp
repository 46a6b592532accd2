#include "analysis/analyzer.h"

#include <algorithm>
#include <set>

#include "analysis/context.h"
#include "analysis/symptoms.h"

namespace dl::an {
namespace {

int stage_rank(Stage s) { return static_cast<int>(s); }

bool numerical(const Finding& f) { return symptom_info(f.symptom).numerical; }

}  // namespace

void order_findings(std::vector<Finding>& findings) {
  // A confirmed upstream condition (unscaled data, too wide initial weights) is the first
  // cause of the dynamic symptoms that follow it (symptom_list.def), unless a conclusive
  // finding already names its root cause (that one says more: it has the layer) or a
  // conclusive static finding stands (a certain fault of the model, before any dynamics).
  std::set<RootCause> named;
  bool static_fault = false;
  for (const Finding& f : findings) {
    if (!f.conclusive || symptom_info(f.symptom).upstream) continue;
    named.insert(f.root_cause);
    static_fault = static_fault || f.stage == Stage::kStatic;
  }
  const auto promoted = [&](const Finding& f) {
    return !static_fault && symptom_info(f.symptom).upstream && !named.count(f.root_cause);
  };
  std::stable_sort(findings.begin(), findings.end(), [&](const Finding& a, const Finding& b) {
    const bool ua = promoted(a), ub = promoted(b);
    if (ua != ub) return ua;
    if (a.conclusive != b.conclusive) return a.conclusive;
    const bool sa = a.stage == Stage::kStatic, sb = b.stage == Stage::kStatic;
    if (sa != sb) return sa;
    if (a.iteration != b.iteration) return a.iteration < b.iteration;
    if (stage_rank(a.stage) != stage_rank(b.stage)) return stage_rank(a.stage) < stage_rank(b.stage);
    if (a.layer != b.layer) return a.layer < b.layer;
    return a.confidence > b.confidence;
  });
  int first_numerical = -1;
  for (size_t k = 0; k < findings.size(); ++k) {
    Finding& f = findings[k];
    if (!numerical(f)) continue;
    if (first_numerical < 0) {
      first_numerical = static_cast<int>(k);
    } else if (f.iteration >= findings[static_cast<size_t>(first_numerical)].iteration) {
      f.consequence_of = first_numerical;
    }
  }
}

Diagnosis analyze(const Trace& trace, const Settings& settings, bool final) {
  AnalysisContext ctx(trace, settings, final);
  std::vector<Finding> all;
  for (const auto& rule : all_rules()) rule->check(ctx, all);
  Diagnosis d;
  std::vector<Finding> confirmed;
  bool any_conclusive = false;
  for (const Finding& f : all) any_conclusive = any_conclusive || f.conclusive;
  // Unconfirmed (non-conclusive) findings count only when the run shows a fault
  // anyway, or at the end when the model is failing to learn.
  const bool confirmed_by_run = any_conclusive || (final && ctx.failing_to_learn(0.05));
  for (Finding& f : all) {
    if (f.conclusive || confirmed_by_run)
      confirmed.push_back(std::move(f));
    else
      d.warnings.push_back(std::move(f));
  }
  order_findings(confirmed);
  d.findings = std::move(confirmed);
  d.fault = !d.findings.empty();
  return d;
}

}  // namespace dl::an
