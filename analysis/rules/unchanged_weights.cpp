// Dynamic: weights that do not change. Conclusive when, for `window` records running to
// the end of the trace and a loss that is not ~0, every parameter update of the model is
// exactly zero or every parameter gradient is exactly zero: training cannot progress. A
// warning (counted when the run fails to learn) for single layers whose update ratio stays
// below `update_ratio`. The root cause: a zero/tiny learning rate, an optimizer that drops
// non-zero gradients, else the first layer (walking back from the output) whose gradient
// is zero, and what stops it there (the loss, a dead or saturated activation, zero weights).
#include <algorithm>
#include <cmath>

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an {
namespace {

class UnchangedWeights : public Rule {
 public:
  std::string id() const override { return "unchanged_weights"; }
  std::string description() const override { return "Weights that stop changing: zero updates or zero gradients"; }
  std::vector<Threshold> thresholds() const override {
    return {{"update_ratio", 1e-8, "a layer whose ||dw||/||w|| per step stays below this is unchanged (float32 "
                                   "resolution is ~1e-7; healthy runs measured >= 8e-5)"},
            {"window", 20, "records (up to the end of the trace) the weights must stay unchanged"},
            {"min_improvement", 0.05, "single-layer warnings only when the loss fell less than 5%"},
            {"loss_floor", 1e-6, "a mean loss below this is a fit, not a stall (zero gradients are expected)"},
            {"tiny_lr", 1e-6, "a learning rate at or below this cannot move weights of order 0.1 in float32"},
            {"large_update", 0.1, "updates above this fraction of the weight norm before the gradient vanished "
                                  "mean the learning rate drove the output into saturation (healthy: <= 0.04)"},
            {"learned", 0.5, "a loss that fell to this share of the constant prediction's loss and was back at or "
                             "above it before the gradients stopped was undone by its steps: the learning rate (or "
                             "momentum) is the cause (ru::loss_diverged)"},
            {"saturated", 0.99, "fraction of saturated (or dead) outputs that blocks all gradient through an op"}};
  }

  void check(const AnalysisContext& ctx, std::vector<Finding>& out) const override {
    const Trace& t = ctx.trace();
    const size_t end = ru::finite_prefix(ctx);
    const auto layers = ru::param_probes(ctx);
    if (end == 0 || layers.empty()) return;
    const size_t window = static_cast<size_t>(std::max(1.0, threshold(ctx, "window")));

    // Whole model: every update exactly zero, or every gradient exactly zero.
    auto all_zero = [&](size_t r, bool grads) {
      for (const auto& p : layers)
        if (ru::combined_l2(t, r, grads ? p.grad : p.update) != 0.0) return false;
      return true;
    };
    size_t run = 0;
    bool grads_zero = true, updates_zero = true;
    while (run < end) {
      const size_t r = end - 1 - run;
      const bool g = all_zero(r, true), u = all_zero(r, false);
      if (!g && !u) break;
      grads_zero = grads_zero && g;
      updates_zero = updates_zero && u;
      ++run;
    }
    if (run >= window && mean_loss(t, end - run, end) > threshold(ctx, "loss_floor")) {
      Finding f = ctx.make(*this, sym::unchanged_weights, Stage::kWeights, -1, end - run);
      f.conclusive = true;
      f.confidence = 0.95;
      f.message = std::string(updates_zero ? "no weight of the model changed" : "every parameter gradient is exactly zero") +
                  " for the last " + std::to_string(run) + " recorded iterations (loss " +
                  ru::num(mean_loss(t, end - run, end)) + ")";
      f.evidence = {{"records", run}, {"all_updates_zero", updates_zero}, {"all_gradients_zero", grads_zero},
                    {"loss", mean_loss(t, end - run, end)}};
      explain(ctx, layers, nullptr, end - run, end, f);
      out.push_back(std::move(f));
      return;
    }

    if (!ctx.final() || !ctx.failing_to_learn(threshold(ctx, "min_improvement"))) return;
    const size_t start = ru::window_start(end, window);
    if (end < start + 3 || !(mean_loss(t, start, end) > threshold(ctx, "loss_floor"))) return;
    // Single layers: the deepest unchanged one is where the problem starts (gradients
    // flow from the output back).
    const double limit = threshold(ctx, "update_ratio");
    for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
      size_t still = 0;  // records, from the end, with the layer unchanged
      while (still < end && !(ru::layer_update_ratio(t, end - 1 - still, *it) >= limit)) ++still;
      if (still < end - start) continue;
      double g = 0;
      for (size_t r = end - still; r < end; ++r) g = std::max(g, ru::combined_l2(t, r, it->grad));
      Finding f = ctx.make(*this, sym::unchanged_weights, Stage::kWeights, it->layer, end - still);
      f.conclusive = false;
      f.confidence = 0.6;
      f.message = ctx.layer_label(it->layer) + ": its weights change by less than " + ru::num(limit) +
                  " of their norm per step over the last " + std::to_string(still) + " recorded iterations";
      f.evidence = {{"records", still}, {"max_gradient_norm", g},
                    {"update_ratio", ru::layer_update_ratio(t, end - 1, *it)}};
      explain(ctx, layers, &*it, end - still, end, f);
      out.push_back(std::move(f));
      return;
    }
  }

 private:
  static double mean_loss(const Trace& t, size_t from, size_t to) {
    double s = 0;
    for (size_t r = from; r < to; ++r) s += t.records[r].loss;
    return to > from ? s / double(to - from) : 0.0;
  }

  // The same blocked layer diagnosed by the rule that owns the symptom (dead_units,
  // saturated_units): take its root cause and fix so the report does not contradict itself.
  static void adopt(const AnalysisContext& ctx, const char* rule, int layer, Finding& f) {
    for (const Finding& g : ru::findings_of(ctx, {rule}))
      if (g.layer == layer) {
        f.root_cause = g.root_cause;
        f.recommendation = g.recommendation;
        f.evidence["see"] = g.symptom;
        return;
      }
  }

  // `at`: the unchanged layer, or nullptr when the whole model is unchanged.
  void explain(const AnalysisContext& ctx, const std::vector<ru::LayerParamProbes>& layers,
               const ru::LayerParamProbes* at, size_t from, size_t end, Finding& f) const {
    const Trace& t = ctx.trace();
    const TraceHeader& h = ctx.header();
    const double lr = ru::learning_rate(h);
    f.evidence["learning_rate"] = lr;
    // Share of the records in which the (layer's or model's) gradient and update are non-zero.
    auto share = [&](bool grads) {
      size_t n = 0;
      for (size_t r = from; r < end; ++r) {
        bool any = false;
        for (const auto& p : layers)
          if ((!at || p.layer == at->layer) && ru::combined_l2(t, r, grads ? p.grad : p.update) != 0.0) any = true;
        n += any;
      }
      return end > from ? double(n) / double(end - from) : 0.0;
    };
    const double grad_share = share(true), update_share = share(false);
    f.evidence["nonzero_gradient_share"] = grad_share;
    if (lr <= threshold(ctx, "tiny_lr")) {
      f.root_cause = RootCause::kLearningRate;
      f.message = f.layer < 0 ? f.message + ": the learning rate is " + ru::num(lr)
                              : "the learning rate " + ru::num(lr) + " is too small to move the weights (" + f.message + ")";
      f.layer = -1;
      f.nodes.clear();
      f.recommendation = "set a working learning rate (e.g. --lr " +
                         ru::num(ru::keras_default_learning_rate(ru::config(h, "optimizer", "adam"))) +
                         ", the optimizer's default)";
      return;
    }
    // Gradients in (nearly) every record but no update at all: the optimizer drops them.
    if (grad_share >= 0.9 && update_share == 0.0) {
      f.root_cause = RootCause::kOptimizer;
      f.layer = -1;
      f.nodes.clear();
      f.message += " although the gradients are non-zero: the optimizer applies no update";
      f.recommendation = "check the optimizer settings (gradient clipping to 0, a decay that drives the step to 0, "
                         "frozen parameters) so the gradients reach the weights";
      return;
    }
    // Gradients present but tiny: the updates are tiny, not zero.
    if (grad_share >= 0.9) {
      std::string why, fix;
      f.root_cause = ru::vanishing_cause(ctx, at ? at->layer : layers.back().layer, 1e-3, why, fix);
      f.message += ": its gradient is tiny (" + why + ")";
      f.recommendation = fix;
      return;
    }
    // Zero gradients: the deepest layer whose parameters get none is where it stops.
    // (Sporadic non-zero gradients from a rare batch, or updates lost to float resolution
    // on huge weights, do not make a layer live.)
    const ru::LayerParamProbes* stop = at ? at : &layers.back();
    for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
      size_t zeros = 0;
      for (size_t r = from; r < end; ++r) zeros += ru::combined_l2(t, r, it->grad) == 0.0;
      if (end > from && double(zeros) >= 0.9 * double(end - from)) {
        stop = &*it;
        break;
      }
    }
    const int L = stop->layer;
    f.layer = L;
    f.nodes = L >= 0 && L < static_cast<int>(h.layers.size()) ? h.layers[size_t(L)].nodes : std::vector<std::string>{};
    f.evidence["zero_gradient_layer"] = L;
    const size_t last = end - 1;
    const double sat = threshold(ctx, "saturated");
    // The gradient at the layer's output (its last step).
    const std::optional<size_t> out_grad = ru::layer_output_gradient_probe(ctx, L);
    const bool output_layer = L == static_cast<int>(h.layers.size()) - 1 || &*stop == &layers.back();
    const bool no_grad_in = out_grad && t.at(last, *out_grad).l2 == 0.0;
    const ru::OutputLayer o = ru::output_layer(ctx);
    if (output_layer && (no_grad_in || !out_grad)) {
      const double out_sat = o.probe ? double(t.at(last, *o.probe).sat_frac) : 0.0;
      int upd_layer = -1;
      const double upd = ru::max_update_ratio(ctx, 0, from, &upd_layer);
      f.evidence["output_sat_frac"] = out_sat;
      f.evidence["max_update_ratio_before"] = upd;
      if (o.op.normalizes && o.units <= 1) {
        f.root_cause = RootCause::kLoss;
        f.message += ": " + o.node + " normalises a single unit, so the output is always 1.0 and the loss has no "
                     "gradient";
        f.recommendation = "replace " + o.node + " on the single output unit with a sigmoid and train with "
                           "binary_crossentropy (or use one output unit per class with categorical_crossentropy)";
      } else if (out_sat >= sat && upd > threshold(ctx, "large_update")) {
        f.root_cause = RootCause::kLearningRate;
        f.lr_direction = -1;
        f.message += ": the first updates (up to " + ru::num(upd) + " of the weight norm per step) drove the output " +
                     o.node + " into saturation, where the loss gives no gradient";
        f.recommendation = "lower the learning rate tenfold (--lr " + ru::num(lr / 10) + ")";
      } else if (const auto rise = ru::loss_diverged(ctx, t.records[from].iteration, threshold(ctx, "learned"));
                 out_sat >= sat && rise) {
        // Small steps each, but the loss climbed from a fit to above the constant
        // prediction's before the output saturated: the steps added up (momentum).
        f.root_cause = RootCause::kLearningRate;
        f.lr_direction = -1;
        f.message += ": the loss rose from " + ru::num(rise->low) + " (iteration " + std::to_string(rise->low_at) +
                     ") to " + ru::num(rise->high) + " (iteration " + std::to_string(rise->high_at) + ") under " +
                     ru::step_size_text(ctx.header()) + ", which drove the output " + o.node +
                     " into saturation, where the loss gives no gradient";
        f.recommendation = ru::step_size_fix(ctx.header());
        f.evidence["loss_rose_from"] = rise->low;
        f.evidence["loss_rose_to"] = rise->high;
      } else {
        f.root_cause = RootCause::kLoss;
        f.message += ": the loss gives no gradient at the output" +
                     (out_sat >= sat ? " (" + o.node + " is saturated, and the clipped probabilities have zero slope)"
                                     : std::string());
        f.recommendation = "make the loss match the output: with probabilities in the output use a cross-entropy "
                           "with from_logits=false, or output logits and set from_logits=true";
      }
      return;
    }
    if (no_grad_in) {
      // The layer after L passes nothing back: its weights are zero.
      f.root_cause = RootCause::kInitialization;
      f.message += ": no gradient reaches the output of " + ctx.layer_label(L) + " (the next layer's weights pass none "
                   "back)";
      f.recommendation = "initialise the weights of the layer after " + ctx.layer_label(L) + " with non-zero random "
                         "values (Glorot/He)";
      return;
    }
    // The gradient reaches the layer's output but not its parameters: an op inside blocks it.
    for (size_t k : ru::layer_forward_probes(ctx, L)) {
      const Probe& p = h.probes[k];
      const TensorStats& s = t.at(last, k);
      if (p.op.has_dead_zone && s.dead_units >= sat) {
        f.root_cause = RootCause::kActivation;
        f.message += ": " + p.node + " is dead for every sample, so no gradient passes it";
        f.recommendation = "use LeakyReLU instead of " + p.node + ", He initialisation and zero biases, or a lower "
                           "learning rate (--lr " + ru::num(lr / 10) + ")";
        adopt(ctx, "dead_units", L, f);
        return;
      }
      if (p.op.normalizes && p.op.units <= 1) {
        f.root_cause = RootCause::kLoss;
        f.message += ": " + p.node + " normalises a single unit (always 1.0), so no gradient passes it";
        f.recommendation = "replace " + p.node + " on a single unit with a sigmoid (binary_crossentropy)";
        return;
      }
      if (p.op.saturates && s.sat_frac >= sat) {
        f.root_cause = RootCause::kActivation;
        f.message += ": " + p.node + " is saturated for every output, so no gradient passes it";
        f.recommendation = "replace " + p.node + " with ReLU or add batch normalisation before it";
        adopt(ctx, "saturated_units", L, f);
        return;
      }
    }
    f.root_cause = RootCause::kUnknown;
    f.message += ": the gradient stops inside " + ctx.layer_label(L);
    f.recommendation = "check the ops of " + ctx.layer_label(L) + " for a constant output (clipping, rounding, "
                       "comparison) that has no gradient";
  }
};

}  // namespace

std::unique_ptr<Rule> make_rule_unchanged_weights() { return std::make_unique<UnchangedWeights>(); }

}  // namespace dl::an
