// Dynamic: units of an op with a dead zone (ReLU family, from the op traits) that stay in
// it for the whole batch. A layer whose units are all dead for `window` records running to
// the end of the trace (output all zeros, no gradient into its parameters) can never
// recover: conclusive. A mostly dead layer (>= partial_frac of its units over the last
// records) is a warning that counts when the run fails to learn. Placed at the first dead
// layer in graph order, from the first record of the dead stretch.
#include <algorithm>
#include <cmath>

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an {
namespace {

class DeadUnits : public Rule {
 public:
  std::string id() const override { return "dead_units"; }
  std::string description() const override {
    return "ReLU-family layers whose units are dead (in the dead zone) for every sample";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"dead_frac", 1.0, "fraction of a layer's units dead for the whole batch that makes it dead: at 1.0 the "
                               "output is all zeros and no gradient reaches anything before it"},
            {"window", 20, "records the layer must stay dead, up to the end of the trace, to be conclusive (a "
                           "momentum optimizer can still move it for a few steps)"},
            {"partial_frac", 0.7, "mean fraction of dead units over the last window for a warning: healthy ReLU "
                                  "layers measured at most 0.43 (deep MLP), 0.25 typical"},
            {"min_improvement", 0.05, "warnings only when the loss fell less than 5% (the failing-to-learn gate)"},
            {"large_update", 0.1, "a layer update ratio ||dw||/||w|| above this before the units died means the "
                                  "learning rate killed them (healthy runs: at most 0.04)"},
            {"input_max_abs", 100, "inputs beyond |x| = 100 push pre-activations far from zero: root cause data"}};
  }

  void check(const AnalysisContext& ctx, std::vector<Finding>& out) const override {
    const Trace& t = ctx.trace();
    const size_t end = ru::finite_prefix(ctx);
    if (end == 0) return;
    const auto& probes = ctx.header().probes;
    const auto layers = ru::param_probes(ctx);
    const size_t window = static_cast<size_t>(std::max(1.0, threshold(ctx, "window")));
    const double full = threshold(ctx, "dead_frac") - 1e-6;
    std::vector<Finding> found;
    for (size_t k : ctx.probes(ProbeKind::kForward)) {
      if (!probes[k].op.has_dead_zone) continue;
      const int layer = probes[k].layer;
      const ru::LayerParamProbes* params = nullptr;
      for (const auto& p : layers)
        if (p.layer == layer) params = &p;
      // The dead stretch ending at the last finite record; with dead_frac 1 the layer's own
      // parameters get no gradient while it lasts (a dead layer passes none back).
      size_t run = 0;
      while (run < end) {
        const size_t r = end - 1 - run;
        const bool dead = t.at(r, k).dead_units >= full;
        const bool no_grad = full < 1.0 - 1e-5 || !params || params->grad.empty() ||
                             ru::combined_l2(t, r, params->grad) == 0.0;
        if (!dead || !no_grad) break;
        ++run;
      }
      std::optional<Finding> f;
      if (run >= window) {
        f = make_finding(ctx, k, end - run, true, run);
      } else if (ctx.final() && ctx.failing_to_learn(threshold(ctx, "min_improvement"))) {
        const size_t start = ru::window_start(end, window);
        double mean = 0;
        for (size_t r = start; r < end; ++r) mean += t.at(r, k).dead_units;
        mean /= double(end - start);
        if (end - start >= std::min<size_t>(window, 3) && mean >= threshold(ctx, "partial_frac")) {
          size_t onset = start;
          for (size_t r = 0; r < end; ++r)
            if (t.at(r, k).dead_units >= threshold(ctx, "partial_frac")) {
              onset = r;
              break;
            }
          f = make_finding(ctx, k, onset, false, end - start);
          f->evidence["mean_dead_units"] = mean;
        }
      }
      if (f) found.push_back(std::move(*f));
    }
    if (found.empty()) return;
    // The first dead layer in graph order; a fully dead layer before a partly dead one.
    auto primary = std::find_if(found.begin(), found.end(), [](const Finding& f) { return f.conclusive; });
    if (primary == found.end()) primary = found.begin();
    std::vector<std::string> others;
    for (auto it = found.begin(); it != found.end(); ++it)
      if (it != primary) others.push_back(ctx.layer_label(it->layer));
    if (!others.empty()) primary->evidence["other_dead_layers"] = others;
    out.push_back(std::move(*primary));
  }

 private:
  Finding make_finding(const AnalysisContext& ctx, size_t probe, size_t onset, bool dead, size_t records) const {
    const Trace& t = ctx.trace();
    const Probe& p = ctx.header().probes[probe];
    const size_t last = ru::finite_prefix(ctx) - 1;
    const TensorStats& s = t.at(last, probe);
    Finding f = ctx.make(*this, sym::dead_units, Stage::kForward, p.layer, onset);
    f.conclusive = dead;
    f.confidence = dead ? 0.95 : 0.6;
    const int64_t units = p.op.units;
    const bool whole = s.dead_units >= 1.0f - 1e-6f;
    f.message = ctx.layer_label(p.layer) + ": " +
                (dead && whole
                     ? "all " + (units > 0 ? std::to_string(units) + " " : std::string()) + "units of " + p.node +
                           " are dead (output all zeros for every sample) for the last " + std::to_string(records) +
                           " recorded iterations, so no gradient flows through it"
                 : dead ? ru::num(100 * s.dead_units) + "% of the units of " + p.node +
                              " have been dead for the whole batch for the last " + std::to_string(records) +
                              " recorded iterations"
                      : ru::num(100 * s.dead_units) + "% of the units of " + p.node +
                            " are dead for the whole batch at the end of training");
    f.evidence = {{"node", p.node}, {"dead_units", s.dead_units}, {"dead_frac", s.dead_frac},
                  {"records", records}, {"units", units}};
    const ru::InputScale in = ru::input_scale(ctx.header());
    const double lr = ru::learning_rate(ctx.header());
    int upd_layer = -1;
    const double upd = ru::max_update_ratio(ctx, 0, onset, &upd_layer);
    f.evidence["input_max_abs"] = in.max_abs;
    f.evidence["max_update_ratio_before"] = upd;
    if (in.max_abs > threshold(ctx, "input_max_abs")) {
      f.root_cause = RootCause::kData;
      f.message += "; the inputs are not normalised (|x| up to " + ru::num(in.max_abs) + ")";
      f.recommendation = "standardise the input features (x = (x - mean) / std per feature) so pre-activations start "
                         "near zero";
    } else if (onset == 0) {
      f.root_cause = RootCause::kInitialization;
      const std::string bias = bias_text(ctx, p.layer);
      f.message += "; it is dead from the first iteration" + (bias.empty() ? "" : " (" + bias + ")");
      f.recommendation = "initialise " + ctx.layer_label(p.layer) + " with zero (or small positive) biases and He "
                         "initialisation for the weights, or use LeakyReLU";
      if (!bias.empty()) f.evidence["bias"] = bias;
    } else if (upd > threshold(ctx, "large_update")) {
      f.root_cause = RootCause::kLearningRate;
      f.message += "; it died after large updates (up to " + ru::num(upd) + " of " + ctx.layer_label(upd_layer) +
                   "'s weight norm in one step)";
      f.recommendation = "lower the learning rate tenfold (--lr " + ru::num(lr / 10) + ") or use LeakyReLU";
    } else {
      f.root_cause = RootCause::kActivation;
      f.message += "; its units died during training without large updates";
      f.recommendation = "replace " + p.node + " with LeakyReLU (or ELU) so units keep a gradient, and use He "
                         "initialisation";
    }
    return f;
  }

  // The initial mean of the layer's bias (its smallest parameter), e.g. "bias mean -20".
  static std::string bias_text(const AnalysisContext& ctx, int layer) {
    const TraceHeader& h = ctx.header();
    if (layer < 0 || layer >= static_cast<int>(h.layers.size())) return "";
    const InitializerSummary* bias = nullptr;
    for (const std::string& name : h.layers[size_t(layer)].params)
      for (const InitializerSummary& s : h.initializers)
        if (s.name == name && (!bias || s.count < bias->count)) bias = &s;
    if (!bias || h.layers[size_t(layer)].params.size() < 2) return "";
    return "initial " + bias->name + " mean " + ru::num(bias->mean);
  }
};

}  // namespace

std::unique_ptr<Rule> make_rule_dead_units() { return std::make_unique<DeadUnits>(); }

}  // namespace dl::an
