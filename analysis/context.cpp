#include "analysis/context.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace dl::an {
namespace {

bool is_cross_entropy(const std::string& loss) {
  return loss == "binary_crossentropy" || loss == "categorical_crossentropy" ||
         loss == "sparse_categorical_crossentropy";
}

// LearningProgress::chance_loss, from the data summary's target columns.
double chance_loss(const TraceHeader& h, double chance_metric) {
  const auto it = h.config.find("loss");
  const std::string loss = it == h.config.end() ? "" : it->second;
  const auto& cols = h.data_summary.target_columns;
  auto xlogx = [](double p) { return p > 0 ? p * std::log(p) : 0.0; };
  if (cols.empty() || !is_cross_entropy(loss)) return -1;
  const bool ids = cols.size() == 1 && h.output_width > 1 && loss != "binary_crossentropy";
  if (ids) {
    const double c = double(h.output_width);
    return chance_metric > 0 && chance_metric <= 1.5 / c ? std::log(c) : -1;
  }
  for (const ColumnSummary& c : cols)
    if (c.min < 0 || c.max > 1 || !(c.mean >= 0 && c.mean <= 1)) return -1;
  if (loss == "binary_crossentropy") {
    double sum = 0;
    for (const ColumnSummary& c : cols) sum -= xlogx(c.mean) + xlogx(1 - c.mean);
    return sum / double(cols.size());
  }
  if (loss == "categorical_crossentropy" && cols.size() > 1) {
    double total = 0, sum = 0;
    for (const ColumnSummary& c : cols) total += c.mean;
    if (!(total > 0)) return -1;
    for (const ColumnSummary& c : cols) sum -= xlogx(c.mean / total);
    return sum;
  }
  return -1;
}

// LearningProgress::constant_loss.
double constant_loss(const TraceHeader& h, double chance) {
  const auto it = h.config.find("loss");
  const std::string loss = it == h.config.end() ? "" : it->second;
  if (is_cross_entropy(loss)) return chance;
  const auto& cols = h.data_summary.target_columns;
  const bool mse = loss == "mse" || loss == "mean_squared_error";
  const bool mae = loss == "mae" || loss == "mean_absolute_error";
  if (cols.empty() || !(mse || mae)) return -1;
  constexpr double kMeanAbsDeviation = 0.7978845608;  // E|x - mean| / std = sqrt(2 / pi) for a normal
  double sum = 0;
  for (const ColumnSummary& c : cols) sum += mse ? c.std * c.std : kMeanAbsDeviation * c.std;
  const double level = sum / double(cols.size());
  return level > 0 && std::isfinite(level) ? level : -1;
}

LearningProgress measure(const Trace& t) {
  LearningProgress p;
  const size_t n = t.loss.size();
  p.iterations = static_cast<int64_t>(n);
  if (n == 0) return p;
  for (float v : t.loss) p.loss_finite = p.loss_finite && std::isfinite(v);
  // Windows: about a tenth of the run, at least 1 and at most one epoch of batches.
  size_t w = std::max<size_t>(1, n / 10);
  if (t.header.batches_per_epoch > 0) w = std::min<size_t>(w, static_cast<size_t>(t.header.batches_per_epoch));
  auto mean = [&](const std::vector<float>& v, size_t from, size_t count) {
    double s = 0;
    for (size_t k = from; k < from + count; ++k) s += v[k];
    return s / double(count);
  };
  p.first_loss = mean(t.loss, 0, w);
  p.last_loss = mean(t.loss, n - w, w);
  p.best_loss = p.first_loss;
  for (size_t k = 0; k + w <= n; k += w) p.best_loss = std::min(p.best_loss, mean(t.loss, k, w));
  if (std::isfinite(p.first_loss) && std::fabs(p.first_loss) > 1e-12)
    p.loss_improvement = (p.first_loss - p.last_loss) / std::fabs(p.first_loss);
  p.first_metric = mean(t.metric, 0, w);
  p.last_metric = mean(t.metric, n - w, w);
  const DataSummary& d = t.header.data_summary;
  if (d.targets_are_classes && t.header.metric_name == "accuracy" && !d.target_columns.empty()) {
    // Majority-class accuracy: one-hot columns' means are class frequencies; a single
    // 0/1 column's mean is the positive rate. A single column of class ids (sparse) only
    // tells the mean id: 1/C bounds the majority rate from below (never claims "at chance"
    // too early). Multi-label columns (rows not summing to 1) have no majority class
    // that the summary can tell: unknown.
    const ColumnSummary& first = d.target_columns[0];
    double sum = 0, best = 0;
    for (const ColumnSummary& c : d.target_columns) sum += c.mean, best = std::max(best, c.mean);
    if (d.target_columns.size() == 1 && first.min >= 0 && first.max <= 1)
      p.chance_metric = std::max(first.mean, 1 - first.mean);
    else if (d.target_columns.size() == 1 && t.header.output_width > 1)
      p.chance_metric = 1.0 / double(t.header.output_width);
    else if (d.target_columns.size() > 1 && std::fabs(sum - 1) <= 0.05)
      p.chance_metric = best;
  }
  p.chance_loss = chance_loss(t.header, p.chance_metric);
  p.constant_loss = constant_loss(t.header, p.chance_loss);
  p.enough = n >= 20 || (t.header.batches_per_epoch > 0 && static_cast<int64_t>(n) >= 2 * t.header.batches_per_epoch);
  return p;
}

}  // namespace

