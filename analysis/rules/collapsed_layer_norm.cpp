// Dynamic: a normalising layer (LayerNormalization; its probe reports each row's
// normalised scale sqrt(var / (var + epsilon)): an::OpFeature::kNormalizedScale) whose
// rows come out (nearly) constant from the first record on: the layer then outputs its
// bias whatever its input, its Scale gets no gradient (the normalised values are 0) and
// nothing before it can learn through it. Two ways users get there: normalising over a
// single value (nn.LayerNorm(1) after an unsqueeze, or normalized_shape set to a
// singleton axis: one value minus its mean is 0), or an epsilon far larger than the
// variance of the rows it normalises. Conclusive at once for a row of one value (the
// output is the bias by construction), else once it held for `min_epochs` epochs (or to
// the end). Placed at the first such layer in graph order, at the first record.
#include <cmath>

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an {
namespace {

class CollapsedLayerNorm : public Rule {
 public:
  std::string id() const override { return "collapsed_layer_norm"; }
  std::string description() const override {
    return "Normalisation layer whose rows are constant (a row of one value, or epsilon >> variance): "
           "it outputs only its bias";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"max_scale", 0.1, "mean normalised row scale sqrt(var / (var + eps)) at most this: the output keeps "
                               "under 10% of the input's variation (healthy LayerNorms measured >= 0.99, a row of "
                               "one value exactly 0)"},
            {"min_epochs", 1, "held from the first record for an epoch of updates when the rows hold several "
                              "values (the layer before may still grow its outputs)"},
            {"min_records", 1, "at least this many records"}};
  }

  void check(const AnalysisContext& ctx, std::vector<Finding>& out) const override {
    const double ceiling = threshold(ctx, "max_scale");
    for (size_t k : ru::feature_probes(ctx, OpFeature::kNormalizedScale)) {
      const Probe& p = ctx.header().probes[k];
      const ru::FeatureSpan s = ru::feature_span(ctx, k, [&](const TensorStats& v) { return v.mean <= ceiling; });
      const bool single = p.op.units == 1;  // one value per row: constant by construction
      if (!(single ? s.all() && s.held >= 1
                   : ru::persisted(ctx, s, threshold(ctx, "min_epochs"), size_t(threshold(ctx, "min_records")))))
        continue;
      out.push_back(make_finding(ctx, k, s, single));
      return;
    }
  }

 private:
  Finding make_finding(const AnalysisContext& ctx, size_t probe, const ru::FeatureSpan& s, bool single) const {
    const Trace& t = ctx.trace();
    const Probe& p = ctx.header().probes[probe];
    const TensorStats& first = t.at(s.first, probe);
    Finding f = ctx.make(*this, sym::collapsed_layer_norm, Stage::kForward, p.layer, s.first);
    f.root_cause = RootCause::kArchitecture;
    f.confidence = single ? 0.95 : 0.8;
    const std::string what = ctx.layer_label(p.layer) + ": " + p.node;
    if (single) {
      f.message = what + " normalises rows of a single value: each value minus its own mean is 0, so the layer "
                  "outputs its bias for every input and no gradient reaches the layers before it";
      f.recommendation = "normalise over the feature axis (nn.LayerNorm(num_features) on [batch, ..., "
                         "num_features]), or use BatchNorm1d for per-feature normalisation across the batch";
    } else {
      f.message = what + " outputs nearly constant rows from the first iteration: the normalised values keep " +
                  ru::num(first.mean) + " of their input's spread (rows of " + std::to_string(p.op.units) +
                  " values), as when epsilon is far larger than the rows' variance; the layer passes mostly its "
                  "bias";
      f.recommendation = "use a small epsilon (1e-5, PyTorch's default) or scale up the input of " + p.node +
                         " so its rows' variance is well above epsilon";
    }
    f.evidence = {{"node", p.node}, {"row_length", p.op.units}, {"mean_normalized_scale", first.mean},
                  {"max_normalized_scale", first.max}, {"records", s.held}, {"iterations", s.iterations}};
    return f;
  }
};

}  // namespace

std::unique_ptr<Rule> make_rule_collapsed_layer_norm() { return std::make_unique<CollapsedLayerNorm>(); }

}  // namespace dl::an
