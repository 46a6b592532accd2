// Trend (end of training, only when the run fails to learn): the gradients of the early
// layers are tiny next to the last layer's and their weights barely move. Judged on
// ||grad|| / ||w|| per layer (median over the last records) relative to the deepest layer
// with parameters; placed at the deepest layer where it collapses (walking back from the
// output), from the first record where it does.
#include <algorithm>
#include <cmath>

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an {
namespace {

class VanishingGradient : public Rule {
 public:
  std::string id() const override { return "vanishing_gradient"; }
  std::string description() const override {
    return "Early layers' gradients vanish relative to the last layer and their weights stop moving";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"grad_ratio", 1e-3, "a layer's ||grad||/||w|| below 1e-3 of the last layer's: healthy runs measured "
                                 ">= 0.09 (sigmoid MLP) and >= 0.3 (ReLU), a 10-layer sigmoid stack ~1e-4 and below"},
            {"update_ratio", 5e-6, "and its ||dw||/||w|| per step below 5e-6: the layer effectively stopped "
                                   "learning (adaptive optimizers that compensate are spared). The generated suite's "
                                   "dev split (44 bases): healthy runs' earlier layers >= 1.9e-5 (SGD), its deep "
                                   "sigmoid stacks <= 1.1e-6 (docs/calibration.md)"},
            {"window", 20, "records at the end of the run over which the medians are taken"},
            {"min_improvement", 0.05, "only when the loss fell less than 5% (the failing-to-learn gate)"},
            {"tiny_weight_std", 1e-3, "weights with std below this make the gradient vanish by themselves "
                                      "(root cause initialization)"}};
  }

  void check(const AnalysisContext& ctx, std::vector<Finding>& out) const override {
    if (!ctx.final() || !ctx.failing_to_learn(threshold(ctx, "min_improvement"))) return;
    const Trace& t = ctx.trace();
    const size_t end = ru::finite_prefix(ctx);
    const size_t start = ru::window_start(end, static_cast<size_t>(threshold(ctx, "window")));
    if (end < start + 3) return;
    const auto layers = ru::param_probes(ctx);
    if (layers.size() < 2) return;
    auto med = [&](const ru::LayerParamProbes& p, bool grad) {
      std::vector<double> v;
      for (size_t r = start; r < end; ++r)
        v.push_back(grad ? ru::layer_relative_grad(t, r, p) : ru::layer_update_ratio(t, r, p));
      return ru::median(v);
    };
    const ru::LayerParamProbes& last = layers.back();
    const double g_last = med(last, true);
    if (!(g_last > 0) || !std::isfinite(g_last)) return;  // no gradient at all: unchanged_weights
    const double grad_ratio = threshold(ctx, "grad_ratio"), update_ratio = threshold(ctx, "update_ratio");
    for (size_t i = layers.size() - 1; i-- > 0;) {
      const ru::LayerParamProbes& p = layers[i];
      const double g = med(p, true), u = med(p, false);
      // An exactly zero gradient is a dead or blocked layer (dead_units, unchanged_weights).
      if (!(g > 0) || !(g < grad_ratio * g_last) || !(u < update_ratio)) continue;
      // The first record where this layer's gradient was already below the ratio.
      size_t first = start;
      for (size_t r = 0; r < end; ++r) {
        const double gl = ru::layer_relative_grad(t, r, last), gr = ru::layer_relative_grad(t, r, p);
        if (gl > 0 && gr < grad_ratio * gl) {
          first = r;
          break;
        }
      }
      Finding f = ctx.make(*this, sym::vanishing_gradient, Stage::kBackward, p.layer, first);
      f.conclusive = false;
      f.confidence = 0.75;
      std::string why, fix;
      f.root_cause = ru::vanishing_cause(ctx, p.layer, threshold(ctx, "tiny_weight_std"), why, fix);
      f.message = ctx.layer_label(p.layer) + ": the gradient vanishes: ||grad||/||w|| is " + ru::num(g) + ", " +
                  ru::num(g / g_last) + " of the last layer's (" + ru::num(g_last) + "), and its weights move by " +
                  ru::num(u) + " of their norm per step; " + why;
      f.recommendation = fix;
      f.evidence = {{"relative_grad", g}, {"last_layer_relative_grad", g_last}, {"ratio_to_last", g / g_last},
                    {"update_ratio", u}, {"last_layer", last.layer}};
      nlohmann::json per_layer = nlohmann::json::object();
      for (const ru::LayerParamProbes& q : layers) per_layer[std::to_string(q.layer)] = med(q, true) / g_last;
      f.evidence["ratio_to_last_by_layer"] = per_layer;
      out.push_back(std::move(f));
      return;
    }
  }
};

}  // namespace

std::unique_ptr<Rule> make_rule_vanishing_gradient() { return std::make_unique<VanishingGradient>(); }

}  // namespace dl::an
