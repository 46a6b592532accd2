// Static: input features with a large magnitude or wildly different scales, and unscaled
// regression targets (from the data summary). Not conclusive: many models train anyway; it
// counts when the run fails to learn. A model that normalises its input in the graph
// (element-wise steps before the first parameterised op whose output is in range) is fine.
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
    return "Input features with large magnitudes or very different scales (not standardised), unscaled "
           "regression targets";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"max_abs", 100, "features beyond |x| = 100 saturate sigmoid/tanh units and blow up first-layer "
                             "gradients with default initialisations (which assume inputs of order 1)"},
            {"max_std", 50, "a feature spread this wide dominates the first layer's pre-activations"},
            {"scale_ratio", 1000, "the largest over the smallest non-zero feature std: one learning rate cannot "
                                  "suit weights whose gradients differ by this factor"},
            {"max_offset", 10, "a feature whose values sit around |mean| > 10, far from 0 compared with their "
                               "spread (see offset_ratio), is not centred: every first-layer unit sees a large "
                               "constant input"},
            {"offset_ratio", 3, "the offset counts when |mean| exceeds this many standard deviations"},
            {"max_target_abs", 1000, "regression targets beyond |y| = 1000 give losses and gradients of order "
                                     "1e6 with outputs that start near 0: scale them"},
            {"confidence", 0.6, "confidence of the finding: unscaled inputs slow or stall training, not always"}};
  }

  void check(const AnalysisContext& ctx, std::vector<Finding>& out) const override {
    features(ctx, out);
    targets(ctx, out);
  }

 private:
  // The model normalises its input itself: element-wise steps before the first layer's
  // parameterised op, whose output stays within max_abs in the first record.
  bool normalized_in_graph(const AnalysisContext& ctx) const {
    if (ctx.header().layers.empty()) return false;
    std::optional<size_t> last_pre;
    for (size_t k : ru::layer_forward_probes(ctx, 0)) {
      const OpDescription& op = ctx.header().probes[k].op;
      if (op.role == "parameterized") break;
      if (op.role != "shape") last_pre = k;
    }
    if (!last_pre || ctx.trace().size() == 0) return false;
    const TensorStats& s = ctx.trace().at(0, *last_pre);
    return s.finite() && std::max(std::fabs(s.min), std::fabs(s.max)) <= threshold(ctx, "max_abs");
  }

  void features(const AnalysisContext& ctx, std::vector<Finding>& out) const {
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
    int offset_feature = -1;
    for (size_t c = 0; c < cols.size() && offset_feature < 0; ++c)
      if (std::fabs(cols[c].mean) > threshold(ctx, "max_offset") &&
          std::fabs(cols[c].mean) > threshold(ctx, "offset_ratio") * cols[c].std)
        offset_feature = static_cast<int>(c);
    const bool large = max_abs > threshold(ctx, "max_abs") || max_std > threshold(ctx, "max_std") ||
                       offset_feature >= 0;
    const bool mixed = ratio > threshold(ctx, "scale_ratio");
    if ((!large && !mixed) || normalized_in_graph(ctx)) return;
    // Pixel data: non-negative, at most 255 (the usual unscaled image encoding).
    const bool pixels = d.all_features.min >= 0 && d.all_features.max <= 255 && d.all_features.max > 127;

    Finding f = ctx.make(*this, sym::unnormalized_inputs, Stage::kStatic, -1, std::nullopt);
    f.root_cause = RootCause::kData;
    f.conclusive = false;
    f.confidence = threshold(ctx, "confidence");
    if (large && offset_feature >= 0 && max_abs <= threshold(ctx, "max_abs"))
      f.message = "the input features are not centred: feature " + std::to_string(offset_feature) + " has mean " +
                  ru::num(cols[size_t(offset_feature)].mean) + " and std " + ru::num(cols[size_t(offset_feature)].std) +
                  " (inputs of order 1 around 0 are expected)";
    else if (large)
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
    if (offset_feature >= 0) f.evidence["offset_feature"] = offset_feature;
    if (pixels) f.evidence["pixel_range"] = true;
    out.push_back(std::move(f));
  }

  void targets(const AnalysisContext& ctx, std::vector<Finding>& out) const {
    const TraceHeader& h = ctx.header();
    if (!ru::is_regression_loss(ru::config(h, "loss"))) return;
    double max_abs = 0;
    int column = -1;
    for (size_t c = 0; c < h.data_summary.target_columns.size(); ++c) {
      const ColumnSummary& col = h.data_summary.target_columns[c];
      const double a = std::max(std::fabs(col.min), std::fabs(col.max));
      if (a > max_abs) max_abs = a, column = static_cast<int>(c);
    }
    if (max_abs <= threshold(ctx, "max_target_abs")) return;
    // A bounded output that cannot reach them is output_range's finding (root cause data too).
    const ru::OutputLayer o = ru::output_layer(ctx);
    if (std::isfinite(o.op.out_lo) || std::isfinite(o.op.out_hi)) return;
    const ColumnSummary& col = h.data_summary.target_columns[size_t(column)];
    Finding f = ctx.make(*this, sym::unnormalized_targets, Stage::kStatic, -1, std::nullopt);
    f.root_cause = RootCause::kData;
    f.conclusive = false;
    f.confidence = threshold(ctx, "confidence");
    f.message = "the regression targets are not scaled: target column " + std::to_string(column) + " spans [" +
                ru::num(col.min) + ", " + ru::num(col.max) + "] (mean " + ru::num(col.mean) + ", std " +
                ru::num(col.std) + "), so the " + ru::config(h, "loss") + " loss and its gradients start huge for an "
                "output that starts near 0";
    f.recommendation = "standardise the targets before training: y = (y - mean) / std (and invert it on the "
                       "predictions)";
    f.evidence = {{"target_column", column}, {"target_min", col.min}, {"target_max", col.max},
                  {"target_mean", col.mean}, {"target_std", col.std}};
    out.push_back(std::move(f));
  }
};

}  // namespace

std::unique_ptr<Rule> make_rule_unnormalized_inputs() { return std::make_unique<UnnormalizedInputs>(); }

}  // namespace dl::an
