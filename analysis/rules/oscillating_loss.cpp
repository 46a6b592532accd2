// Trend (end of training, only when the run fails to learn): the loss jumps up and down
// with a large amplitude instead of settling: the steps overshoot (learning rate) or the
// gradient of a tiny batch is mostly noise.
#include <algorithm>
#include <cmath>

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an {
namespace {

class OscillatingLoss : public Rule {
 public:
  std::string id() const override { return "oscillating_loss"; }
  std::string description() const override {
    return "The loss alternates up and down with a large amplitude instead of decreasing";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"min_improvement", 0.05, "only when the run fails to learn (loss improved less than this)"},
            {"amplitude", 0.3, "mean |change| between consecutive curve points (epochs, or windows of iterations) "
                               "above 30% of the mean loss: healthy curves change by a few percent per epoch"},
            {"sign_changes", 0.5, "at least half of the consecutive changes reverse direction (alternation, "
                                  "not a trend)"},
            {"min_points", 5, "curve points needed (epochs, else iteration windows)"},
            {"small_batch", 2, "batches this small give gradients dominated by noise: root cause the batch size"}};
  }

  void check(const AnalysisContext& ctx, std::vector<Finding>& out) const override {
    if (!ctx.final()) return;
    const LearningProgress& p = ctx.progress();
    if (!p.enough || !p.loss_finite || !ctx.failing_to_learn(threshold(ctx, "min_improvement"))) return;
    const ru::Curve c = ru::curve(ctx, 6, 20);
    const std::vector<double>& s = c.loss;
    if (double(s.size()) < threshold(ctx, "min_points")) return;
    double mean = 0, moves = 0;
    for (double v : s) mean += std::fabs(v) / double(s.size());
    size_t reversals = 0;
    for (size_t k = 1; k < s.size(); ++k) {
      moves += std::fabs(s[k] - s[k - 1]) / double(s.size() - 1);
      if (k >= 2 && (s[k] - s[k - 1]) * (s[k - 1] - s[k - 2]) < 0) ++reversals;
    }
    if (mean <= 0 || s.size() < 3) return;
    const double amplitude = moves / mean;
    const double reversal_share = double(reversals) / double(s.size() - 2);
    if (amplitude <= threshold(ctx, "amplitude") || reversal_share < threshold(ctx, "sign_changes")) return;

    const TraceHeader& h = ctx.header();
    const double lr = ru::learning_rate(h);
    const double batch = ru::config_number(h, "batch_size", 32);
    Finding f = ctx.make(*this, sym::oscillating_loss, Stage::kLoss, -1, std::nullopt);
    ru::place_at_end(ctx, f);
    f.conclusive = false;
    f.confidence = 0.7;
    const std::string unit = c.per_epoch ? "epoch" : "window of " + ru::num(c.iterations_per_point) + " iterations";
    f.message = "the loss oscillates instead of decreasing: it changes by " + ru::num(100 * amplitude) +
                "% of its mean (" + ru::num(mean) + ") per " + unit + " and reverses direction in " +
                ru::num(100 * reversal_share) + "% of the steps";
    if (batch <= threshold(ctx, "small_batch")) {
      f.root_cause = RootCause::kOptimizer;
      f.recommendation = "use larger batches (--batch-size 32) so each gradient averages over more samples";
    } else {
      f.root_cause = RootCause::kLearningRate;
      f.recommendation = "lower the learning rate tenfold (--lr " + ru::num(lr / 10) + ")";
    }
    f.evidence = {{"amplitude", amplitude}, {"reversal_share", reversal_share}, {"mean_loss", mean},
                  {"points", s.size()}, {"per_epoch", c.per_epoch}, {"learning_rate", lr}, {"batch_size", batch}};
    out.push_back(std::move(f));
  }
};

}  // namespace

std::unique_ptr<Rule> make_rule_oscillating_loss() { return std::make_unique<OscillatingLoss>(); }

}  // namespace dl::an