AnalysisContext::AnalysisContext(const Trace& trace, const Settings& settings, bool final)
    : trace_(trace), settings_(settings), final_(final), progress_(measure(trace)) {}

bool AnalysisContext::failing_to_learn(double min_improvement) const {
  const LearningProgress& p = progress_;
  if (!p.loss_finite) return true;
  if (!p.enough) return false;
  if (p.last_loss < 1e-6) return false;  // already fits the data
  bool loss_stuck = p.loss_improvement < min_improvement;
  bool metric_at_chance = false;
  if (p.chance_metric >= 0 && trace_.header.metric_higher_is_better)
    metric_at_chance = p.last_metric <= p.chance_metric + 0.02;
  // A loss that ends at the constant prediction's learned nothing, whatever it fell from
  // (the first window includes the initial weights' guesses, often above that level).
  // Healthy runs of the suite's development split end below 0.6 of it, models/benchmark's
  // healthy and fixed ones below 0.95 (one fix that is already flagged: 0.98); runs with
  // vanishing gradients end at 0.99-1.01 (docs/calibration.md).
  const bool at_constant = p.constant_loss > 0 && p.last_loss >= 0.97 * p.constant_loss;
  return loss_stuck || metric_at_chance || at_constant;
}

std::vector<size_t> AnalysisContext::probes(ProbeKind kind) const {
  std::vector<size_t> out;
  for (size_t k = 0; k < trace_.header.probes.size(); ++k)
    if (trace_.header.probes[k].kind == kind) out.push_back(k);
  return out;
}

std::optional<size_t> AnalysisContext::layer_output_probe(int layer) const {
  std::optional<size_t> last;
  for (size_t k = 0; k < trace_.header.probes.size(); ++k) {
    const Probe& p = trace_.header.probes[k];
    if (p.kind == ProbeKind::kForward && p.layer == layer) last = k;
  }
  return last;
}

size_t AnalysisContext::finite_records() const {
  if (finite_records_) return *finite_records_;
  const size_t probes = trace_.header.probes.size();
  size_t result = trace_.size();
  for (size_t r = 0; r < trace_.size() && result == trace_.size(); ++r) {
    if (!std::isfinite(trace_.records[r].loss)) result = r;
    for (size_t k = 0; k < probes && result == trace_.size(); ++k)
      if (!trace_.at(r, k).finite()) result = r;
  }
  finite_records_ = result;
  return result;
}

std::string AnalysisContext::layer_label(int layer) const {
  if (layer < 0 || layer >= static_cast<int>(trace_.header.layers.size())) return "the model";
  const LayerInfo& l = trace_.header.layers[static_cast<size_t>(layer)];
  std::string s = "layer " + std::to_string(layer) + " (";
  for (size_t k = 0; k < l.nodes.size(); ++k) s += (k ? ", " : "") + l.nodes[k];
  return s + ")";
}

Finding AnalysisContext::make(const Rule& rule, const Symptom& symptom, Stage stage, int layer,
                              std::optional<size_t> record) const {
  Finding f;
  f.rule = rule.id();
  f.symptom = symptom.id;
  f.stage = stage;
  f.layer = layer;
  if (layer >= 0 && layer < static_cast<int>(trace_.header.layers.size()))
    f.nodes = trace_.header.layers[static_cast<size_t>(layer)].nodes;
  if (record && *record < trace_.size()) {
    f.iteration = trace_.records[*record].iteration;
    f.epoch = trace_.records[*record].epoch;
  }
  return f;
}

}  // namespace dl::an
