// Dynamic: an attention softmax (a normalising op that is not a model output, whose
// probe reports its rows' entropy: an::OpFeature::kRowEntropy) collapsed from the first
// record on: nearly every row puts all its weight on one position. Its outputs then sit
// in the softmax's saturation bands, where the gradient to the scores vanishes, so the
// query and key projections cannot learn out of it: each position reads one fixed
// position. Trained attention sharpens too, but from a spread start; a collapse already
// at the first iteration comes from scores in the tens or hundreds: too large query/key
// weights (or an unscaled dot product). Conclusive once it held for `min_epochs` epochs
// (or to the end). Placed at the first such softmax in graph order, at the first record.
#include <cmath>

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an {
namespace {

class CollapsedAttention : public Rule {
 public:
  std::string id() const override { return "collapsed_attention"; }
  std::string description() const override {
    return "Attention softmax collapsed onto one position per row from the start (saturated, no gradient)";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"max_entropy", 0.05, "mean row entropy over log(row length) at most this (one-hot rows: ~0; "
                                  "healthy attention at initialisation measured >= 0.9, trained <= 0.5 lower)"},
            {"min_epochs", 2, "held from the first record for 2 epochs of updates: healthy attention starts "
                              "spread and sharpens only while it learns"},
            {"min_records", 4, "at least this many records"}};
  }

  void check(const AnalysisContext& ctx, std::vector<Finding>& out) const override {
    const double ceiling = threshold(ctx, "max_entropy");
    if (auto hit = ru::first_persisted(
            ctx, OpFeature::kRowEntropy, [&](const TensorStats& v) { return v.mean <= ceiling; },
            threshold(ctx, "min_epochs"), size_t(threshold(ctx, "min_records"))))
      out.push_back(make_finding(ctx, hit->first, hit->second));
  }

 private:
  Finding make_finding(const AnalysisContext& ctx, size_t probe, const ru::FeatureSpan& s) const {
    const Trace& t = ctx.trace();
    const Probe& p = ctx.header().probes[probe];
    const TensorStats& first = t.at(s.first, probe);
    Finding f = ctx.make(*this, sym::collapsed_attention, Stage::kForward, p.layer, s.first);
    f.root_cause = RootCause::kInitialization;
    f.confidence = 0.85;
    f.message = ctx.layer_label(p.layer) + ": the attention weights of " + p.node + " (" +
                std::to_string(p.op.units) + " positions) are collapsed from the first iteration (mean row "
                "entropy " + ru::num(first.mean) + " of the maximum through iteration " +
                std::to_string(t.records[s.last_held].iteration) + "): each row puts its weight on one position, "
                "where the softmax passes almost no gradient to the scores, so the attention cannot learn "
                "where to look";
    f.recommendation = "scale down the query and key projections of the attention in " + ctx.layer_label(p.layer) +
                       " (Xavier/Glorot initialisation) and keep the 1/sqrt(head dim) scaling of the scores";
    f.evidence = {{"node", p.node}, {"row_length", p.op.units}, {"mean_row_entropy", first.mean},
                  {"max_row_entropy", first.max}, {"records", s.held}, {"iterations", s.iterations}};
    // The softmax's own forward probe: its fraction of saturated outputs.
    for (size_t k : ctx.probes(ProbeKind::kForward))
      if (ctx.header().probes[k].step == p.step) f.evidence["sat_frac"] = t.at(s.first, k).sat_frac;
    return f;
  }
};

}  // namespace

std::unique_ptr<Rule> make_rule_collapsed_attention() { return std::make_unique<CollapsedAttention>(); }

}  // namespace dl::an
