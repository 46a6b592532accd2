// Trend (end of training): the loss is worse than a constant prediction. A model that ends
// with a training loss above the loss of predicting the class frequencies (the chance
// loss) has learned less than nothing: its outputs are confidently wrong. And a model that
// starts far above the chance loss, with a static warning about what training starts from
// (too wide initial weights, unscaled inputs or targets), is confidently wrong from its
// first batch because of it. Conclusive: no healthy run of the suite's development split
// ends above 0.6 of the chance loss (except one that diverges and is stopped by other
// rules) or starts above 1.3 of it (docs/calibration.md).
#include <algorithm>
#include <cmath>

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an {
namespace {

class LossAboveChance : public Rule {
 public:
  std::string id() const override { return "loss_above_chance"; }
  std::string description() const override {
    return "The loss ends above the loss of predicting the class frequencies, or starts far above it from a "
           "badly scaled start";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"end_factor", 1.2, "the last epoch's mean loss above this multiple of the chance loss is worse than a "
                                "constant prediction (healthy runs end below 0.6 of it)"},
            {"start_factor", 3, "the first epoch's mean loss above this multiple of the chance loss, with an "
                                "upstream static warning, is a badly scaled start (healthy runs: <= 1.3)"}};
  }

  void check(const AnalysisContext& ctx, std::vector<Finding>& out) const override {
    if (!ctx.final()) return;
    const Trace& t = ctx.trace();
    const TraceHeader& h = ctx.header();
    if (!ctx.progress().loss_finite || !t.complete || t.epochs.empty()) return;
    const double epochs = ru::config_number(h, "epochs", 0);
    if (epochs > 0 && double(t.epochs.size()) < epochs) return;  // stopped early by another finding
    const auto chance = ru::chance_loss(ctx);
    if (!chance || !(*chance > 0)) return;
    const double first = t.epochs.front().loss, last = t.epochs.back().loss;
    const bool ends_above = last >= threshold(ctx, "end_factor") * *chance;
    const std::vector<Finding> statics =
        ru::findings_of(ctx, {"loss_activation_mismatch", "output_range", "labels_invalid", "bad_initialization",
                              "unnormalized_inputs", "linear_stack", "excessive_dropout", "bottleneck_layer"});
    const Finding* upstream = nullptr;
    for (const Finding& s : statics)
      if (symptom_info(s.symptom).upstream && !upstream) upstream = &s;
    const bool bad_start = upstream && first >= threshold(ctx, "start_factor") * *chance;
    if (!ends_above && !bad_start) return;

    Finding f = ctx.make(*this, sym::loss_above_chance, Stage::kLoss, -1, std::nullopt);
    ru::place_at_end(ctx, f);
    f.conclusive = true;
    f.confidence = 0.6;
    f.message = ends_above ? "the training loss ended at " + ru::num(last) + ", " + ru::num(last / *chance) +
                                 "x the loss of predicting only the class frequencies (" + ru::num(*chance) +
                                 "): the outputs are confidently wrong"
                           : "the training loss started at " + ru::num(first) + " in the first epoch, " +
                                 ru::num(first / *chance) + "x the loss of predicting only the class frequencies (" +
                                 ru::num(*chance) + "): the outputs were confidently wrong from the start";
    // The cause: a static finding; else the learning rate judged from the update sizes
    // (the shared thresholds of ru::judge_learning_rate); else a unit finding (saturated or
    // dead units, vanishing gradients), which names the layer.
    const Finding* cause = upstream ? upstream : ru::strongest(statics);
    const std::vector<Finding> units =
        cause ? std::vector<Finding>{}
              : ru::findings_of(ctx, {"saturated_units", "dead_units", "vanishing_gradient", "unchanged_weights"});
    if (!cause && !units.empty()) cause = ru::strongest(units);
    const double lr = ru::learning_rate(h);
    const auto verdict = ru::judge_learning_rate(ctx, 1e-5, 1e-4, 0.1, 0.5);
    if (upstream || (cause && statics.size())) {
      f.root_cause = cause->root_cause;
      f.layer = cause->layer;
      f.nodes = cause->nodes;
      f.message += ", as expected from " + cause->symptom;
      f.recommendation = cause->recommendation;
    } else if (verdict == ru::LrVerdict::kTooSmall) {
      f.root_cause = RootCause::kLearningRate;
      f.message += "; the learning rate " + ru::num(lr) + " barely moves the weights away from their start";
      f.recommendation = "increase the learning rate (e.g. --lr " + ru::num(lr * 100) + ")";
    } else if (verdict == ru::LrVerdict::kTooLarge) {
      f.root_cause = RootCause::kLearningRate;
      f.message += "; steps rewrite a large share of the weights";
      f.recommendation = "lower the learning rate tenfold (--lr " + ru::num(lr / 10) + ")";
    } else if (cause) {
      f.root_cause = cause->root_cause;
      f.layer = cause->layer;
      f.nodes = cause->nodes;
      f.message += ", as expected from " + cause->symptom;
      f.recommendation = cause->recommendation;
    } else {
      f.root_cause = RootCause::kUnknown;
      f.confidence = 0.4;
      f.recommendation = "check the scale of the inputs and of the initial weights, and the learning rate " +
                         ru::num(lr);
    }
    f.evidence = {{"chance_loss", *chance}, {"first_epoch_loss", first}, {"last_epoch_loss", last},
                  {"ends_above_chance", ends_above}, {"learning_rate", lr}};
    out.push_back(std::move(f));
  }
};

}  // namespace

std::unique_ptr<Rule> make_rule_loss_above_chance() { return std::make_unique<LossAboveChance>(); }

}  // namespace dl::an
