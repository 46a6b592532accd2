// Trend (end of training, only when the run fails to learn): a bounded saturating
// activation (sigmoid/tanh family, from the op traits; normalising ops such as an output
// softmax are left to the output rules) whose outputs sit in the saturation bands for most
// values over the last records. Conclusive only when the layer's weights also stopped
// moving. Placed at the first saturated layer in graph order, from the first record where
// it saturated.
#include <algorithm>
#include <cmath>

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an {
namespace {

class SaturatedUnits : public Rule {
 public:
  std::string id() const override { return "saturated_units"; }
  std::string description() const override {
    return "Sigmoid/tanh-family outputs stuck in their saturation bands (vanishing local gradient)";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"sat_frac", 0.75, "mean fraction of outputs within 0.1% of the op's bounds over the last records: "
                               "healthy hidden sigmoid/tanh layers measured <= 0.4%, a badly initialised stack 84-90%"},
            {"window", 20, "records at the end of the run over which the fraction is averaged"},
            {"min_improvement", 0.05, "only when the loss fell less than 5% (the failing-to-learn gate)"},
            {"vanish_update", 1e-6, "the layer's ||dw||/||w|| per step below this as well: its gradient vanished "
                                    "too (conclusive)"},
            {"input_max_abs", 20, "inputs beyond |x| = 20 saturate a first sigmoid/tanh layer with default "
                                  "initialisations (|pre-activation| > ~7 is saturated)"},
            {"large_init_std", 1.0, "initial weights with std above 1 (Glorot gives ~0.1-0.3) saturate from the start"},
            {"large_update", 0.1, "a layer update ratio above this before saturation means the learning rate "
                                  "pushed it there (healthy runs: at most 0.04)"}};
  }

  void check(const AnalysisContext& ctx, std::vector<Finding>& out) const override {
    if (!ctx.final() || !ctx.failing_to_learn(threshold(ctx, "min_improvement"))) return;
    const Trace& t = ctx.trace();
    const size_t end = ru::finite_prefix(ctx);
    const size_t start = ru::window_start(end, static_cast<size_t>(std::max(1.0, threshold(ctx, "window"))));
    if (end < start + 3) return;
    const auto& probes = ctx.header().probes;
    const double sat = threshold(ctx, "sat_frac");
    for (size_t k : ctx.probes(ProbeKind::kForward)) {
      const OpDescription& op = probes[k].op;
      if (!op.saturates || op.normalizes || !std::isfinite(op.out_lo) || !std::isfinite(op.out_hi)) continue;
      double mean = 0;
      for (size_t r = start; r < end; ++r) mean += t.at(r, k).sat_frac;
      mean /= double(end - start);
      if (mean < sat) continue;
      size_t onset = start;
      for (size_t r = 0; r < end; ++r)
        if (t.at(r, k).sat_frac >= sat) {
          onset = r;
          break;
        }
      out.push_back(make_finding(ctx, k, onset, mean, start, end));
      return;
    }
  }

 private:
  Finding make_finding(const AnalysisContext& ctx, size_t probe, size_t onset, double mean, size_t start,
                       size_t end) const {
    const Trace& t = ctx.trace();
    const TraceHeader& h = ctx.header();
    const Probe& p = h.probes[probe];
    const auto layers = ru::param_probes(ctx);
    double update = NAN;
    bool first_param_layer = true;
    for (const ru::LayerParamProbes& l : layers) {
      if (l.layer < p.layer) first_param_layer = false;
      if (l.layer != p.layer) continue;
      std::vector<double> v;
      for (size_t r = start; r < end; ++r) v.push_back(ru::layer_update_ratio(t, r, l));
      update = ru::median(v);
    }
    const bool vanished = std::isfinite(update) && update < threshold(ctx, "vanish_update");
    Finding f = ctx.make(*this, sym::saturated_units, Stage::kForward, p.layer, onset);
    f.conclusive = vanished;
    f.confidence = vanished ? 0.9 : 0.65;
    f.message = ctx.layer_label(p.layer) + ": " + ru::num(100 * mean) + "% of the outputs of " + p.node +
                " sit within 0.1% of its bounds " + ru::range_text(p.op.out_lo, p.op.out_hi) +
                " over the last records, where its gradient is nearly zero" +
                (vanished ? ", and its weights stopped moving (" + ru::num(update) + " of their norm per step)" : "");
    f.evidence = {{"node", p.node}, {"sat_frac", mean}, {"first_sat_frac", t.at(0, probe).sat_frac}};
    if (std::isfinite(update)) f.evidence["update_ratio"] = update;
    const ru::InputScale in = ru::input_scale(h);
    const double lr = ru::learning_rate(h);
    int upd_layer = -1;
    const double upd = ru::max_update_ratio(ctx, 0, onset, &upd_layer);
    const double init_std = initial_std(ctx, p.layer);
    f.evidence["input_max_abs"] = in.max_abs;
    if (std::isfinite(init_std)) f.evidence["initial_weight_std"] = init_std;
    if (first_param_layer && in.max_abs > threshold(ctx, "input_max_abs")) {
      f.root_cause = RootCause::kData;
      f.message += "; the inputs are not normalised (|x| up to " + ru::num(in.max_abs) + ")";
      f.recommendation = "standardise the input features (x = (x - mean) / std per feature) so the first layer's "
                         "pre-activations stay in the sensitive range";
    } else if (onset == 0 && init_std > threshold(ctx, "large_init_std")) {
      f.root_cause = RootCause::kInitialization;
      f.message += "; it is saturated from the first iteration: its initial weights have std " + ru::num(init_std);
      f.recommendation = "initialise " + ctx.layer_label(p.layer) + " with Glorot/Xavier initialisation (std about "
                         "sqrt(2 / (fan_in + fan_out))) instead of large weights";
    } else if (onset > 0 && upd > threshold(ctx, "large_update")) {
      f.root_cause = RootCause::kLearningRate;
      f.message += "; it saturated after large updates (up to " + ru::num(upd) + " of " +
                   ctx.layer_label(upd_layer) + "'s weight norm in one step)";
      f.recommendation = "lower the learning rate tenfold (--lr " + ru::num(lr / 10) + ")";
    } else {
      f.root_cause = RootCause::kActivation;
      f.recommendation = "replace " + p.node + " (" + p.op_type + ") with ReLU in the hidden layers, or add batch "
                         "normalisation before it to keep its inputs in the sensitive range";
    }
    return f;
  }

  // The initial std of the layer's largest parameter (its weight matrix), NaN when unknown.
  static double initial_std(const AnalysisContext& ctx, int layer) {
    const TraceHeader& h = ctx.header();
    if (layer < 0 || layer >= static_cast<int>(h.layers.size())) return NAN;
    const InitializerSummary* w = nullptr;
    for (const std::string& name : h.layers[size_t(layer)].params)
      for (const InitializerSummary& s : h.initializers)
        if (s.name == name && (!w || s.count > w->count)) w = &s;
    return w ? w->std : NAN;
  }
};

}  // namespace

std::unique_ptr<Rule> make_rule_saturated_units() { return std::make_unique<SaturatedUnits>(); }

}  // namespace dl::an
