// Dynamic: an attention softmax (a normalising op that is not a model output, whose
// probe reports its rows' entropy: an::OpFeature::kRowEntropy) whose every row is
// uniform from the first record on, and stays so: its scores are equal within each row,
// as when the query or key projection is zero (then the scores' gradients to both are
// zero too, and it never learns). Such an attention averages its values: it cannot
// select positions. Conclusive once it held for `min_epochs` epochs (or to the end).
// Placed at the first such softmax in graph order (its layer), at the first record.
#include <cmath>

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an {
namespace {

class UniformAttention : public Rule {
 public:
  std::string id() const override { return "uniform_attention"; }
  std::string description() const override {
    return "Attention weights exactly uniform over every row from the start (zero query/key projections)";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"min_entropy", 0.9999, "every row's entropy over log(row length) at least this: the scores' spread "
                                    "within a row is then below ~0.03 (healthy attention at initialisation "
                                    "measured <= 0.99 for its least uniform row, zero Q/K exactly 1)"},
            {"min_epochs", 2, "held for 2 epochs of updates: a small (not zero) initialisation has left the "
                              "uniform state by then"},
            {"min_records", 4, "at least this many records"}};
  }

  void check(const AnalysisContext& ctx, std::vector<Finding>& out) const override {
    const double floor = threshold(ctx, "min_entropy");
    if (auto hit = ru::first_persisted(
            ctx, OpFeature::kRowEntropy, [&](const TensorStats& v) { return v.min >= floor; },
            threshold(ctx, "min_epochs"), size_t(threshold(ctx, "min_records"))))
      out.push_back(make_finding(ctx, hit->first, hit->second));
  }

 private:
  Finding make_finding(const AnalysisContext& ctx, size_t probe, const ru::FeatureSpan& s) const {
    const Trace& t = ctx.trace();
    const Probe& p = ctx.header().probes[probe];
    const TensorStats& last = t.at(s.last_held, probe);
    Finding f = ctx.make(*this, sym::uniform_attention, Stage::kForward, p.layer, s.first);
    f.root_cause = RootCause::kInitialization;
    f.confidence = 0.9;
    f.message = ctx.layer_label(p.layer) + ": every row of the attention weights of " + p.node + " (" +
                std::to_string(p.op.units) + " positions) is uniform, from the first iteration through iteration " +
                std::to_string(t.records[s.last_held].iteration) + " (least uniform row: entropy " +
                ru::num(last.min) + " of the maximum): its scores are equal within each row, so the attention " +
                "only averages and never selects positions; with a zero query or key projection the scores get "
                "no gradient, and it stays so";
    f.recommendation = "initialise the query and key projections of the attention in " + ctx.layer_label(p.layer) +
                       " with random weights (Xavier/Glorot, as nn.MultiheadAttention does), not zeros";
    f.evidence = {{"node", p.node}, {"row_length", p.op.units}, {"min_row_entropy", last.min},
                  {"mean_row_entropy", last.mean}, {"records", s.held}, {"iterations", s.iterations}};
    return f;
  }
};

}  // namespace

std::unique_ptr<Rule> make_rule_uniform_attention() { return std::make_unique<UniformAttention>(); }

}  // namespace dl::an
