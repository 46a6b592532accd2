// Trend (end of training): the loss is worse than a constant prediction. A model that ends
// with a training loss above the loss of predicting the class frequencies (the chance
// loss) has learned less than nothing: its outputs are confidently wrong. And a model that
// starts far above the chance loss, with a static warning about what training starts from
// (too wide initial weights, unscaled inputs or targets), is confidently wrong from its
// first batch because of it. Conclusive: no healthy run of the suite's development split
// ends above 0.6 of the chance loss (except one that diverges and is stopped by other
// rules) or starts above 1.3 of it (docs/calibration.md).
// While training (and in a run stopped before its end) it watches for a blow-up instead
// (symptom exploding_loss): a
// run that started near the constant prediction's loss and whose updates drove the loss to
// many times that for several iterations (a learning rate far too high, issue 17's time to
// a verdict: resnet18 at lr x100 is then reported after 8 iterations, not at the epoch's end).
#include <algorithm>
#include <cmath>
#include <vector>

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
    return {{"blowup", 10, "while training: a median loss over blowup_window iterations at or above this multiple of "
                           "the constant prediction's loss, in a run that started sane, is a blow-up (healthy runs "
                           "start at <= 1.3 of it and fall; a learning rate x100 on resnet18 reaches 10-20x within "
                           "2 iterations)"},
            {"blowup_window", 4, "consecutive iterations whose median must be that high (one bad batch is noise)"},
            {"sane_start", 3, "the first iteration's loss below this multiple of the constant loss: the model started "
                              "sane, so the updates drove it up (a start far above is start_factor's case)"},
            {"end_factor", 1.2, "the last epoch's mean loss above this multiple of the chance loss is worse than a "
                                "constant prediction (healthy runs end below 0.6 of it)"},
            {"start_factor", 3, "the first epoch's mean loss above this multiple of the chance loss, with an "
                                "upstream static warning, is a badly scaled start (healthy runs: <= 1.3)"}};
  }

  void check(const AnalysisContext& ctx, std::vector<Finding>& out) const override {
    if (!ru::run_reached_its_length(ctx)) {
      blowup(ctx, out);  // while training, and in a run stopped before its end
      return;
    }
    const Trace& t = ctx.trace();
    const TraceHeader& h = ctx.header();
    if (!ctx.progress().loss_finite || !t.complete || t.epochs.empty()) return;
    const auto chance = ru::chance_loss(ctx);
    if (!chance || !(*chance > 0)) return;
    const double first = t.epochs.front().loss, last = t.epochs.back().loss;
    const bool ends_above = last >= threshold(ctx, "end_factor") * *chance;
    const std::vector<Finding> statics = static_findings(ctx);
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
      follow(f, *cause);
    } else if (verdict == ru::LrVerdict::kTooSmall) {
      f.root_cause = RootCause::kLearningRate;
      f.message += "; the learning rate " + ru::num(lr) + " barely moves the weights away from their start";
      f.recommendation = "increase the learning rate (e.g. --lr " + ru::num(lr * 100) + ")";
    } else if (verdict == ru::LrVerdict::kTooLarge) {
      f.root_cause = RootCause::kLearningRate;
      f.message += "; steps rewrite a large share of the weights";
      f.recommendation = "lower the learning rate tenfold (--lr " + ru::num(lr / 10) + ")";
    } else if (cause) {
      follow(f, *cause);
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

 private:
  // `f` blames what the static finding `cause` blames, in its words.
  static void follow(Finding& f, const Finding& cause) {
    f.root_cause = cause.root_cause;
    f.layer = cause.layer;
    f.nodes = cause.nodes;
    f.message += ", as expected from " + cause.symptom;
    f.recommendation = cause.recommendation;
  }

  // The static findings that say what training starts from or what the model cannot do.
  static std::vector<Finding> static_findings(const AnalysisContext& ctx) {
    return ru::findings_of(ctx, {"loss_activation_mismatch", "output_range", "labels_invalid", "bad_initialization",
                                 "unnormalized_inputs", "linear_stack", "excessive_dropout", "bottleneck_layer"});
  }

  // The run so far (online, or stopped early): the loss started near the constant
  // prediction's and the updates drove it to many times that for several iterations.
  void blowup(const AnalysisContext& ctx, std::vector<Finding>& out) const {
    const Trace& t = ctx.trace();
    const double constant = ctx.progress().constant_loss;
    const size_t n = t.loss.size(), w = static_cast<size_t>(std::max(1.0, threshold(ctx, "blowup_window")));
    if (!(constant > 0) || n < ru::kEarlyIterations || n < w + 1) return;
    if (!(double(t.loss[0]) < threshold(ctx, "sane_start") * constant)) return;
    const double level = threshold(ctx, "blowup") * constant;
    std::vector<double> window(w);
    for (size_t k = 1; k + w <= n; ++k) {
      // The window's median: one wild batch is not a blow-up.
      for (size_t i = 0; i < w; ++i) window[i] = t.loss[k + i];
      std::sort(window.begin(), window.end());
      const double mean = w % 2 ? window[w / 2] : 0.5 * (window[w / 2 - 1] + window[w / 2]);
      if (!(mean >= level) || !std::isfinite(mean)) continue;  // non-finite: numerical_error's
      Finding f = ctx.make(*this, sym::exploding_loss, Stage::kLoss, -1, std::nullopt);
      // Placed where the loss first reached the level within the window (an iteration of the
      // loss history, not a record), not at the window's start: a finding of the step that
      // blew up (an exploding recurrent state, a NaN) at that iteration is not later than it.
      size_t onset = k;
      while (onset + 1 < k + w && !(double(t.loss[onset]) >= level)) ++onset;
      f.iteration = static_cast<int64_t>(onset);
      const int64_t b = ctx.header().batches_per_epoch;
      f.epoch = b > 0 ? f.iteration / b : 0;
      f.conclusive = true;
      f.confidence = 0.7;
      const double lr = ru::learning_rate(ctx.header());
      f.message = "the training loss rose from " + ru::num(t.loss[0]) + " at the first iteration to a median of " +
                  ru::num(mean) + " over iterations " + std::to_string(k) + "-" + std::to_string(k + w - 1) + ", " +
                  ru::num(mean / constant) + "x the loss of a constant prediction (" + ru::num(constant) +
                  "): the updates throw the model far off";
      // A static finding about the model or the data explains the blow-up better than the
      // step size (a ReLU output under a cross-entropy, unscaled inputs): its cause and layer.
      const std::vector<Finding> statics = static_findings(ctx);
      if (const Finding* s = ru::strongest(statics)) {
        follow(f, *s);
      } else {
        f.root_cause = RootCause::kLearningRate;
        f.lr_direction = -1;
        f.recommendation = "lower the learning rate tenfold (--lr " + ru::num(lr / 10) + "), or clip the gradients "
                           "(--clipnorm 1)";
      }
      f.evidence = {{"constant_loss", constant}, {"first_loss", t.loss[0]}, {"blowup_median", mean},
                    {"blowup_from", k}, {"blowup_onset", onset}, {"learning_rate", lr}};
      out.push_back(std::move(f));
      return;
    }
  }
};

}  // namespace

std::unique_ptr<Rule> make_rule_loss_above_chance() { return std::make_unique<LossAboveChance>(); }

}  // namespace dl::an
