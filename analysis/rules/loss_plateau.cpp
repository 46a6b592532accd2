// Trend (end of training): the loss fell at first, then stayed flat for the second half of
// the run at a poor metric, with a learning rate that is too large (huge update steps, or
// far above the optimizer's default): the steps overshoot or killed units, so the model
// settles in a bad state (e.g. one class of three separated, two merged). Conclusive:
// the analyzer's failing-to-learn gate misses a run whose loss did fall early, and the
// learning-rate evidence separates this fault from a small model that simply reached its
// capacity on a hard dataset (which plateaus too, with normal updates: quiet).
#include <algorithm>
#include <cmath>

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an {
namespace {

class LossPlateau : public Rule {
 public:
  std::string id() const override { return "loss_plateau"; }
  std::string description() const override {
    return "The loss stopped decreasing early at a poor metric, with a learning rate that is too large";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"min_improvement", 0.05, "the loss must have fallen at least this much over the run (else "
                                      "loss_not_decreasing owns the run)"},
            {"tail_fraction", 0.5, "the plateau is judged on this last share of the iterations"},
            {"min_tail", 30, "but on at least this many iterations (or the whole run when shorter)"},
            {"plateau_rate", 0.01, "a fitted loss falling by less than 1% of its level per epoch is flat"},
            {"poor_fraction", 0.5, "accuracy is poor below chance + this fraction of the way from chance to 1"},
            {"poor_mae", 0.5, "a mean absolute error above this many target standard deviations is poor"},
            {"huge_update", 0.1, "median ||dw||/||w|| per step above this over the last half: the rate is too large"},
            {"peak_update", 0.5, "a layer's largest ||dw||/||w|| above this (median over layers): some step rewrote "
                                 "half the weights"},
            {"high_lr_factor", 10, "a learning rate this many times the optimizer's default is too large by itself"}};
  }

  void check(const AnalysisContext& ctx, std::vector<Finding>& out) const override {
    if (!ctx.final()) return;
    const Trace& t = ctx.trace();
    const TraceHeader& h = ctx.header();
    const LearningProgress& p = ctx.progress();
    const size_t n = t.loss.size();
    if (!p.enough || !p.loss_finite || !t.complete || p.loss_improvement < threshold(ctx, "min_improvement")) return;
    const double epochs = ru::config_number(h, "epochs", 0);
    if (epochs > 0 && double(t.epochs.size()) < epochs) return;  // stopped early by another finding

    const size_t tail = std::min(n, std::max(size_t(threshold(ctx, "tail_fraction") * double(n)),
                                             size_t(std::max(0.0, threshold(ctx, "min_tail")))));
    const ru::LineFit loss = ru::fit_line(t.loss, n - tail, n);
    const double per_epoch = h.batches_per_epoch > 0 ? double(h.batches_per_epoch) : double(n);
    if (!(loss.mean > 0)) return;
    const double rate = -loss.slope * per_epoch / loss.mean;
    if (rate >= threshold(ctx, "plateau_rate")) return;  // still falling: training_too_short's case

    const ru::LineFit metric = ru::fit_line(t.metric, n - tail, n);
    const ru::MetricJudgement judged =
        ru::judge_metric(ctx, metric.end, threshold(ctx, "poor_fraction"), threshold(ctx, "poor_mae"));
    if (!judged.known || !judged.poor) return;

    const double lr = ru::learning_rate(h);
    const double default_lr = ru::keras_default_learning_rate(ru::config(h, "optimizer", "adam"));
    const auto verdict = ru::judge_learning_rate(ctx, 0.0, 0.0, threshold(ctx, "huge_update"), threshold(ctx, "peak_update"));
    const bool high_lr = lr >= threshold(ctx, "high_lr_factor") * default_lr;
    if (verdict != ru::LrVerdict::kTooLarge && !high_lr) return;
    // Random labels keep the gradients (and so the steps) large while the loss stays high:
    // that rule's evidence (the second epoch at the chance loss) names the cause.
    if (!ru::findings_of(ctx, {"unlearnable_labels"}).empty()) return;

    Finding f = ctx.make(*this, sym::loss_plateau, Stage::kLoss, -1, std::nullopt);
    ru::place_at_end(ctx, f);
    f.conclusive = true;
    f.confidence = 0.7;
    f.root_cause = RootCause::kLearningRate;
    const auto peak = ru::median_peak_update_ratio(ctx);
    f.message = "the loss fell from " + ru::num(p.first_loss) + " to " + ru::num(loss.mean) +
                " and then stayed flat over the last " + std::to_string(tail) + " iterations (" +
                (rate < 0 ? "+" : "") + ru::num(-100 * rate + 0.0) + "% per epoch) with a poor " + judged.text +
                "; the learning rate " + ru::num(lr) +
                (high_lr ? " is " + ru::num(lr / default_lr) + "x the optimizer's default" : std::string()) +
                (peak ? std::string(high_lr ? " and" : "") + " moved the weights by up to " + ru::num(*peak) +
                            " of their norm in one step"
                      : std::string());
    f.recommendation = "lower the learning rate tenfold (--lr " + ru::num(lr / 10) + ")";
    f.evidence = {{"first_loss", p.first_loss}, {"plateau_loss", loss.mean}, {"plateau_rate_per_epoch", rate},
                  {"tail_iterations", tail}, {"fitted_metric_end", metric.end}, {"learning_rate", lr},
                  {"default_learning_rate", default_lr}};
    if (peak) f.evidence["median_peak_update_ratio"] = *peak;
    if (auto r = ru::median_update_ratio(ctx)) f.evidence["median_update_ratio"] = *r;
    out.push_back(std::move(f));
  }
};

}  // namespace

std::unique_ptr<Rule> make_rule_loss_plateau() { return std::make_unique<LossPlateau>(); }

}  // namespace dl::an
