// Helpers of the recurrent and embedding rules (saturated_gates, exploding_state,
// frozen_layer).
#include <algorithm>
#include <cmath>

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an::ru {

bool run_reached_its_length(const AnalysisContext& ctx) {
  if (!ctx.final()) return false;
  const double epochs = config_number(ctx.header(), "epochs", 0);
  if (!(epochs > 0)) return true;
  // A run stopped mid-epoch may still record that epoch: count its iterations too.
  const int64_t per_epoch = ctx.header().batches_per_epoch;
  if (per_epoch > 0 && double(ctx.trace().loss.size()) < epochs * double(per_epoch)) return false;
  return double(ctx.trace().epochs.size()) >= epochs;
}

bool failing_so_far(const AnalysisContext& ctx, double min_improvement) {
  const std::vector<float>& loss = ctx.trace().loss;
  const size_t n = loss.size();
  if (n < kEarlyIterations) return false;
  for (float v : loss)
    if (!std::isfinite(v)) return true;
  // The first and the last quarter of the iterations so far (at least 2 each).
  const size_t q = std::max<size_t>(2, n / 4);
  double first = 0, last = 0;
  for (size_t k = 0; k < q; ++k) first += loss[k], last += loss[n - q + k];
  first /= double(q), last /= double(q);
  const bool stuck = !(last < first - min_improvement * std::fabs(first));
  const double constant = ctx.progress().constant_loss;
  const bool at_constant = constant > 0 && last >= 0.97 * constant;
  return stuck || at_constant;
}

bool run_falls_short(const AnalysisContext& ctx, double min_improvement, double poor_fraction) {
  if (!run_reached_its_length(ctx)) return failing_so_far(ctx, min_improvement);
  if (ctx.failing_to_learn(min_improvement)) return true;
  const MetricJudgement j = judge_metric(ctx, ctx.progress().last_metric, poor_fraction, 1.0);
  return j.known && j.poor;
}

double mean_over(const Trace& t, size_t probe, size_t from, size_t to, float TensorStats::*f) {
  double sum = 0;
  size_t n = 0;
  for (size_t r = from; r < to; ++r) {
    const TensorStats& s = t.at(r, probe);
    if (s.carried() || s.count == 0) continue;
    sum += s.*f;
    ++n;
  }
  return n ? sum / double(n) : NAN;
}

double rms_of(const TensorStats& s) {
  if (!s.finite() || s.count == 0) return NAN;
  return double(s.l2) / std::sqrt(double(s.count));
}

}  // namespace dl::an::ru
