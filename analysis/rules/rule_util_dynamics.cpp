// rule_util.h, training dynamics: per-layer parameter probes, update and gradient ratios,
// the learning-rate verdict from the update sizes, and why gradients vanish.
#include <algorithm>
#include <cmath>
#include <utility>

#include "analysis/rules/rule_util.h"

namespace dl::an::ru {

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
  return median(std::move(per_layer));
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
