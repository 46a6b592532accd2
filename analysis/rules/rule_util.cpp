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

namespace {

// Per layer: the weight's (first parameter's) update ratios over records [from, size)
// reduced by `reduce` (mean or max); the median over layers.
template <class Reduce>
std::optional<double> median_over_layers(const AnalysisContext& ctx, size_t from, Reduce reduce) {
  const Trace& t = ctx.trace();
  if (t.size() == 0) return std::nullopt;
  const TraceHeader& h = ctx.header();
  std::vector<double> per_layer;
  for (const LayerInfo& layer : h.layers) {
    if (layer.params.empty()) continue;
    for (size_t k = 0; k < h.probes.size(); ++k) {
      const Probe& p = h.probes[k];
      if (p.kind != ProbeKind::kUpdate || p.node != layer.params[0]) continue;
      std::vector<double> values;
      for (size_t r = from; r < t.size(); ++r) {
        const TensorStats& s = t.at(r, k);
        if (std::isfinite(s.mean) && s.nan == 0) values.push_back(s.mean);
      }
      if (!values.empty()) per_layer.push_back(reduce(values));
      break;
    }
  }
  if (per_layer.empty()) return std::nullopt;
  std::sort(per_layer.begin(), per_layer.end());
  const size_t m = per_layer.size();
  return m % 2 ? per_layer[m / 2] : 0.5 * (per_layer[m / 2 - 1] + per_layer[m / 2]);
}

}  // namespace

std::optional<double> median_update_ratio(const AnalysisContext& ctx) {
  return median_over_layers(ctx, ctx.trace().size() / 2, [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return s / double(v.size());
  });
}

std::optional<double> median_peak_update_ratio(const AnalysisContext& ctx) {
  return median_over_layers(ctx, 0, [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); });
}

LrVerdict judge_learning_rate(const AnalysisContext& ctx, double tiny_lr, double tiny_update, double huge_update,
                              double peak_update) {
  const TraceHeader& h = ctx.header();
  const double lr = learning_rate(h);
  const auto ratio = median_update_ratio(ctx);
  if (lr <= tiny_lr) return LrVerdict::kTooSmall;
  if (ratio && *ratio < tiny_update && lr < 0.1 * keras_default_learning_rate(config(h, "optimizer", "adam")))
    return LrVerdict::kTooSmall;
  if (ratio && *ratio > huge_update) return LrVerdict::kTooLarge;
  if (std::isfinite(peak_update))
    if (const auto peak = median_peak_update_ratio(ctx); peak && *peak > peak_update) return LrVerdict::kTooLarge;
  return LrVerdict::kFine;
}

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

}  // namespace dl::an::ru

// --- per-layer parameter dynamics, trace windows, input scale (dynamic rules) -------------
namespace dl::an::ru {

std::vector<LayerParamProbes> param_probes(const AnalysisContext& ctx) {
  const TraceHeader& h = ctx.header();
  std::vector<LayerParamProbes> out;
  for (size_t k = 0; k < h.probes.size(); ++k) {
    const Probe& p = h.probes[k];
    if (p.kind != ProbeKind::kWeight && p.kind != ProbeKind::kParamGrad && p.kind != ProbeKind::kUpdate) continue;
    if (p.layer < 0) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const LayerParamProbes& l) { return l.layer == p.layer; });
    if (it == out.end()) {
      out.push_back({});
      out.back().layer = p.layer;
      it = out.end() - 1;
    }
    (p.kind == ProbeKind::kWeight ? it->weight : p.kind == ProbeKind::kParamGrad ? it->grad : it->update).push_back(k);
  }
  std::sort(out.begin(), out.end(), [](const LayerParamProbes& a, const LayerParamProbes& b) { return a.layer < b.layer; });
  return out;
}

double combined_l2(const Trace& t, size_t record, const std::vector<size_t>& probes) {
  double sum = 0;
  for (size_t k : probes) {
    const TensorStats& s = t.at(record, k);
    if (!s.finite() || !std::isfinite(s.l2)) return std::nan("");
    sum += double(s.l2) * double(s.l2);
  }
  return std::sqrt(sum);
}

namespace {
double ratio_of(double num, double den) {
  if (std::isnan(num) || std::isnan(den)) return std::nan("");
  if (den > 0) return num / den;
  return num > 0 ? INFINITY : 0.0;
}
}  // namespace

double layer_update_ratio(const Trace& t, size_t record, const LayerParamProbes& p) {
  return ratio_of(combined_l2(t, record, p.update), combined_l2(t, record, p.weight));
}

