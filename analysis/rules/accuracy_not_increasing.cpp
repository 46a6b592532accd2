// Trend (end of training, only when the run fails to learn): the classification accuracy
// stays at chance (the majority-class rate) or does not increase.
#include <algorithm>
#include <cmath>

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an {
namespace {

class AccuracyNotIncreasing : public Rule {
 public:
  std::string id() const override { return "accuracy_not_increasing"; }
  std::string description() const override {
    return "The classification accuracy stays at chance or does not increase";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"min_improvement", 0.05, "only when the run fails to learn (the analyzer's gate: loss improved "
                                      "less than this, or accuracy at chance)"},
            {"chance_margin", 0.02, "accuracy within this of the majority-class rate is chance level"},
            {"min_gain", 0.01, "an accuracy that rose less than this from the first window to the last did "
                               "not increase"},
            {"good_accuracy", 0.9, "a flat accuracy above this is converged, not stuck"},
            {"learning_t", 2.0, "quiet when the loss improved by min_improvement and is still falling at the end "
                                "(fitted slope this many standard errors below zero): the model learns, the "
                                "accuracy lags (e.g. imbalanced classes at a 0.5 threshold)"},
            {"tiny_lr", 1e-5, "learning rates at or below this are too small (root cause learning_rate)"},
            {"tiny_update", 1e-4, "median ||dw||/||w|| per step below this with a small lr: the rate is too small"},
            {"huge_update", 0.1, "median ||dw||/||w|| per step above this: the rate is too large"},
            {"peak_update", 0.5, "a layer's largest ||dw||/||w|| above this (median over layers): the rate is too large"}};
  }

  void check(const AnalysisContext& ctx, std::vector<Finding>& out) const override {
    if (!ctx.final()) return;
    const TraceHeader& h = ctx.header();
    const LearningProgress& p = ctx.progress();
    if (h.metric_name != "accuracy" || !h.metric_higher_is_better || !p.enough || !p.loss_finite) return;
    if (!ctx.failing_to_learn(threshold(ctx, "min_improvement"))) return;
    const bool at_chance = p.chance_metric >= 0 && p.last_metric <= p.chance_metric + threshold(ctx, "chance_margin");
    const double gain = p.last_metric - p.first_metric;
    const bool flat = gain < threshold(ctx, "min_gain") && p.last_metric < threshold(ctx, "good_accuracy");
    if (!at_chance && !flat) return;
    // A loss that fell and still falls steadily: the model is learning, accuracy lags.
    const size_t n = ctx.trace().loss.size();
    const size_t tail = std::min(n, std::max<size_t>(n / 3, 30));
    const ru::LineFit trend = ru::fit_line(ctx.trace().loss, n - tail, n);
    if (p.loss_improvement >= threshold(ctx, "min_improvement") && trend.slope < 0 &&
        -trend.t >= threshold(ctx, "learning_t"))
      return;

    Finding f = ctx.make(*this, sym::accuracy_not_increasing, Stage::kAccuracy, -1, std::nullopt);
    ru::place_at_end(ctx, f);
    f.conclusive = false;
    f.message = "the training accuracy went from " + ru::num(p.first_metric) + " to " + ru::num(p.last_metric) +
                (p.chance_metric >= 0 ? " (chance, always predicting the majority class: " + ru::num(p.chance_metric) + ")"
                                      : std::string());
    const std::vector<Finding> statics =
        ru::findings_of(ctx, {"loss_activation_mismatch", "output_range", "labels_invalid", "bad_initialization",
                              "unnormalized_inputs", "linear_stack"});
    const double lr = ru::learning_rate(h);
    const ru::LrVerdict verdict = ru::judge_learning_rate(ctx, threshold(ctx, "tiny_lr"), threshold(ctx, "tiny_update"),
                                                          threshold(ctx, "huge_update"), threshold(ctx, "peak_update"));
    if (!statics.empty()) {
      const Finding& s = *ru::strongest(statics);
      f.root_cause = s.root_cause;
      f.layer = s.layer;
      f.nodes = s.nodes;
      f.confidence = 0.7;
      f.message += ", as expected from " + s.symptom;
      f.recommendation = s.recommendation;
    } else if (verdict == ru::LrVerdict::kTooSmall) {
      f.root_cause = RootCause::kLearningRate;
      f.confidence = 0.7;
      f.message += "; the learning rate " + ru::num(lr) + " barely moves the weights";
      f.recommendation = "increase the learning rate (e.g. --lr " + ru::num(lr * 100) + ")";
    } else if (verdict == ru::LrVerdict::kTooLarge) {
      f.root_cause = RootCause::kLearningRate;
      f.confidence = 0.7;
      f.message += "; the learning rate " + ru::num(lr) + " makes each step rewrite the weights";
      f.recommendation = "lower the learning rate tenfold (--lr " + ru::num(lr / 10) + ")";
    } else {
      f.root_cause = RootCause::kUnknown;
      f.confidence = 0.4;
      f.recommendation = "check that the labels match the rows and are learnable from the features, and look at "
                         "the other findings for the layer that stops the signal";
    }
    f.evidence = {{"first_accuracy", p.first_metric}, {"last_accuracy", p.last_metric},
                  {"chance_accuracy", p.chance_metric}, {"accuracy_gain", gain}, {"at_chance", at_chance},
                  {"learning_rate", lr}};
    if (auto r = ru::median_update_ratio(ctx)) f.evidence["median_update_ratio"] = *r;
    out.push_back(std::move(f));
  }
};

}  // namespace

std::unique_ptr<Rule> make_rule_accuracy_not_increasing() { return std::make_unique<AccuracyNotIncreasing>(); }

}  // namespace dl::an
