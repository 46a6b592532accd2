// A recurrent op's hidden state over the time steps (kStateFirst / kStateLast probes):
//   exploding: an op whose state its activations do not bound (op traits: bounded_state
//     false, e.g. a Relu cell) and whose state after the last step is growth_max x the
//     state after the first, or beyond state_max, or NaN/Inf while the first is finite.
//     Conclusive at once when non-finite; otherwise when the run falls short.
//   vanishing: (end of training, the run falls short) the state after the last step is
//     below vanish_ratio x the state after the first over the last records: what the first
//     steps carried is gone by the end of the sequence.
// Placed at the recurrent layer, from the first record where it held.
#include <algorithm>
#include <cmath>

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an {
namespace {

class ExplodingState : public Rule {
 public:
  std::string id() const override { return "exploding_state"; }
  std::string description() const override {
    return "Recurrent hidden state exploding or vanishing over the time steps";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"growth_max", 10, "rms(state after the last step) / rms(after the first) above this in an unbounded "
                               "cell: the Relu LSTM of models/modern reached 1.1e6; healthy (tanh) cells measured "
                               "<= 2.9 and cannot exceed |h| = 1"},
            {"state_max", 1000, "or a state value beyond this (|h| <= 1 for tanh cells)"},
            {"vanish_ratio", 1e-3, "the last step's state below 1/1000 of the first step's: healthy LSTM/GRU "
                                   "classifiers measured ratios of 0.95-2.9 (docs/rules.md)"},
            {"window", 20, "records at the end of the run over which the vanishing ratio is averaged"},
            {"min_improvement", 0.05, "the run falls short: the loss fell less than 5%..."},
            {"poor_fraction", 0.75, "...or the final accuracy is below chance + 75% of the way to 1"}};
  }

  void check(const AnalysisContext& ctx, std::vector<Finding>& out) const override {
    const auto first = ctx.probes(ProbeKind::kStateFirst), last = ctx.probes(ProbeKind::kStateLast);
    const bool short_run = ru::run_falls_short(ctx, threshold(ctx, "min_improvement"), threshold(ctx, "poor_fraction"));
    for (size_t i = 0; i < first.size() && i < last.size(); ++i) {
      if (exploding(ctx, first[i], last[i], short_run, out)) return;
      if (short_run && vanishing(ctx, first[i], last[i], out)) return;
    }
  }

 private:
  bool exploding(const AnalysisContext& ctx, size_t pf, size_t pl, bool short_run, std::vector<Finding>& out) const {
    const Trace& t = ctx.trace();
    const Probe& p = ctx.header().probes[pl];
    if (p.op.bounded_state) return false;
    for (size_t r = 0; r < t.size(); ++r) {
      const TensorStats& a = t.at(r, pf);
      const TensorStats& b = t.at(r, pl);
      if (a.count == 0 || b.count == 0 || !a.finite()) continue;
      const bool overflow = !b.finite();
      const double growth = overflow ? INFINITY : ru::rms_of(b) / std::max(ru::rms_of(a), 1e-30);
      if (!overflow && !(growth > threshold(ctx, "growth_max")) && !(b.max > threshold(ctx, "state_max"))) continue;
      if (!overflow && !short_run) return false;
      Finding f = ctx.make(*this, sym::exploding_state, Stage::kForward, p.layer, r);
      f.conclusive = true;
      f.confidence = 0.95;
      f.root_cause = RootCause::kActivation;
      f.message = ctx.layer_label(p.layer) + ": the hidden state of " + p.node + " (" + p.op_type + ") grows over " +
                  "the time steps " + (overflow ? std::string("until it overflows (NaN/Inf after the last step)")
                                                : "from rms " + ru::num(ru::rms_of(a)) + " after the first step to " +
                                                      ru::num(ru::rms_of(b)) + " after the last (max |h| " +
                                                      ru::num(b.max) + ")") +
                  ": its activations do not bound the state";
      f.recommendation = "use the bounded activations of the recurrent cell (the defaults: sigmoid gates, tanh for "
                         "the cell input and output) instead of Relu, or clip the cell (ONNX `clip`)";
      f.evidence = {{"node", p.node}, {"state_rms_first", ru::rms_of(a)}, {"state_max_last", b.max},
                    {"growth", overflow ? -1.0 : growth}, {"overflow", overflow}};
      if (!overflow) f.evidence["state_rms_last"] = ru::rms_of(b);
      out.push_back(f);
      return true;
    }
    return false;
  }

  bool vanishing(const AnalysisContext& ctx, size_t pf, size_t pl, std::vector<Finding>& out) const {
    const Trace& t = ctx.trace();
    const Probe& p = ctx.header().probes[pl];
    const size_t end = ru::finite_prefix(ctx);
    const size_t start = ru::window_start(end, static_cast<size_t>(std::max(1.0, threshold(ctx, "window"))));
    std::vector<double> ratios;
    for (size_t r = start; r < end; ++r) {
      const double a = ru::rms_of(t.at(r, pf)), b = ru::rms_of(t.at(r, pl));
      if (std::isfinite(a) && std::isfinite(b) && a > 0) ratios.push_back(b / a);
    }
    if (ratios.empty()) return false;
    const double ratio = ru::median(ratios);
    if (!(ratio < threshold(ctx, "vanish_ratio"))) return false;
    Finding f = ctx.make(*this, sym::vanishing_state, Stage::kForward, p.layer, start);
    f.conclusive = false;
    f.confidence = 0.7;
    f.root_cause = RootCause::kInitialization;
    f.message = ctx.layer_label(p.layer) + ": the hidden state of " + p.node + " (" + p.op_type + ") fades over " +
                "the time steps to " + ru::num(ratio) + " of its size after the first step: the end of the sequence "
                "keeps nothing of its start";
    f.recommendation = "initialise the forget-gate bias to 1 (LSTM) and the recurrent weights orthogonally, or "
                       "shorten the sequences";
    f.evidence = {{"node", p.node}, {"state_ratio", ratio}};
    out.push_back(f);
    return true;
  }
};

}  // namespace

std::unique_ptr<Rule> make_rule_exploding_state() { return std::make_unique<ExplodingState>(); }

}  // namespace dl::an
