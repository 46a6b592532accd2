// Verified fixes (issue 9), the analysis side: which repairs to try for a diagnosis, in
// which order, and whether a trial run shows that a repair works. Trials themselves run in
// cli/ (fix_trials); this part is pure and testable with synthetic traces.
//
// Candidates come from the primary finding's root cause first (its evidence orders them:
// e.g. NaN or exploding updates lower the learning rate, a flat loss raises it), then from
// the other findings' root causes, then from general remedies for the kind of symptom.
// docs/fixes.md lists every candidate and the verification rule.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "analysis/finding.h"
#include "analysis/trace.h"

namespace dl::an {

// A repair to try: one or more actions that belong together (e.g. a sigmoid output with
// binary cross-entropy), and the root cause it would confirm.
struct FixCandidate {
  std::vector<FixAction> actions;
  RootCause root_cause = RootCause::kUnknown;
  std::string why;  // which evidence proposed it, for --verbose and the docs
};

// Ordered, de-duplicated candidates for a faulty diagnosis (none for a healthy one).
// `applied` are actions already in effect (a second round stacks on a first fix): the
// candidates never repeat or undo them.
std::vector<FixCandidate> propose_fixes(const Diagnosis& diagnosis, const Trace& trace,
                                        const std::vector<FixAction>& applied = {});

// Thresholds of verification (`--set fixes.loss_margin=...`, `fixes.metric_margin=...`).
struct VerifyMargins {
  double loss = 0.10;    // relative: the loss must fall by at least 10% ...
  double metric = 0.02;  // ... or the metric improve by at least this much (absolute)
  // A trial whose own run ends at or above this share of its constant prediction's loss
  // learned nothing, whatever its findings say (healthy runs of the suite's dev split end
  // below 0.6 of it, failing ones at 0.97 and above: docs/calibration.md).
  double learned_nothing = 0.9;
  // ... unless its accuracy went at least this share of the way from chance to 1 (it learned
  // to separate the classes; its loss is still high from confident mistakes).
  double separated = 0.5;
  // A trial whose accuracy on the rows it did not train on is not above the majority
  // class's share at this significance (one-sided binomial test) learned nothing that
  // holds there: it memorised its training rows (shuffled labels "fixed" by training longer).
  double held_out_p = 0.01;
};

// P(X >= k) for X ~ Binomial(n, p): the one-sided test of HeldOutAccuracy.
double binomial_tail(int64_t n, int64_t k, double p);

struct TrialJudgement {
  bool verified = false;
  std::string reason;  // "verified", or why not ("symptom remains: dead_relu", ...)
  TrialStatus status = TrialStatus::kNoImprovement;
};

// A trial verifies a fix when (1) the primary symptom of the faulty run is gone, (2) no
// conclusive fault appears that the faulty run did not have, and (3) the run improves on
// the faulty one: a finite loss where it was NaN/Inf, or the loss falls by the relative
// margin without the metric falling by more than its margin, or the metric improves by
// its margin without the loss rising by more than the relative margin (a loss that is
// not comparable, e.g. after a change of loss function, counts as unchanged).
// `completed` is false when the trial was cut short by the time budget; `loss_comparable`
// is false when the trial trains with another loss function. `constant_share`: the trial's
// last loss over its constant prediction's (LearningProgress; NaN when unknown).
TrialJudgement judge_trial(const Diagnosis& faulty, const FixMetrics& before, const Diagnosis& trial,
                           const FixMetrics& after, bool higher_is_better, bool completed, bool loss_comparable,
                           const VerifyMargins& margins = {},
                           double constant_share = std::numeric_limits<double>::quiet_NaN(),
                           const HeldOutAccuracy& held_out = {});

// What the verified repairs of `f.fixes` (ranked) say about the finding's layer: the best
// verified repair that changes only layers (analysis/repair_kinds.h: is_layer_repair) or
// only the training configuration and the data decides the status (RepairLocalization);
// the ranking scores each layer by the verified layer-only repairs that edit it.
// kNotTried when no repairs were tried. Docs: docs/fixes.md, "Localization by repair".
RepairLocalization localize_by_repair(const Finding& f);
nlohmann::json to_json(const RepairLocalization& r, const std::vector<FixOutcome>& fixes);
// The finding's repair_localization in words for the text and HTML reports (repairs named
// by their number in `fixes`, from 1); "" when there is nothing to say.
std::string describe_repair_localization(const Finding& f);

// Ranks outcomes: verified first, then by improvement (metric gain, then loss ratio; the
// loss alone when `by_metric` is false: a metric that does not measure the task, such as
// Keras' accuracy on multi-label targets), then the evidence's order; stable for ties.
void rank_fixes(std::vector<FixOutcome>& outcomes, bool higher_is_better, bool by_metric = true);


}  // namespace dl::an
