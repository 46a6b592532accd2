// Trend (end of training, only when the run falls short): a recurrent op (op traits:
// recurrent) whose sigmoid gates or tanh candidates sit within kGateMargin of their
// bounds for most values over the last records (the kGates / kCandidates probes, reduced
// by the op). A saturated gate passes no gradient through time: the layer stops learning.
// Placed at the recurrent layer, from the first record where it saturated.
#include <algorithm>
#include <cmath>

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an {
namespace {

class SaturatedGates : public Rule {
 public:
  std::string id() const override { return "saturated_gates"; }
  std::string description() const override {
    return "Recurrent gates (LSTM/GRU sigmoid gates, tanh candidates) stuck at their bounds";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"sat_frac", 0.5, "mean fraction of gate or candidate values within 0.01 of their bounds over the last "
                              "records: healthy LSTM/GRU classifiers measured <= 0.06 (models/modern, parity "
                              "fixtures), the faulty ones 0.91-0.997 (docs/rules.md)"},
            {"window", 20, "records at the end of the run over which the fraction is averaged"},
            {"min_improvement", 0.05, "the run falls short: the loss fell less than 5%..."},
            {"poor_fraction", 0.75, "...or the final accuracy is below chance + 75% of the way to 1"},
            {"input_max_abs", 20, "inputs beyond |x| = 20 saturate a first recurrent layer with default "
                                  "initialisations (|pre-activation| > ~4.6 is saturated)"},
            {"large_update", 0.1, "a layer update ratio above this before saturation means the learning rate "
                                  "pushed it there (healthy runs: at most 0.04)"}};
  }

  void check(const AnalysisContext& ctx, std::vector<Finding>& out) const override {
    if (!ru::run_falls_short(ctx, threshold(ctx, "min_improvement"), threshold(ctx, "poor_fraction"))) return;
    const Trace& t = ctx.trace();
    const size_t end = ru::finite_prefix(ctx);
    const size_t start = ru::window_start(end, static_cast<size_t>(std::max(1.0, threshold(ctx, "window"))));
    if (end < start + 1) return;
    const double sat = threshold(ctx, "sat_frac");
    for (ProbeKind kind : {ProbeKind::kGates, ProbeKind::kCandidates}) {
      for (size_t k : ctx.probes(kind)) {
        const double mean = ru::mean_over(t, k, start, end, &TensorStats::sat_frac);
        if (!(mean >= sat)) continue;
        size_t onset = start;
        for (size_t r = 0; r < end; ++r)
          if (t.at(r, k).count > 0 && t.at(r, k).sat_frac >= sat) {
            onset = r;
            break;
          }
        out.push_back(make_finding(ctx, k, onset, mean));
        return;
      }
    }
  }

 private:
  Finding make_finding(const AnalysisContext& ctx, size_t probe, size_t onset, double mean) const {
    const Trace& t = ctx.trace();
    const TraceHeader& h = ctx.header();
    const Probe& p = h.probes[probe];
    const bool gates = p.kind == ProbeKind::kGates;
    Finding f = ctx.make(*this, sym::saturated_gates, Stage::kForward, p.layer, onset);
    f.conclusive = true;  // the run fell short and the layer's gates pass no gradient
    f.confidence = 0.85;
    f.message = ctx.layer_label(p.layer) + ": " + ru::num(100 * mean) + "% of the " +
                (gates ? "gate values (sigmoid)" : "candidate values (tanh)") + " of " + p.node + " (" + p.op_type +
                ") sit within " + ru::num(kGateMargin) + " of their bounds over the last records, where they pass "
                "almost no gradient through time";
    f.evidence = {{"node", p.node}, {"sat_frac", mean}, {"first_sat_frac", t.at(0, probe).sat_frac},
                  {"gates", gates ? "sigmoid" : "candidate"}};
    const ru::InputScale in = ru::input_scale(h);
    int upd_layer = -1;
    const double upd = ru::max_update_ratio(ctx, 0, onset + 1, &upd_layer);
    f.evidence["input_max_abs"] = in.max_abs;
    f.evidence["max_update_ratio"] = upd;
    bool first_param_layer = true;
    for (const ru::LayerParamProbes& l : ru::param_probes(ctx)) first_param_layer = first_param_layer && l.layer >= p.layer;
    const double lr = ru::learning_rate(h);
    if (first_param_layer && in.max_abs > threshold(ctx, "input_max_abs")) {
      f.root_cause = RootCause::kData;
      f.message += "; the inputs are not normalised (|x| up to " + ru::num(in.max_abs) + ")";
      f.recommendation = "standardise the input features (x = (x - mean) / std per feature) so the gates' "
                         "pre-activations stay in the sensitive range";
    } else if (upd > threshold(ctx, "large_update")) {
      f.root_cause = RootCause::kLearningRate;
      f.message += "; it saturated after large updates (up to " + ru::num(upd) + " of " +
                   ctx.layer_label(upd_layer) + "'s weight norm in one step)";
      f.recommendation = "lower the learning rate tenfold (--lr " + ru::num(lr / 10) + "), or clip the gradients "
                         "(--clipnorm 1), as recurrent networks usually need";
    } else {
      f.root_cause = RootCause::kInitialization;
      f.recommendation = "initialise " + ctx.layer_label(p.layer) + "'s recurrent weights orthogonally and its "
                         "input weights with Glorot/Xavier, with a forget-gate bias of 1";
    }
    return f;
  }
};

}  // namespace

std::unique_ptr<Rule> make_rule_saturated_gates() { return std::make_unique<SaturatedGates>(); }

}  // namespace dl::an
