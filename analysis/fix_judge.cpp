// Verified fixes: judging a trial against the faulty run, ranking the outcomes and their
// JSON (analysis/fixes.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "analysis/fixes.h"
#include "analysis/repair_kinds.h"

namespace dl::an {
namespace {

// -1 when a is clearly better than b (by the metric, else by a comparable loss), +1 when
// clearly worse, 0 when neither is (then the evidence's order decides).
int compare_after(const FixOutcome& a, const FixOutcome& b, bool higher_is_better, bool by_metric) {
  const double ma = a.after.metric, mb = b.after.metric;
  if (by_metric && std::isfinite(ma) != std::isfinite(mb)) return std::isfinite(ma) ? -1 : 1;
  if (by_metric && std::isfinite(ma)) {
    // Accuracy-like metrics: an absolute margin; error metrics (mae): a relative one.
    const double d = higher_is_better ? ma - mb : mb - ma;
    const double margin = higher_is_better ? 0.01 : 0.05 * std::max(std::fabs(ma), std::fabs(mb));
    if (d > margin) return -1;
    if (d < -margin) return 1;
  }
  const double la = a.after.loss, lb = b.after.loss;
  // A comparable loss decides when it differs by 10% and by more than 1e-3 (two losses
  // near 0, e.g. 1e-8 and 2e-7 at 100% accuracy, are a tie).
  if (a.loss_comparable && b.loss_comparable && std::isfinite(la) && std::isfinite(lb)) {
    if (la < 0.9 * lb && lb - la > 1e-3) return -1;
    if (lb < 0.9 * la && la - lb > 1e-3) return 1;
  }
  return 0;
}

std::string fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

double binomial_tail(int64_t n, int64_t k, double p) {
  if (k <= 0) return 1.0;
  if (k > n) return 0.0;
  if (p <= 0) return 0.0;
  if (p >= 1) return 1.0;
  // Terms from the largest down, in logs (n can be thousands of rows).
  const double lp = std::log(p), lq = std::log1p(-p), lnf = std::lgamma(double(n) + 1);
  double sum = 0;
  for (int64_t i = k; i <= n; ++i) {
    const double term = std::exp(lnf - std::lgamma(double(i) + 1) - std::lgamma(double(n - i) + 1) + double(i) * lp +
                                 double(n - i) * lq);
    sum += term;
    if (term < 1e-18 * sum && double(i) > double(n) * p) break;  // the rest is negligible
  }
  return std::min(1.0, sum);
}

TrialJudgement judge_trial(const Diagnosis& faulty, const FixMetrics& before, const Diagnosis& trial,
                           const FixMetrics& after, bool higher_is_better, bool completed, bool loss_comparable,
                           const VerifyMargins& m, double constant_share, const HeldOutAccuracy& held) {
  if (!completed) return {false, "cut short by the trial budget", TrialStatus::kCutShort};
  const std::string symptom = faulty.findings.empty() ? "" : faulty.findings.front().symptom;
  const int layer = faulty.findings.empty() ? -1 : faulty.findings.front().layer;
  std::set<std::string> known;
  for (const Finding& f : faulty.findings) known.insert(f.symptom);
  // The symptom remains where it was: a layer-local symptom seen again at another layer
  // (dead units further up once the output's dead ReLU is replaced) is a new finding, and
  // the trial can be built on.
  for (const Finding& f : trial.findings) {
    if (f.symptom == symptom && (layer < 0 || f.layer < 0 || f.layer == layer))
      return {false, "symptom remains: " + symptom, TrialStatus::kSymptomRemains};
  }
  // Any conclusive fault left fails the trial: a new one, or another of the faulty run's
  // (the primary symptom gone, the run still failing: random labels trained with a tenth
  // of the learning rate stop looking like random labels, yet learn nothing). Either way
  // the repairs for it can be stacked on this trial.
  for (const Finding& f : trial.findings)
    if (trial.fault && f.conclusive && f.consequence_of < 0)
      return {false, (known.count(f.symptom) ? "still faulty: " : "new fault: ") + f.symptom,
              TrialStatus::kNewFault};
  if (!std::isfinite(after.loss) && !std::isnan(after.loss)) return {false, "loss is infinite", TrialStatus::kInfiniteLoss};
  // Quiet rules are not enough: a trial that only slows training down (random labels at a
  // tenth of the rate) ends where a constant prediction would, and fixes nothing.
  if (constant_share >= m.learned_nothing)
    return {false, "learned nothing: the loss ends at " + std::to_string(int(100 * constant_share + 0.5)) +
                       "% of a constant prediction's", TrialStatus::kNoImprovement};
  // Rows the trial did not train on: an accuracy no better than always answering the
  // majority class means the repair only memorised its training rows.
  if (held.rows > 0 && std::isfinite(held.accuracy) && std::isfinite(held.chance)) {
    const auto right = static_cast<int64_t>(std::llround(held.accuracy * double(held.rows)));
    const double pv = binomial_tail(held.rows, right, held.chance);
    if (pv >= m.held_out_p)
      return {false, "learned nothing that holds on rows it did not train on: accuracy " + fixed(held.accuracy, 2) +
                         " on " + std::to_string(held.rows) + " held-out rows, the majority class's share " +
                         fixed(held.chance, 2) + " (binomial p = " + fixed(pv, 2) + ")",
              TrialStatus::kNoImprovement};
  }
  if (!std::isfinite(before.loss) && std::isfinite(after.loss)) return {true, "verified", TrialStatus::kVerified};
  const bool loss_known = loss_comparable && std::isfinite(before.loss) && std::isfinite(after.loss);
  const bool metric_known = std::isfinite(before.metric) && std::isfinite(after.metric);
  const double dmetric = metric_known ? (higher_is_better ? after.metric - before.metric : before.metric - after.metric) : 0;
  const double rel_loss = loss_known && before.loss > 0 ? (before.loss - after.loss) / before.loss : 0;
  const bool loss_better = loss_known && rel_loss >= m.loss;
  const bool metric_better = metric_known && dmetric >= m.metric;
  const bool metric_worse = metric_known && dmetric <= -m.metric;
  const bool loss_worse = loss_known && rel_loss <= -m.loss;
  // A change of loss that changes the metric too (binary cross-entropy's accuracy on
  // real-valued targets becomes mse's mae) leaves no common measure with the faulty run:
  // then the trial's own diagnosis, healthy after the symptom is gone, is the evidence.
  if (!loss_comparable && !metric_known && !trial.fault)
    return {true, "verified (no common measure after the change of loss; no fault found)", TrialStatus::kVerified};
  if (higher_is_better) {
    if ((loss_better && !metric_worse) || (metric_better && !loss_worse)) return {true, "verified", TrialStatus::kVerified};
  } else if (metric_better || (loss_better && !metric_worse)) {  // a regression metric (mae) is a loss too
    return {true, "verified", TrialStatus::kVerified};
  }
  return {false, "no clear improvement", TrialStatus::kNoImprovement};
}

void rank_fixes(std::vector<FixOutcome>& v, bool higher_is_better, bool by_metric) {
  // Verified first; among them the clearly better result; otherwise the evidence's order.
  // (A pairwise "clearly better" is not transitive, so sort by the order first and let a
  // stable insertion pass move only clear winners ahead.)
  std::stable_sort(v.begin(), v.end(), [](const FixOutcome& a, const FixOutcome& b) {
    if (a.verified != b.verified) return a.verified;
    return a.order < b.order;
  });
  for (size_t i = 1; i < v.size(); ++i) {
    size_t j = i;
    while (j > 0 && v[j].verified == v[j - 1].verified && compare_after(v[j], v[j - 1], higher_is_better, by_metric) < 0) {
      std::swap(v[j], v[j - 1]);
      --j;
    }
  }
}

nlohmann::json to_json(const FixOutcome& f) {
  using nlohmann::json;
  auto num = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
  auto metrics = [&](const FixMetrics& m) {
    json j = {{"loss", num(m.loss)}, {"accuracy", f.metric_name == "accuracy" ? num(m.metric) : json(nullptr)}};
    if (f.metric_name != "accuracy" && !f.metric_name.empty()) j[f.metric_name] = num(m.metric);
    return j;
  };
  json actions = json::array();
  for (const FixAction& a : f.actions) actions.push_back(to_json(a));
  json curve = json::array();
  for (double v : f.epoch_loss) curve.push_back(num(v));
  json j = {{"change", f.change},
            {"root_cause", root_cause_name(f.root_cause)},
            {"verified", f.verified},
            {"reason", f.reason},
            {"before", metrics(f.before)},
            {"after", metrics(f.after)},
            {"seconds", f.seconds},
            {"iterations", f.iterations},
            {"actions", actions},
            {"after_loss_curve", curve},
            {"remaining", f.remaining}};
  if (f.targets_scaled) j["after_train_units"] = metrics(f.after_train_units);
  if (!f.python_code.empty()) j["python_code"] = f.python_code;
  if (f.held_out.rows > 0)
    j["held_out"] = {{"rows", f.held_out.rows}, {"accuracy", num(f.held_out.accuracy)}, {"majority_share", num(f.held_out.chance)}};
  return j;
}

}  // namespace dl::an
