// rule_util.h, general part: configuration lookup, the model's output layer and its
// layers, the input data's scale, placing and collecting findings, number formatting.
// Training dynamics are in rule_util_dynamics.cpp, loss curves and trends in
// rule_util_trend.cpp.
#include "analysis/rules/rule_util.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "analysis/rule.h"

namespace dl::an::ru {

std::string config(const TraceHeader& h, const std::string& key, const std::string& fallback) {
  auto it = h.config.find(key);
  return it == h.config.end() ? fallback : it->second;
}

double config_number(const TraceHeader& h, const std::string& key, double fallback) {
  const std::string v = config(h, key);
  if (v.empty()) return fallback;
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  return end && *end == '\0' ? d : fallback;
}

double target_row_sum(const DataSummary& d) {
  double sum = 0;
  for (const ColumnSummary& c : d.target_columns) sum += c.mean;
  return sum;
}

bool multilabel_targets(const TraceHeader& h, double tolerance) {
  const DataSummary& d = h.data_summary;
  const bool classes = d.targets_are_classes || config(h, "loss") == "sparse_categorical_crossentropy";
  return classes && d.target_columns.size() > 1 && d.label_issue_count == 0 &&
         std::fabs(target_row_sum(d) - 1.0) > tolerance;
}

bool from_logits(const TraceHeader& h) {
  const std::string v = config(h, "from_logits", "false");
  return v == "true" || v == "1" || v == "True";
}

bool is_cross_entropy(const std::string& loss) {
  return loss == "binary_crossentropy" || loss == "categorical_crossentropy" ||
         loss == "sparse_categorical_crossentropy";
}

bool is_regression_loss(const std::string& loss) {
  return loss == "mse" || loss == "mae" || loss == "huber" || loss == "mean_squared_error" ||
         loss == "mean_absolute_error";
}

double keras_default_learning_rate(const std::string& optimizer) {
  // The runtime's defaults (runtime/optimizer_rules.cpp), which follow Keras.
  if (optimizer == "sgd" || optimizer == "adagrad") return 0.01;
  if (optimizer == "adadelta") return 1.0;
  return 0.001;
}

double learning_rate(const TraceHeader& h) {
  return config_number(h, "learning_rate", keras_default_learning_rate(config(h, "optimizer", "adam")));
}

std::vector<size_t> layer_forward_probes(const AnalysisContext& ctx, int layer) {
  std::vector<size_t> out;
  const auto& probes = ctx.header().probes;
  for (size_t k = 0; k < probes.size(); ++k)
    if (probes[k].kind == ProbeKind::kForward && probes[k].layer == layer) out.push_back(k);
  return out;
}

std::optional<size_t> layer_output_gradient_probe(const AnalysisContext& ctx, int layer) {
  std::optional<size_t> best;
  const auto& probes = ctx.header().probes;
  for (size_t k = 0; k < probes.size(); ++k)
    if (probes[k].kind == ProbeKind::kGradient && probes[k].layer == layer &&
        (!best || probes[k].step >= probes[*best].step))
      best = k;
  return best;
}

std::optional<size_t> anchor_probe(const AnalysisContext& ctx, int layer) {
  for (size_t k : layer_forward_probes(ctx, layer))
    if (ctx.header().probes[k].op.role == "parameterized") return k;
  return std::nullopt;
}

int64_t layer_units(const AnalysisContext& ctx, int layer) {
  if (auto a = anchor_probe(ctx, layer); a && ctx.header().probes[*a].op.units > 0)
    return ctx.header().probes[*a].op.units;
  int64_t widest = 0;
  for (size_t k : layer_forward_probes(ctx, layer)) widest = std::max(widest, ctx.header().probes[k].op.units);
  return widest;
}

OutputLayer output_layer(const AnalysisContext& ctx) {
  OutputLayer o;
  const TraceHeader& h = ctx.header();
  o.layer = h.layers.empty() ? -1 : static_cast<int>(h.layers.size()) - 1;
  std::vector<size_t> probes = layer_forward_probes(ctx, o.layer);
  if (probes.empty())
    for (size_t k = 0; k < h.probes.size(); ++k)
      if (h.probes[k].kind == ProbeKind::kForward) probes.push_back(k);
  // Shape ops (Reshape, Flatten, Identity) after the activation keep its values and range.
  for (auto it = probes.rbegin(); it != probes.rend(); ++it) {
    if (h.probes[*it].op.role == "shape" && it + 1 != probes.rend()) continue;
    o.probe = *it;
    break;
  }
  if (o.probe) {
    o.op = h.probes[*o.probe].op;
    o.node = h.probes[*o.probe].node;
  } else {
    o.op.role = "parameterized";
    o.op.linear = true;
  }
  o.units = o.op.normalizes && o.op.units > 0 ? o.op.units : h.output_width;
  if (o.units <= 0) o.units = o.op.units;
  return o;
}

bool outputs_probabilities(const OpDescription& op) {
  return op.normalizes || (op.out_lo >= 0.0 && op.out_hi <= 1.0);
}

std::string range_text(double lo, double hi) {
  auto side = [](double v) { return std::isinf(v) ? std::string(v < 0 ? "-inf" : "inf") : num(v); };
  return (std::isinf(lo) ? "(" : "[") + side(lo) + ", " + side(hi) + (std::isinf(hi) ? ")" : "]");
}

InputScale input_scale(const TraceHeader& h) {
  InputScale s;
  const DataSummary& d = h.data_summary;
  s.max_abs = std::max(std::fabs(d.all_features.min), std::fabs(d.all_features.max));
  double lo = INFINITY, hi = 0;
  for (const ColumnSummary& c : d.feature_columns) {
    s.max_abs = std::max({s.max_abs, std::fabs(c.min), std::fabs(c.max)});
    if (!std::isfinite(c.std) || c.std <= 0) continue;
    lo = std::min(lo, c.std);
    hi = std::max(hi, c.std);
  }
  if (std::isfinite(lo) && lo > 0) s.std_spread = hi / lo;
  return s;
}

void place_at_end(const AnalysisContext& ctx, Finding& f) {
  const Trace& t = ctx.trace();
  if (!t.loss.empty()) {
    f.iteration = static_cast<int64_t>(t.loss.size()) - 1;
    const int64_t b = ctx.header().batches_per_epoch;
    f.epoch = b > 0 ? f.iteration / b : (t.epochs.empty() ? 0 : t.epochs.back().epoch);
  } else if (t.size() > 0) {
    f.iteration = t.records.back().iteration;
    f.epoch = t.records.back().epoch;
  }
}

std::vector<Finding> findings_of(const AnalysisContext& ctx, std::initializer_list<const char*> rule_ids) {
  std::vector<Finding> out;
  for (const char* id : rule_ids)
    for (const auto& rule : all_rules())
      if (rule->id() == id) rule->check(ctx, out);
  return out;
}

std::string num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

const Finding* strongest(const std::vector<Finding>& findings) {
  const Finding* best = nullptr;
  for (const Finding& f : findings) {
    if (f.conclusive) return &f;
    if (!best || f.confidence > best->confidence) best = &f;
  }
  return best;
}

}  // namespace dl::an::ru
