// Static: the last layer's output range cannot cover the regression targets (ReLU output
// with negative targets, sigmoid/tanh output with targets beyond its bounds, softmax rows
// that must sum to 1 for targets that do not).
#include <algorithm>
#include <cmath>

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an {
namespace {

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// Estimated share of a column's values outside [lo, hi]: exact 0 when min/max lie inside,
// else from a normal approximation with the column's mean and std.
double share_outside(const ColumnSummary& c, double lo, double hi, int64_t rows) {
  // Exact where the data summary counted the values beyond the usual bounds (0, -1, 1).
  const int64_t finite = rows - c.nan - c.inf;
  const bool lo_known = std::isinf(lo) || (lo == 0.0 && c.below_zero >= 0) || (lo == -1.0 && c.below_minus_one >= 0);
  const bool hi_known = std::isinf(hi) || (hi == 1.0 && c.above_one >= 0);
  if (finite > 0 && lo_known && hi_known) {
    const int64_t below = std::isinf(lo) ? 0 : lo == 0.0 ? c.below_zero : c.below_minus_one;
    const int64_t above = std::isinf(hi) ? 0 : c.above_one;
    return std::min(1.0, double(below + above) / double(finite));
  }
  // Else a normal approximation from the mean and std.
  double below = 0, above = 0;
  if (c.std <= 0) return (c.mean < lo || c.mean > hi) ? 1.0 : 0.0;
  if (c.min < lo) below = std::isinf(lo) ? 0.0 : normal_cdf((lo - c.mean) / c.std);
  if (c.max > hi) above = std::isinf(hi) ? 0.0 : 1.0 - normal_cdf((hi - c.mean) / c.std);
  return std::min(1.0, below + above);
}

class OutputRange : public Rule {
 public:
  std::string id() const override { return "output_range"; }
  std::string description() const override {
    return "The last layer's output range cannot cover the regression targets";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"min_excess", 0.02,
             "report when at least this fraction of the targets' [min, max] span lies outside the output range "
             "(a rounding overshoot of a bounded target is not a fault)"},
            {"conclusive_share", 0.25,
             "conclusive when at least this share of the targets cannot be reached (counted exactly for "
             "outputs bounded at 0, -1 or 1, else a normal "
             "approximation from mean/std): a quarter of the data can never be fit"},
            {"unscaled_target", 1000,
             "targets larger than this in magnitude are unscaled regression values: root cause data "
             "(scale them) rather than the activation"},
            {"row_sum_tolerance", 0.05,
             "a normalising (softmax) output fits regression targets only when each row sums to 1 within this"},
            {"conclusive_row_sum", 0.5, "conclusive when the mean target row sum is this far from 1 (e.g. "
                                        "multi-label targets): the softmax output can never reach them"}};
  }

  void check(const AnalysisContext& ctx, std::vector<Finding>& out) const override {
    const TraceHeader& h = ctx.header();
    const DataSummary& d = h.data_summary;
    if (!ru::is_regression_loss(ru::config(h, "loss")) || d.target_columns.empty() || h.layers.empty()) return;
    const ru::OutputLayer o = ru::output_layer(ctx);
    if (o.op.normalizes && o.units == 1) return;  // loss_activation_mismatch: softmax over one unit
    const double lo = o.op.out_lo, hi = o.op.out_hi;

    double tmin = INFINITY, tmax = -INFINITY, share = 0, worst_share = 0, row_sum = 0;
    size_t worst = 0;
    for (size_t c = 0; c < d.target_columns.size(); ++c) {
      const ColumnSummary& col = d.target_columns[c];
      tmin = std::min(tmin, col.min);
      tmax = std::max(tmax, col.max);
      const double s = share_outside(col, lo, hi, d.rows);
      share += s / double(d.target_columns.size());
      if (s > worst_share) worst_share = s, worst = c;
      row_sum += col.mean;
    }
    const double span = std::max(tmax - tmin, 1e-12);
    const double excess = (std::max(0.0, lo - tmin) + std::max(0.0, tmax - hi)) / span;
    const bool normalizing = o.op.normalizes && d.target_columns.size() > 1;
    const bool bad_sum = normalizing && std::fabs(row_sum - 1.0) > threshold(ctx, "row_sum_tolerance");
    const bool out_of_range = (tmin < lo || tmax > hi) && std::min(1.0, excess) >= threshold(ctx, "min_excess");
    if (!out_of_range && !bad_sum) return;

    Finding f = ctx.make(*this, bad_sum && !out_of_range ? sym::softmax_regression : sym::output_range, Stage::kStatic,
                         o.layer, std::nullopt);
    const bool unscaled = std::max(std::fabs(tmin), std::fabs(tmax)) > threshold(ctx, "unscaled_target");
    f.root_cause = unscaled ? RootCause::kData : RootCause::kActivation;
    f.conclusive = (out_of_range && share >= threshold(ctx, "conclusive_share")) ||
                   (bad_sum && std::fabs(row_sum - 1.0) >= threshold(ctx, "conclusive_row_sum"));
    f.confidence = f.conclusive ? 0.95 : 0.7;
    const std::string where = ctx.layer_label(o.layer);
    const std::string range = ru::range_text(lo, hi);
    if (out_of_range) {
      f.message = where + " can only output values in " + range + " but the targets span [" + ru::num(tmin) + ", " +
                  ru::num(tmax) + "]: about " + ru::num(100 * share) + "% of them cannot be reached";
    } else {
      f.message = where + " applies softmax, so each output row sums to 1, but the target rows sum to " +
                  ru::num(row_sum) + " on average";
    }
    const bool multi_label = bad_sum && !out_of_range && tmin >= 0 && tmax <= 1;
    if (multi_label)
      f.recommendation = "the targets look multi-label (several 1s per row): use a sigmoid output on " + where +
                         " with binary_crossentropy";
    else if (unscaled)
      f.recommendation = "scale the targets (e.g. standardise them: (y - mean) / std, and invert it on predictions), "
                         "and use a linear output on " + where;
    else
      f.recommendation = "remove the final activation (" + o.node + ") of " + where +
                         " so the output is linear, or rescale the targets into " + range;
    f.evidence = {{"loss", ru::config(h, "loss")}, {"out_lo", lo}, {"out_hi", hi},
                  {"target_min", tmin}, {"target_max", tmax}, {"unreachable_share", share},
                  {"range_excess", excess}, {"worst_target_column", worst}, {"worst_column_share", worst_share}};
    if (normalizing) f.evidence["target_row_sum"] = row_sum;
    out.push_back(std::move(f));
  }
};

}  // namespace

std::unique_ptr<Rule> make_rule_output_range() { return std::make_unique<OutputRange>(); }

}  // namespace dl::an
