// Static: input features with a large magnitude or wildly different scales (from the data
// summary). Not conclusive: many models train anyway; it counts when the run fails to learn.
#include <algorithm>
#include <cmath>

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an {
namespace {

class UnnormalizedInputs : public Rule {
 public:
  std::string id() const override { return "unnormalized_inputs"; }
  std::string description() const override {
    return "Input features with large magnitudes or very different scales (not standardised)";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"max_abs", 100, "features beyond |x| = 100 saturate sigmoid/tanh units and blow up first-layer "
                             "gradients with default initialisations (which assume inputs of order 1)"},
            {"max_std", 50, "a feature spread this wide dominates the first layer's pre-activations"},
            {"scale_ratio", 1000, "the largest over the smallest non-zero feature std: one learning rate cannot "
                                  "suit weights whose gradients differ by this factor"},
            {"confidence", 0.6, "confidence of the finding: unscaled inputs slow or stall training, not always"}};
  }

  void check(const AnalysisContext& ctx, std::vector<Finding>& out) const override {
    const DataSummary& d = ctx.header().data_summary;
    const std::vector<ColumnSummary>& cols = d.feature_columns;
    if (cols.empty() && d.all_features.max == 0 && d.all_features.min == 0) return;
    double max_abs = std::max(std::fabs(d.all_features.min), std::fabs(d.all_features.max));
    double max_std = d.all_features.std, min_std = INFINITY, top_std = 0;
    int widest = -1, narrowest = -1;
    for (size_t c = 0; c < cols.size(); ++c) {
      const double s = cols[c].std;
      if (!std::isfinite(s)) continue;
      if (s > top_std) top_std = s, widest = static_cast<int>(c);
      if (s > 0 && s < min_std) min_std = s, narrowest = static_cast<int>(c);
    }
    max_std = std::max(max_std, top_std);
    const double ratio = std::isfinite(min_std) && min_std > 0 ? top_std / min_std : 1.0;
    const bool large = max_abs > threshold(ctx, "max_abs") || max_std > threshold(ctx, "max_std");
    const bool mixed = ratio > threshold(ctx, "scale_ratio");
    if (!large && !mixed) return;
    // Pixel data: non-negative, at most 255 (the usual unscaled image encoding).
    const bool pixels = d.all_features.min >= 0 && d.all_features.max <= 255 && d.all_features.max > 127;

    Finding f = ctx.make(*this, "unnormalized_inputs", Stage::kStatic, -1, std::nullopt);
    f.root_cause = RootCause::kData;
    f.conclusive = false;
    f.confidence = threshold(ctx, "confidence");
    if (large)
      f.message = "the input features are not normalised: values reach |x| = " + ru::num(max_abs) +
                  " with a standard deviation up to " + ru::num(max_std) + " (inputs of order 1 are expected)";
    else
      f.message = "the input features have very different scales: feature " + std::to_string(widest) +
                  " has std " + ru::num(top_std) + " but feature " + std::to_string(narrowest) + " has std " +
                  ru::num(min_std) + " (ratio " + ru::num(ratio) + ")";
    f.recommendation = pixels && large ? "the inputs look like 0..255 pixel values: divide them by 255 (or "
                                         "standardise them) before training"
                                       : "standardise every feature column before training: x = (x - mean) / std "
                                         "with the training set's mean and std";
    f.evidence = {{"max_abs", max_abs}, {"max_std", max_std}, {"std_ratio", ratio},
                  {"feature_min", d.all_features.min}, {"feature_max", d.all_features.max},
                  {"widest_feature", widest}, {"narrowest_feature", narrowest}};
    if (pixels) f.evidence["pixel_range"] = true;
    out.push_back(std::move(f));
  }
};

}  // namespace

std::unique_ptr<Rule> make_rule_unnormalized_inputs() { return std::make_unique<UnnormalizedInputs>(); }

}  // namespace dl::an
