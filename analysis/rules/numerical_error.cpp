// Dynamic, conclusive: NaN or Inf in a forward value, the loss, a gradient, an update or a
// weight. Placed at the first record where any probe is non-finite, in the order the
// iteration computes them: forward (first layer in graph order), loss (no layer), backward
// (deepest layer), update and weights. Root cause from the data summary, initializers,
// input scale, the updates before the fault and the op that produced it.
#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an {
namespace {

struct Site {
  const Symptom* symptom = &sym::nan_loss;
  Stage stage = Stage::kForward;
  int layer = -1;
  std::optional<size_t> probe;
  uint32_t nan = 0, inf = 0;
};

class NumericalError : public Rule {
 public:
  std::string id() const override { return "numerical_error"; }
  std::string description() const override {
    return "NaN or Inf in forward values, the loss, gradients, updates or weights";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"large_update", 0.1, "a step that changes a layer's weights by 10% of their norm is large: healthy runs "
                                  "measured at most 4% (Adam, lr 0.01, first steps)"},
            {"weight_growth", 10, "weights whose norm grew 10x over their initial value before the fault were "
                                  "diverging (healthy runs grow at most ~2.5x)"},
            {"input_max_abs", 100, "features beyond |x| = 100 are unnormalised: default initialisations assume "
                                   "inputs of order 1"},
            {"input_std_spread", 1e4, "a 10000x spread of per-feature std means the features were not standardised "
                                       "(pixel data scaled to [0, 1] measured ~300x: rarely-lit pixels)"}};
  }

  void check(const AnalysisContext& ctx, std::vector<Finding>& out) const override {
    const Trace& t = ctx.trace();
    const size_t r = ru::finite_prefix(ctx);
    // The loss of every iteration is kept even when the records are decimated.
    std::optional<int64_t> loss_it;
    for (size_t i = 0; i < t.loss.size(); ++i)
      if (!std::isfinite(t.loss[i])) {
        loss_it = static_cast<int64_t>(i);
        break;
      }
    const bool in_record = r < t.size() && (!loss_it || t.records[r].iteration <= *loss_it);
    if (!in_record && !loss_it) return;

    Site site;
    if (in_record) {
      site = locate(ctx, r);
    } else {
      site.symptom = &sym::nan_loss;
      site.stage = Stage::kLoss;
    }
    Finding f = ctx.make(*this, *site.symptom, site.stage, site.layer, in_record ? std::optional<size_t>(r) : std::nullopt);
    if (!in_record) {
      f.iteration = *loss_it;
      const int64_t b = ctx.header().batches_per_epoch;
      f.epoch = b > 0 ? *loss_it / b : -1;
    }
    f.conclusive = true;
    f.confidence = 1.0;
    const std::string what = site.stage == Stage::kLoss ? "the loss" : describe(ctx, site);
    f.message = what + " became " + nonfinite_text(site, ctx, in_record ? r : t.size(), f.iteration) + " at iteration " +
                std::to_string(f.iteration);
    f.evidence = {{"iteration", f.iteration}};
    if (site.probe) {
      f.evidence["node"] = ctx.header().probes[*site.probe].node;
      f.evidence["nan_count"] = site.nan;
      f.evidence["inf_count"] = site.inf;
    }
    // Records strictly before the fault (the records are decimated; use what is there).
    size_t before = 0;
    while (before < t.size() && t.records[before].iteration < f.iteration) ++before;
    explain(ctx, site, in_record ? r : before, before, f);
    out.push_back(std::move(f));
  }

 private:
  // The first non-finite site of record r in the order the iteration computes it.
  static Site locate(const AnalysisContext& ctx, size_t r) {
    const Trace& t = ctx.trace();
    const auto& probes = ctx.header().probes;
    Site s;
    auto take = [&](size_t k, const Symptom& symptom, Stage stage) {
      s.symptom = &symptom;
      s.stage = stage;
      s.layer = probes[k].layer;
      s.probe = k;
      s.nan = t.at(r, k).nan;
      s.inf = t.at(r, k).inf;
    };
    for (size_t k : ctx.probes(ProbeKind::kForward))
      if (!t.at(r, k).finite()) {
        take(k, t.at(r, k).nan == 0 ? sym::inf_forward : sym::nan_forward, Stage::kForward);
        return s;
      }
    if (!std::isfinite(t.records[r].loss)) {
      s.symptom = &sym::nan_loss;
      s.stage = Stage::kLoss;
      return s;
    }
    // Backward: the gradient sweep runs from the output back, so the deepest non-finite
    // gradient (output gradient or parameter gradient) is where it starts.
    std::optional<size_t> deepest;
    auto depth = [&](size_t k) { return std::make_pair(probes[k].layer, probes[k].step); };
    for (ProbeKind kind : {ProbeKind::kGradient, ProbeKind::kParamGrad})
      for (size_t k : ctx.probes(kind))
        if (!t.at(r, k).finite() && (!deepest || depth(k) > depth(*deepest))) deepest = k;
    if (deepest) {
      take(*deepest, sym::nan_backward, Stage::kBackward);
      return s;
    }
    for (size_t k : ctx.probes(ProbeKind::kUpdate))
      if (!t.at(r, k).finite()) {
        take(k, sym::nan_update, Stage::kWeights);
        return s;
      }
    for (size_t k : ctx.probes(ProbeKind::kWeight))
      if (!t.at(r, k).finite()) {
        take(k, sym::nan_weights, Stage::kWeights);
        return s;
      }
    s.symptom = &sym::nan_loss;
    s.stage = Stage::kLoss;
    return s;
  }

  static std::string describe(const AnalysisContext& ctx, const Site& s) {
    const Probe& p = ctx.header().probes[*s.probe];
    switch (p.kind) {
      case ProbeKind::kForward: return "the output of " + p.node + " in " + ctx.layer_label(s.layer);
      case ProbeKind::kGradient: return "the gradient at " + p.node + " in " + ctx.layer_label(s.layer);
      case ProbeKind::kParamGrad: return "the gradient of parameter " + p.node + " in " + ctx.layer_label(s.layer);
      case ProbeKind::kUpdate: return "the update of parameter " + p.node + " in " + ctx.layer_label(s.layer);
      case ProbeKind::kWeight: return "parameter " + p.node + " of " + ctx.layer_label(s.layer);
      case ProbeKind::kFeature: return std::string("the ") + op_feature_name(p.feature) + " of " + p.node;
      default: break;  // the recurrent and embedding probes are not sites of this rule
    }
    return p.node;
  }

  static std::string nonfinite_text(const Site& s, const AnalysisContext& ctx, size_t r, int64_t iteration) {
    if (!s.probe) {
      const Trace& t = ctx.trace();
      float v = r < t.size() ? t.records[r].loss : NAN;
      if (iteration >= 0 && size_t(iteration) < t.loss.size()) v = t.loss[size_t(iteration)];
      return std::isnan(v) ? "NaN" : "Inf";
    }
    const TensorStats& st = ctx.trace().at(r, *s.probe);
    std::string text;
    if (s.nan) text += std::to_string(s.nan) + " NaN";
    if (s.inf) text += std::string(text.empty() ? "" : " and ") + std::to_string(s.inf) + " Inf";
    return text + " (of " + std::to_string(st.count) + " values)";
  }

  // Root cause, in order: NaN/Inf in the data, in an initializer, unnormalised inputs,
  // diverging weights or large updates before the fault, an unbounded op that overflowed
  // on finite inputs, else the learning rate.
  void explain(const AnalysisContext& ctx, const Site& site, size_t r, size_t before, Finding& f) const {
    const TraceHeader& h = ctx.header();
    const Trace& t = ctx.trace();
    const double lr = ru::learning_rate(h);
    const std::string lower_lr = "lower the learning rate tenfold (--lr " + ru::num(lr / 10) + " instead of " +
                                 ru::num(lr) + ") or clip gradients (--clipnorm 1)";
    f.evidence["learning_rate"] = lr;

    int64_t data_nan = 0;
    for (const auto* cols : {&h.data_summary.feature_columns, &h.data_summary.target_columns})
      for (const ColumnSummary& c : *cols) data_nan += c.nan + c.inf;
    data_nan = std::max<int64_t>(data_nan, h.data_summary.all_features.nan + h.data_summary.all_features.inf);
    if (data_nan > 0) {
      f.root_cause = RootCause::kData;
      f.message += "; the training data holds " + std::to_string(data_nan) + " NaN/Inf values";
      f.recommendation = "remove or impute the NaN/Inf values in the training data (the data findings name their lines)";
      f.evidence["data_nonfinite"] = data_nan;
      return;
    }
    // Trainable parameters only: a constant may hold Inf by design (an attention mask's -inf).
    std::set<std::string> params;
    for (size_t k : ctx.probes(ProbeKind::kWeight)) params.insert(h.probes[k].node);
    for (const InitializerSummary& s : h.initializers)
      if (s.nan + s.inf > 0 && params.count(s.name)) {
        f.root_cause = RootCause::kInitialization;
        f.message += "; initializer " + s.name + " already holds " + std::to_string(s.nan + s.inf) + " NaN/Inf values";
        f.recommendation = "re-initialise parameter " + s.name + " with finite values (e.g. Glorot uniform)";
        f.evidence["initializer"] = s.name;
        return;
      }
    const ru::InputScale in = ru::input_scale(h);
    f.evidence["input_max_abs"] = in.max_abs;
    if (in.max_abs > threshold(ctx, "input_max_abs") || in.std_spread > threshold(ctx, "input_std_spread")) {
      f.root_cause = RootCause::kData;
      f.message += "; the inputs are not normalised (|x| up to " + ru::num(in.max_abs) + ", feature std spread " +
                   ru::num(in.std_spread) + "x), which blows up the first layers' values and gradients";
      f.recommendation = "standardise the input features (x = (x - mean) / std per feature) before training; if it "
                         "still diverges, " + lower_lr;
      f.evidence["input_std_spread"] = in.std_spread;
      return;
    }
    int upd_layer = -1;
    const double upd = ru::max_update_ratio(ctx, 0, before, &upd_layer);
    double growth = 0;
    int growth_layer = -1;
    if (before > 0)
      for (const ru::LayerParamProbes& p : ru::param_probes(ctx)) {
        const double w = ru::combined_l2(t, before - 1, p.weight);
        const double w0 = ru::initial_weight_l2(ctx, p.layer).value_or(ru::combined_l2(t, 0, p.weight));
        if (std::isfinite(w) && w0 > 0 && w / w0 > growth) growth = w / w0, growth_layer = p.layer;
      }
    f.evidence["max_update_ratio_before"] = upd;
    f.evidence["weight_growth_before"] = growth;
    if (upd > threshold(ctx, "large_update") || growth > threshold(ctx, "weight_growth")) {
      f.root_cause = RootCause::kLearningRate;
      f.message += "; before it, " +
                   (growth > threshold(ctx, "weight_growth")
                        ? "the weights of " + ctx.layer_label(growth_layer) + " grew " + ru::num(growth) + "x"
                        : "updates changed " + ctx.layer_label(upd_layer) + " by " + ru::num(upd) +
                              " of its weight norm in one step") +
                   ": the learning rate " + ru::num(lr) + " is too high";
      f.recommendation = lower_lr;
      return;
    }
    if (site.stage == Stage::kForward && site.probe && r < t.size()) {
      const Probe& p = h.probes[*site.probe];
      // Non-linear element-wise arithmetic with an unbounded output (exp, log, pow, div,
      // sqrt) can turn finite inputs into Inf/NaN; activations (ReLU family, ELU, softplus)
      // and affine ops cannot, their outputs grow at most linearly with their inputs.
      const bool unbounded = std::isinf(p.op.out_lo) || std::isinf(p.op.out_hi);
      if (unbounded && !p.op.linear && p.op.role == "elementwise") {
        f.root_cause = RootCause::kActivation;
        f.message += " while its input was finite: " + p.node + " (" + p.op_type + ") overflows or is undefined "
                     "for some inputs";
        f.recommendation = "guard " + p.node + " (" + p.op_type + "): keep its input in its domain (add an epsilon, "
                           "clip the input) or use a numerically stable form (log_softmax, softplus, a clipped exp)";
        f.evidence["op_type"] = p.op_type;
        return;
      }
    }
    f.root_cause = RootCause::kLearningRate;
    f.message += " with no NaN in the data or initializers: the updates overflowed";
    f.recommendation = lower_lr;
  }
};

}  // namespace

std::unique_ptr<Rule> make_rule_numerical_error() { return std::make_unique<NumericalError>(); }

}  // namespace dl::an
