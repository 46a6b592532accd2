// Helpers of the recurrent and embedding rules (saturated_gates, exploding_state,
// frozen_layer).
#include <cmath>

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an::ru {

bool run_falls_short(const AnalysisContext& ctx, double min_improvement, double poor_fraction) {
  if (!ctx.final()) return false;
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
