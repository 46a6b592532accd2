// Dynamic: values, gradients or weights that explode while still finite. A forward
// value whose largest |x| grew more than `value_growth`x over the first record and passed
// `value_abs`, a layer's parameter gradient norm that grew `grad_growth`x past `grad_abs`,
// or a layer's weight norm that grew `weight_growth`x over its initial value. Conclusive
// when it is still growing at the end of the trace (divergence); a warning when it levelled
// off or a NaN followed (numerical_error is then the primary finding).
#include <algorithm>
#include <cmath>

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an {
namespace {

// One exploding series: where it first crossed the thresholds and its values per record.
struct Hit {
  size_t record = 0;
  int layer = -1;
  std::string node;
  double baseline = 0, value = 0;
  std::vector<double> series;  // over records [0, end)
  // Parameter series: which records hold this iteration's values (the others carry the
  // last full reduction, runtime/probes.h), so the window counts only those. Null: all.
  const std::vector<char>* fresh = nullptr;
};

class ExplodingTensor : public Rule {
 public:
  std::string id() const override { return "exploding_tensor"; }
  std::string description() const override {
    return "Forward values, gradients or weights growing by orders of magnitude (still finite)";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"value_growth", 1e3, "a forward value's max |x| growing 1000x over the first record (healthy deep "
                                  "nets measured at most ~200x, as activations grow while the net learns)"},
            {"value_abs", 1e6, "and above 1e6: float32 activations this large overflow within a few more steps"},
            {"grad_growth", 1e3, "a layer's gradient norm growing 1000x over the first record (healthy gradients "
                                 "shrink as the loss falls)"},
            {"grad_abs", 1e4, "and above 1e4: an update of that size rewrites weights of order 1"},
            {"weight_growth", 100, "a layer's weight norm growing 100x over its initial value (healthy runs: "
                                   "at most ~2.5x)"},
            {"window", 5, "records at the end of the trace over which the tensor must rise at every record to be "
                          "conclusive (certain divergence)"},
            {"window_growth", 2, "and double over that window: exponential growth, not a slow drift or a plateau"},
            {"input_max_abs", 100, "inputs beyond |x| = 100 are unnormalised: the root cause is then the data"},
            {"input_std_spread", 1e4, "a 10000x spread of per-feature std means the features were not standardised "
                                       "(pixel data scaled to [0, 1] measured ~300x: rarely-lit pixels)"}};
  }

  void check(const AnalysisContext& ctx, std::vector<Finding>& out) const override {
    const Trace& t = ctx.trace();
    const size_t end = ru::finite_prefix(ctx);
    if (end < 2) return;
    const bool diverged_to_nan = end < t.size();
    const std::vector<size_t> fwd = ctx.probes(ProbeKind::kForward);
    const auto layers = ru::param_probes(ctx);
    // Online, only a conclusive finding matters (it stops training), and that needs the
    // last record above the thresholds: skip the scan of the whole trace otherwise.
    if (!ctx.final() && !last_record_high(ctx, fwd, layers, end)) return;
    // Every series in one record-major pass over the statistics (they are stored that way).
    std::vector<std::vector<double>> values(fwd.size()), grads(layers.size()), weights(layers.size());
    std::vector<char> param_fresh(end, 1);
    for (size_t r = 0; r < end; ++r) {
      if (!layers.empty() && !layers[0].weight.empty()) param_fresh[r] = !t.at(r, layers[0].weight[0]).carried();
      for (size_t i = 0; i < fwd.size(); ++i) values[i].push_back(max_abs(t.at(r, fwd[i])));
      for (size_t j = 0; j < layers.size(); ++j) {
        grads[j].push_back(ru::combined_l2(t, r, layers[j].grad));
        weights[j].push_back(ru::combined_l2(t, r, layers[j].weight));
      }
    }
    const auto& probes = ctx.header().probes;
    // Values: the first record, then the first probe in graph order.
    std::optional<Hit> value;
    const double v_growth = threshold(ctx, "value_growth"), v_abs = threshold(ctx, "value_abs");
    for (size_t r = 1; r < end && !value; ++r)
      for (size_t i = 0; i < fwd.size() && !value; ++i)
        if (values[i][r] > v_abs && values[i][r] > v_growth * values[i][0])
          value = Hit{r, probes[fwd[i]].layer, probes[fwd[i]].node, values[i][0], values[i][r], values[i]};
    if (value) report(ctx, *value, sym::exploding_values, Stage::kForward, end, diverged_to_nan, out);
    // Gradients: the first record, then the deepest layer (backward order). Weights: the
    // first record, then the first layer.
    std::optional<Hit> grad, weight;
    const double g_growth = threshold(ctx, "grad_growth"), g_abs = threshold(ctx, "grad_abs");
    const double w_growth = threshold(ctx, "weight_growth");
    for (size_t j = 0; j < layers.size(); ++j) {
      const int layer = layers[j].layer;
      if (auto h = first_hit(grads[j], grads[j][0], g_growth, g_abs, layer, &param_fresh))
        if (!grad || h->record < grad->record || (h->record == grad->record && h->layer > grad->layer)) grad = h;
      const double w0 = ru::initial_weight_l2(ctx, layer).value_or(weights[j][0]);
      if (auto h = first_hit(weights[j], w0, w_growth, 0.0, layer, &param_fresh))
        if (!weight || h->record < weight->record) weight = h;
    }
    if (grad) report(ctx, *grad, sym::exploding_gradients, Stage::kBackward, end, diverged_to_nan, out);
    if (weight) report(ctx, *weight, sym::exploding_weights, Stage::kWeights, end, diverged_to_nan, out);
  }

 private:
  static double max_abs(const TensorStats& s) { return std::max(std::fabs(s.min), std::fabs(s.max)); }

  bool last_record_high(const AnalysisContext& ctx, const std::vector<size_t>& fwd,
                        const std::vector<ru::LayerParamProbes>& layers, size_t end) const {
    const Trace& t = ctx.trace();
    for (size_t k : fwd)
      if (max_abs(t.at(end - 1, k)) > threshold(ctx, "value_abs")) return true;
    for (const ru::LayerParamProbes& p : layers) {
      if (ru::combined_l2(t, end - 1, p.grad) > threshold(ctx, "grad_abs")) return true;
      const double w0 = ru::initial_weight_l2(ctx, p.layer).value_or(ru::combined_l2(t, 0, p.weight));
      if (ru::combined_l2(t, end - 1, p.weight) > threshold(ctx, "weight_growth") * w0) return true;
    }
    return false;
  }

  static std::optional<Hit> first_hit(const std::vector<double>& series, double baseline, double growth, double abs,
                                      int layer, const std::vector<char>* fresh) {
    if (!(baseline > 0) || !std::isfinite(baseline)) return std::nullopt;
    for (size_t r = 0; r < series.size(); ++r)
      if (series[r] > abs && series[r] > growth * baseline) return Hit{r, layer, "", baseline, series[r], series, fresh};
    return std::nullopt;
  }

  void report(const AnalysisContext& ctx, const Hit& h, const Symptom& symptom, Stage stage, size_t end,
              bool diverged_to_nan, std::vector<Finding>& out) const {
    const double abs = stage == Stage::kForward ? threshold(ctx, "value_abs")
                     : stage == Stage::kBackward ? threshold(ctx, "grad_abs") : 0.0;
    // Still growing: above the thresholds over the whole last window (the last k records
    // from the hit on, holding fresh values), rising at every record of it, and up by
    // window_growth.
    const size_t k = static_cast<size_t>(std::max(2.0, threshold(ctx, "window")));
    const double floor = stage == Stage::kWeights ? h.baseline * threshold(ctx, "weight_growth") : abs;
    std::vector<size_t> window;
    for (size_t r = end; r-- > h.record && window.size() < k;)
      if (!h.fresh || (*h.fresh)[r]) window.insert(window.begin(), r);
    bool growing = false;
    if (!diverged_to_nan && window.size() == k) {
      growing = h.series[window.back()] >= threshold(ctx, "window_growth") * h.series[window.front()];
      for (size_t i = 0; i < k && growing; ++i)
        growing = h.series[window[i]] > floor && (i == 0 || h.series[window[i]] > h.series[window[i - 1]]);
    }
    const double last = h.series[end - 1];
    Finding f = ctx.make(*this, symptom, stage, h.layer, h.record);
    f.conclusive = growing;
    f.confidence = growing ? 0.95 : 0.7;
    const std::string what = stage == Stage::kForward ? "the largest |value| of " + h.node
                           : stage == Stage::kBackward ? "the gradient norm of its parameters"
                                                       : "the norm of its weights";
    f.message = ctx.layer_label(h.layer) + ": " + what + " grew from " + ru::num(h.baseline) + " to " +
                ru::num(h.value) + " by iteration " + std::to_string(f.iteration) +
                (growing ? " and is still growing (" + ru::num(last) + " at the end)"
                 : diverged_to_nan ? ", then turned into NaN/Inf"
                                   : " (" + ru::num(last) + " at the end)");
    f.evidence = {{"baseline", h.baseline}, {"value", h.value}, {"growth", h.value / h.baseline},
                  {"last_value", last}, {"still_growing", growing}};
    if (stage == Stage::kForward) f.evidence["node"] = h.node;
    const ru::InputScale in = ru::input_scale(ctx.header());
    const double lr = ru::learning_rate(ctx.header());
    f.evidence["learning_rate"] = lr;
    f.evidence["input_max_abs"] = in.max_abs;
    if (in.max_abs > threshold(ctx, "input_max_abs") || in.std_spread > threshold(ctx, "input_std_spread")) {
      f.root_cause = RootCause::kData;
      f.message += "; the inputs are not normalised (|x| up to " + ru::num(in.max_abs) + ", feature std spread " +
                   ru::num(in.std_spread) + "x)";
      f.recommendation = "standardise the input features (x = (x - mean) / std per feature) before training";
    } else {
      f.root_cause = RootCause::kLearningRate;
      f.message += ": the learning rate " + ru::num(lr) + " is too high";
      f.recommendation = "lower the learning rate tenfold (--lr " + ru::num(lr / 10) + ") or clip gradients (--clipnorm 1)";
    }
    out.push_back(std::move(f));
  }
};

}  // namespace

std::unique_ptr<Rule> make_rule_exploding_tensor() { return std::make_unique<ExplodingTensor>(); }

}  // namespace dl::an
