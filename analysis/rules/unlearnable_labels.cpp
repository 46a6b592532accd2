// Trend (end of training): the labels cannot be learned from the features. In the first
// epoch every batch is new to the model, so the loss of the second epoch says how well
// what was learned from the first pass carries over to rows; a model that generalises
// is well below the chance loss by then. When it is still at the chance loss, with
// weights that move normally and healthy units, and the later epochs lower the loss only
// slowly (memorising rows one by one), the labels do not belong to the rows (shuffled,
// misaligned, the wrong column). Conclusive: on the suite's development split no healthy run
// meets these conditions (the hardest tasks come closest: a second epoch at 0.95 of the
// chance loss, but with an accuracy 30% of the way from chance to 1); docs/calibration.md.
#include <algorithm>
#include <cmath>

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an {
namespace {

class UnlearnableLabels : public Rule {
 public:
  std::string id() const override { return "unlearnable_labels"; }
  std::string description() const override {
    return "The loss stays at the chance loss after a full pass over the data: the labels do not follow from the "
           "features";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"min_epochs", 4, "epochs needed to tell a slow start from memorisation"},
            {"second_epoch", 0.95, "the second epoch's mean loss at or above this share of the chance loss: the "
                                   "first pass taught nothing that carries over to other rows (random labels: >= "
                                   "0.96; healthy runs: <= 0.95, the hardest tasks of the suite) ..."},
            {"chance_gain", 0.15, "... and its accuracy at most this share of the way from chance to 1 (random "
                                  "labels: <= 0.1; a hard healthy task: 0.3) ..."},
            {"min_first_pass", 6, "a first epoch of fewer batches (updates) is too short to show what carries over"},
            {"min_rows", 100, "... and one over fewer rows teaches too little to generalise from, whatever the labels "
                              "(models/benchmark's so_39525358: 20 rows, standardised, still at chance in epoch 2)"},
            {"end_fraction", 0.5, "... and the last epoch's mean loss still above this share of it (healthy runs "
                                  "end below 0.1; memorising random labels is slow)"},
            {"tiny_update", 1e-3, "weights moving by less than this share of their norm per step (median) are a "
                                  "slow learner (a learning rate too small, or plain SGD at its default), not the "
                                  "labels (random labels on the suite's dev split: >= 1.5e-3; a learning rate 1000x "
                                  "too small: <= 1.7e-4; models/benchmark's ds_18667 fix, SGD 0.01 on [0, 1] "
                                  "pixels: 7.8e-4)"}};
  }

  void check(const AnalysisContext& ctx, std::vector<Finding>& out) const override {
    if (!ctx.final()) return;
    const Trace& t = ctx.trace();
    const TraceHeader& h = ctx.header();
    if (!ctx.progress().loss_finite || !t.complete || !ru::is_cross_entropy(ru::config(h, "loss"))) return;
    if (double(h.batches_per_epoch) < threshold(ctx, "min_first_pass")) return;
    if (double(h.data_summary.rows) < threshold(ctx, "min_rows")) return;
    if (double(t.epochs.size()) < std::max(2.0, threshold(ctx, "min_epochs"))) return;
    const auto chance = ru::chance_loss(ctx);
    if (!chance || !(*chance > 0)) return;
    const double second = t.epochs[1].loss / *chance, last = t.epochs.back().loss / *chance;
    if (!(second >= threshold(ctx, "second_epoch")) || !(last >= threshold(ctx, "end_fraction"))) return;
    // The accuracy must be at chance too. Without a chance level (multi-label targets) the
    // loss alone cannot tell: models/benchmark's so_38648195 fix (multi-label, SGD) is as
    // slow as shuffled labels.
    const double chance_accuracy = h.metric_name == "accuracy" ? ctx.progress().chance_metric : -1;
    if (!(chance_accuracy >= 0 && chance_accuracy < 1)) return;
    const double gain = (t.epochs[1].metric - chance_accuracy) / (1 - chance_accuracy);
    if (!(gain <= threshold(ctx, "chance_gain"))) return;
    const auto update = ru::median_update_ratio(ctx);
    if (!update || *update < threshold(ctx, "tiny_update")) return;
    // Units that cannot pass a signal explain a loss at chance as well: their rules own it.
    if (!ru::findings_of(ctx, {"vanishing_gradient", "saturated_units", "dead_units", "unchanged_weights"}).empty())
      return;

    Finding f = ctx.make(*this, sym::unlearnable_labels, Stage::kLoss, -1, std::nullopt);
    ru::place_at_end(ctx, f);
    f.conclusive = true;
    f.message = "after a full pass over the data the loss was still " + ru::num(t.epochs[1].loss) +
                " in the second epoch, the loss of predicting only the class frequencies (" + ru::num(*chance) +
                "), and " + std::to_string(t.epochs.size()) + " epochs with normal updates (median " +
                ru::num(*update) + " of the weights' norm per step) lowered it only to " +
                ru::num(t.epochs.back().loss) + ": nothing learned from some rows carries over to the others";
    const std::vector<Finding> statics =
        ru::findings_of(ctx, {"loss_activation_mismatch", "output_range", "labels_invalid", "bad_initialization",
                              "unnormalized_inputs", "linear_stack", "excessive_dropout", "bottleneck_layer"});
    if (!statics.empty()) {
      const Finding& s = *ru::strongest(statics);
      f.root_cause = s.root_cause;
      f.layer = s.layer;
      f.nodes = s.nodes;
      f.confidence = 0.6;
      f.message += ", as expected from " + s.symptom;
      f.recommendation = s.recommendation;
    } else {
      f.root_cause = RootCause::kLabels;
      f.confidence = 0.7;
      f.recommendation = "check that the labels belong to their rows (shuffled or misaligned labels, the wrong label "
                         "column) and that the features carry information about them";
    }
    f.evidence = {{"chance_loss", *chance},
                  {"chance_accuracy", chance_accuracy},
                  {"second_epoch_accuracy", t.epochs[1].metric},
                  {"second_epoch_loss", t.epochs[1].loss},
                  {"last_epoch_loss", t.epochs.back().loss},
                  {"epochs", t.epochs.size()},
                  {"median_update_ratio", *update}};
    out.push_back(std::move(f));
  }
};

}  // namespace

std::unique_ptr<Rule> make_rule_unlearnable_labels() { return std::make_unique<UnlearnableLabels>(); }

}  // namespace dl::an