double layer_relative_grad(const Trace& t, size_t record, const LayerParamProbes& p) {
  return ratio_of(combined_l2(t, record, p.grad), combined_l2(t, record, p.weight));
}

std::optional<double> initial_weight_l2(const AnalysisContext& ctx, int layer) {
  const TraceHeader& h = ctx.header();
  if (layer < 0 || layer >= static_cast<int>(h.layers.size())) return std::nullopt;
  double sum = 0;
  bool any = false;
  for (const std::string& name : h.layers[size_t(layer)].params)
    for (const InitializerSummary& s : h.initializers)
      if (s.name == name && s.nan == 0 && s.inf == 0) {
        sum += double(s.count) * (s.std * s.std + s.mean * s.mean);
        any = true;
      }
  return any ? std::optional<double>(std::sqrt(sum)) : std::nullopt;
}

double max_update_ratio(const AnalysisContext& ctx, size_t from, size_t to, int* layer) {
  double best = 0;
  if (layer) *layer = -1;
  const Trace& t = ctx.trace();
  for (const LayerParamProbes& p : param_probes(ctx))
    for (size_t r = from; r < std::min(to, t.size()); ++r) {
      const double v = layer_update_ratio(t, r, p);
      if (std::isfinite(v) && v > best) {
        best = v;
        if (layer) *layer = p.layer;
      }
    }
  return best;
}

size_t finite_prefix(const AnalysisContext& ctx) { return ctx.finite_records(); }

size_t window_start(size_t end, size_t n) { return end > n ? end - n : 0; }

double median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const size_t m = v.size();
  return m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
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

RootCause vanishing_cause(const AnalysisContext& ctx, int layer, double tiny_std, std::string& why, std::string& fix) {
  const Trace& t = ctx.trace();
  const TraceHeader& h = ctx.header();
  const size_t end = finite_prefix(ctx);
  // Tiny weights: the std of a weight matrix (the layer's largest parameter) at the last
  // finite record, else its initializer.
  for (const LayerParamProbes& p : param_probes(ctx)) {
    if (p.layer > layer || p.weight.empty()) continue;
    size_t widest = p.weight.front();
    for (size_t k : p.weight)
      if (end > 0 && t.at(end - 1, k).count > t.at(end - 1, widest).count) widest = k;
    double sd = NAN;
    if (end > 0) sd = t.at(end - 1, widest).std;
    for (const InitializerSummary& s : h.initializers)
      if (s.name == h.probes[widest].node && std::isnan(sd)) sd = s.std;
    if (std::isfinite(sd) && sd < tiny_std) {
      why = "the weights of " + ctx.layer_label(p.layer) + " are tiny (std " + num(sd) + ")";
      fix = "initialise the weights with a variance-preserving scheme (Glorot/He: std about sqrt(2 / fan_in)) "
            "instead of near-zero values";
      return RootCause::kInitialization;
    }
  }
  for (size_t k = 0; k < h.probes.size(); ++k) {
    const Probe& p = h.probes[k];
    if (p.kind != ProbeKind::kForward || p.layer > layer || !p.op.saturates || p.op.normalizes) continue;
    if (!std::isfinite(p.op.out_lo) || !std::isfinite(p.op.out_hi)) continue;
    why = "saturating activations (" + p.node + ", output in " + range_text(p.op.out_lo, p.op.out_hi) +
          ") shrink the gradient at every layer";
    fix = "replace the sigmoid/tanh activations of the hidden layers with ReLU (or LeakyReLU) and He "
          "initialisation, or add batch normalisation";
    return RootCause::kActivation;
  }
  why = "the gradient shrinks through " + std::to_string(layer + 1) + " layers without saturating activations";
  fix = "make the network easier to train: add batch normalisation or residual connections, or use fewer layers";
  return RootCause::kArchitecture;
}

}  // namespace dl::an::ru

namespace dl::an::ru {

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

MetricJudgement judge_metric(const AnalysisContext& ctx, double now, double poor_fraction, double poor_mae) {
  MetricJudgement j;
  const TraceHeader& h = ctx.header();
  if (h.metric_name == "accuracy") {
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

}  // namespace dl::an::ru

namespace dl::an::ru {

const Finding* strongest(const std::vector<Finding>& findings) {
  const Finding* best = nullptr;
  for (const Finding& f : findings) {
    if (f.conclusive) return &f;
    if (!best || f.confidence > best->confidence) best = &f;
  }
  return best;
}

}  // namespace dl::an::ru
