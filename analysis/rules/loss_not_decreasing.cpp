// Trend (end of training, only when the run fails to learn): the loss does not decrease.
// The root cause comes from the evidence: a static mismatch, the learning rate (tiny or
// huge updates), training length (still falling steadily), the labels (stuck at the loss of
// the class frequencies), else unknown.
#include <algorithm>
#include <cmath>
#include <optional>

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an {
namespace {

class LossNotDecreasing : public Rule {
 public:
  std::string id() const override { return "loss_not_decreasing"; }
  std::string description() const override { return "The training loss does not decrease over the run"; }
  std::vector<Threshold> thresholds() const override {
    return {{"min_improvement", 0.05, "a run whose loss fell less than 5% from its first window to its last has "
                                      "not learned (the analyzer's failing-to-learn gate)"},
            {"tiny_lr", 1e-5, "learning rates at or below this barely move weights of order 0.1 in any realistic run"},
            {"tiny_update", 1e-4, "median ||dw||/||w|| per step below this (healthy runs are around 1e-3), with a "
                                  "learning rate under a tenth of the optimizer's default: the rate is too small"},
            {"huge_update", 0.1, "median ||dw||/||w|| per step above this: each step rewrites a tenth of the "
                                 "weights, so the loss cannot settle"},
            {"peak_update", 0.5, "a layer's largest ||dw||/||w|| above this (the median over layers): some step "
                                 "rewrote half the weights, the learning rate is too large even if nothing moves later"},
            {"chance_fraction", 0.95,
             "a last loss at or above this share of the chance loss (the entropy of the class frequencies) means "
             "nothing was learned from the features: with a usable learning rate and no static or unit fault, the "
             "labels do not belong to the rows"},
            {"constant_fraction", 0.97, "a last loss at or above this share of the best constant prediction's "
                                        "(the chance loss; the targets' variance for mse) has not decreased, "
                                        "whatever it fell from (the analyzer's gate uses the same 0.97)"},
            {"steady_fraction", 0.8, "the loss is 'still falling' when at least this share of the last curve "
                                     "steps go down"},
            {"learned_fraction", 0.5, "a last loss at or below this share of the best constant prediction's has "
                                      "learned from the features, however little it fell after the first window "
                                      "(the run converged inside it); healthy suite runs end below 0.6 of it, "
                                      "failing ones near 1"}};
  }

  void check(const AnalysisContext& ctx, std::vector<Finding>& out) const override {
    if (!ctx.final()) return;
    const LearningProgress& p = ctx.progress();
    const double min_improvement = threshold(ctx, "min_improvement");
    // A loss that fell from the initial weights' guesses but ends at the loss of the best
    // constant prediction did not decrease where it matters.
    const auto constant = ru::constant_prediction_loss(ctx);
    const bool at_constant = constant && p.last_loss >= threshold(ctx, "constant_fraction") * *constant;
    if (!p.enough || !p.loss_finite || (p.loss_improvement >= min_improvement && !at_constant)) return;
    if (constant && *constant > 0 && p.last_loss <= threshold(ctx, "learned_fraction") * *constant) return;
    if (!ctx.failing_to_learn(min_improvement)) return;

    const TraceHeader& h = ctx.header();
    const double lr = ru::learning_rate(h);
    const auto ratio = ru::median_update_ratio(ctx);
    const ru::Curve c = ru::curve(ctx);
    const double steady = falling_share(c.loss);

    Finding f = ctx.make(*this, sym::loss_not_decreasing, Stage::kLoss, -1, std::nullopt);
    ru::place_at_end(ctx, f);
    f.conclusive = false;
    f.message = "the training loss went from " + ru::num(p.first_loss) + " to " + ru::num(p.last_loss) + " over " +
                std::to_string(p.iterations) + " iterations (" + ru::num(100 * p.loss_improvement) +
                "% lower, at least " + ru::num(100 * min_improvement) + "% expected)" +
                (at_constant ? ", ending at " + ru::num(p.last_loss / *constant) +
                                   " of the loss of the best constant prediction (" + ru::num(*constant) + ")"
                             : std::string());
    const std::vector<Finding> statics =
        ru::findings_of(ctx, {"loss_activation_mismatch", "output_range", "labels_invalid", "bad_initialization",
                              "unnormalized_inputs", "linear_stack"});
    const std::string lr_text = ru::num(lr);
    const ru::LrVerdict verdict = ru::judge_learning_rate(ctx, threshold(ctx, "tiny_lr"), threshold(ctx, "tiny_update"),
                                                          threshold(ctx, "huge_update"), threshold(ctx, "peak_update"));
    std::optional<double> chance_used;
    if (!statics.empty()) {
      const Finding& s = *ru::strongest(statics);
      f.root_cause = s.root_cause;
      f.layer = s.layer;
      f.nodes = s.nodes;
      f.confidence = 0.8;
      f.message += ", as expected from " + s.symptom + " (" + s.message + ")";
      f.recommendation = s.recommendation;
    } else if (verdict == ru::LrVerdict::kTooSmall) {
      f.root_cause = RootCause::kLearningRate;
      f.confidence = 0.8;
      f.message += "; the learning rate " + lr_text + " is too small" +
                   (ratio ? ": it moves the weights by only " + ru::num(*ratio) + " of their norm per step" : "");
      f.recommendation = "increase the learning rate (e.g. --lr " + ru::num(lr * 100) + ", or the optimizer's default " +
                         ru::num(ru::keras_default_learning_rate(ru::config(h, "optimizer", "adam"))) + ")";
    } else if (verdict == ru::LrVerdict::kTooLarge) {
      f.root_cause = RootCause::kLearningRate;
      f.confidence = 0.75;
      const double step = std::max(ratio.value_or(0.0), ru::median_peak_update_ratio(ctx).value_or(0.0));
      f.message += "; steps change the weights by up to " + ru::num(step) + " of their norm: the learning rate " +
                   lr_text + " is too high for the loss to settle";
      f.recommendation = "lower the learning rate tenfold (--lr " + ru::num(lr / 10) + ")";
    } else if (steady >= threshold(ctx, "steady_fraction") && p.loss_improvement > 0) {
      f.root_cause = RootCause::kTrainingLength;
      f.confidence = 0.5;
      f.message += "; it is still falling slowly and steadily";
      f.recommendation = "train for more epochs (e.g. --epochs " +
                         std::to_string(4 * std::max<int64_t>(1, int64_t(ru::config_number(h, "epochs", 10)))) +
                         "), or raise the learning rate (--lr " + ru::num(lr * 3) + ") to learn faster";
    } else if (const auto chance = ru::chance_loss(ctx);
               chance && *chance > 0 && p.last_loss >= threshold(ctx, "chance_fraction") * *chance && ratio &&
               *ratio >= threshold(ctx, "tiny_update") &&
               ru::findings_of(ctx, {"vanishing_gradient", "saturated_units", "dead_units"}).empty()) {
      f.root_cause = RootCause::kLabels;
      f.confidence = 0.6;
      f.message += "; it stays at " + ru::num(p.last_loss) + ", the loss of predicting only the class frequencies (" +
                   ru::num(*chance) + "), with normal updates and healthy units: nothing is learned from the features";
      f.recommendation = "check that the labels belong to their rows (shuffled or misaligned labels, the wrong label "
                         "column) and that the features carry information about them";
      chance_used = chance;
    } else {
      f.root_cause = RootCause::kUnknown;
      f.confidence = 0.4;
      f.recommendation = "check that the targets can be learned from the features (labels aligned with rows, "
                         "informative features) and try a learning rate 10x higher and 10x lower than " + lr_text;
    }
    f.evidence = {{"first_loss", p.first_loss}, {"last_loss", p.last_loss}, {"best_loss", p.best_loss},
                  {"loss_improvement", p.loss_improvement}, {"iterations", p.iterations},
                  {"learning_rate", lr}, {"falling_share", steady}};
    if (ratio) f.evidence["median_update_ratio"] = *ratio;
    if (chance_used) f.evidence["chance_loss"] = *chance_used;
    if (at_constant) f.evidence["constant_loss"] = *constant;
    out.push_back(std::move(f));
  }

 private:
  // Share of the steps in the last half of the curve that go down (0 with fewer than 3 points).
  static double falling_share(const std::vector<double>& loss) {
    if (loss.size() < 3) return 0;
    size_t down = 0, steps = 0;
    for (size_t k = std::max<size_t>(1, loss.size() / 2); k < loss.size(); ++k, ++steps) down += loss[k] < loss[k - 1];
    return steps ? double(down) / double(steps) : 0;
  }
};

}  // namespace

std::unique_ptr<Rule> make_rule_loss_not_decreasing() { return std::make_unique<LossNotDecreasing>(); }

}  // namespace dl::an
