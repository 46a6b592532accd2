// rule_util.h, curves and trends: the smoothed loss/metric curve, the finite prefix and
// windows of the trace, medians, least-squares line fits, and judging a metric value.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "analysis/rules/rule_util.h"

namespace dl::an::ru {

Curve curve(const AnalysisContext& ctx, size_t min_epochs, size_t points) {
  Curve c;
  const Trace& t = ctx.trace();
  if (t.epochs.size() >= min_epochs) {
    c.per_epoch = true;
    for (const EpochRecord& e : t.epochs) {
      c.loss.push_back(e.loss);
      c.metric.push_back(e.metric);
    }
    c.iterations_per_point = ctx.header().batches_per_epoch > 0 ? double(ctx.header().batches_per_epoch)
                                                                : double(t.loss.size()) / double(t.epochs.size());
    return c;
  }
  const size_t n = t.loss.size();
  if (n == 0 || points == 0) return c;
  const size_t w = std::max<size_t>(1, n / points);
  c.iterations_per_point = double(w);
  for (size_t start = 0; start + w <= n; start += w) {
    double l = 0, m = 0;
    for (size_t k = start; k < start + w; ++k) {
      l += t.loss[k];
      m += k < t.metric.size() ? t.metric[k] : 0.0;
    }
    c.loss.push_back(l / double(w));
    c.metric.push_back(m / double(w));
  }
  return c;
}

size_t finite_prefix(const AnalysisContext& ctx) { return ctx.finite_records(); }

size_t window_start(size_t end, size_t n) { return end > n ? end - n : 0; }

double median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const size_t m = v.size();
  return m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
}

LineFit fit_line(const std::vector<float>& v, size_t from, size_t to) {
  LineFit f;
  to = std::min(to, v.size());
  double sx = 0, sy = 0;
  for (size_t k = from; k < to; ++k)
    if (std::isfinite(v[k])) sx += double(k), sy += v[k], ++f.n;
  if (f.n == 0) return f;
  const double mx = sx / double(f.n), my = sy / double(f.n);
  double sxx = 0, sxy = 0;
  for (size_t k = from; k < to; ++k)
    if (std::isfinite(v[k])) sxx += (double(k) - mx) * (double(k) - mx), sxy += (double(k) - mx) * (v[k] - my);
  f.mean = my;
  f.slope = sxx > 0 ? sxy / sxx : 0;
  f.intercept = my - f.slope * mx;
  f.end = f.intercept + f.slope * double(to - 1);
  if (f.n < 3 || sxx <= 0) return f;
  double ss = 0;
  for (size_t k = from; k < to; ++k)
    if (std::isfinite(v[k])) {
      const double r = v[k] - (f.intercept + f.slope * double(k));
      ss += r * r;
    }
  const double se = std::sqrt(ss / double(f.n - 2) / sxx);
  f.t = se > 0 ? f.slope / se : (f.slope == 0 ? 0 : (f.slope > 0 ? INFINITY : -INFINITY));
  return f;
}

std::optional<double> chance_loss(const AnalysisContext& ctx) {
  const double v = ctx.progress().chance_loss;
  return v >= 0 ? std::optional<double>(v) : std::nullopt;
}

std::optional<double> constant_prediction_loss(const AnalysisContext& ctx) {
  const double v = ctx.progress().constant_loss;
  return v > 0 ? std::optional<double>(v) : std::nullopt;
}

MetricJudgement judge_metric(const AnalysisContext& ctx, double now, double poor_fraction, double poor_mae) {
  MetricJudgement j;
  const TraceHeader& h = ctx.header();
  if (h.metric_name == "accuracy") {
    // Multi-label targets (several 0/1 columns whose rows do not sum to 1): Keras' accuracy
    // is then categorical (argmax against the first positive label), a number with no
    // chance level the data summary can tell; judging it against 1/C flags healthy runs.
    const auto& cols = h.data_summary.target_columns;
    double sum = 0;
    for (const ColumnSummary& c : cols) sum += c.mean;
    if (cols.size() > 1 && std::fabs(sum - 1) > 0.05 && ctx.progress().chance_metric < 0) return j;
    now = std::clamp(now, 0.0, 1.0);
    j.chance = ctx.progress().chance_metric;
    if (!(j.chance >= 0 && j.chance <= 1)) j.chance = h.output_width > 1 ? 1.0 / double(h.output_width) : 0.5;
    j.known = true;
    j.poor = now < j.chance + poor_fraction * (1 - j.chance);
    j.goal = j.chance + 0.75 * (1 - j.chance);
    j.text = "accuracy " + num(now) + " (chance " + num(j.chance) + ")";
  } else if (h.metric_name == "mae") {
    double sigma = 0;
    for (const ColumnSummary& col : h.data_summary.target_columns)
      sigma += col.std / double(h.data_summary.target_columns.size());
    if (sigma <= 0) return j;
    now = std::max(0.0, now);
    j.known = true;
    j.poor = now > poor_mae * sigma;
    j.text = "mae " + num(now) + " (targets' std " + num(sigma) + ")";
  }
  return j;
}

std::optional<LossRise> loss_diverged(const AnalysisContext& ctx, int64_t until, double learned) {
  const Trace& t = ctx.trace();
  const auto constant = constant_prediction_loss(ctx);
  const size_t n = std::min(t.loss.size(), static_cast<size_t>(std::max<int64_t>(0, until)));
  if (!constant || !(*constant > 0) || n == 0) return std::nullopt;
  const size_t w = std::max<size_t>(4, static_cast<size_t>(std::max<int64_t>(0, ctx.header().batches_per_epoch)) / 4);
  std::optional<LossRise> rise;
  LossRise r{INFINITY, 0, 0, 0};
  std::vector<double> v;
  for (size_t start = 0; start + w <= n; start += w) {
    v.clear();
    for (size_t k = start; k < start + w; ++k)
      if (std::isfinite(t.loss[k])) v.push_back(t.loss[k]);
    if (v.size() < w / 2 + 1) continue;
    const double m = median(v);
    if (!rise && m < r.low) r.low = m, r.low_at = static_cast<int64_t>(start);
    if (r.low <= learned * *constant && m >= *constant && m > r.high) {
      r.high = m, r.high_at = static_cast<int64_t>(start);
      rise = r;
    }
  }
  return rise;
}

std::string step_size_text(const TraceHeader& h) {
  const double lr = learning_rate(h), momentum = config_number(h, "momentum", 0);
  std::string s = "the learning rate " + num(lr);
  if (momentum >= 0.99 && momentum < 1)
    s += " with momentum " + num(momentum) + " (steps up to " + std::to_string(std::llround(1 / (1 - momentum))) + "x the rate's)";
  return s;
}

std::string step_size_fix(const TraceHeader& h) {
  const double lr = learning_rate(h), momentum = config_number(h, "momentum", 0);
  if (momentum >= 0.99 && momentum < 1) return "lower the momentum to 0.9 (--momentum 0.9) or the learning rate tenfold (--lr " + num(lr / 10) + ")";
  return "lower the learning rate tenfold (--lr " + num(lr / 10) + ")";
}

}  // namespace dl::an::ru
