// Static: weight initialisers that are all zero or constant (the units of a layer stay
// identical: symmetry), non-finite, or far too wide for their fan-in.
#include <algorithm>
#include <cmath>

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an {
namespace {

struct WeightInit {
  int layer = -1;
  const InitializerSummary* init = nullptr;
  int64_t fan_in = 0;
  bool constant = false, zero = false, nonfinite = false, too_wide = false;
};

class BadInitialization : public Rule {
 public:
  std::string id() const override { return "bad_initialization"; }
  std::string description() const override {
    return "All-zero, constant, non-finite or badly scaled weight initialisers";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"max_std", 1.0, "a weight std above 1 with a wide fan-in multiplies the signal's variance by "
                             "fan_in * std^2 per layer (Glorot/He use std ~ sqrt(2 / fan_in))"},
            {"min_fan_in", 100, "the width check applies from this fan-in: N(0, 1) on a narrow layer is tolerable"},
            {"max_he_ratio", 10, "whatever the fan-in, a weight std this many times He's sqrt(2 / fan_in) multiplies "
                                 "the signal's variance by 100x per layer or more (Glorot and He stay near 1x)"},
            {"conclusive_stacked", 2, "this many consecutive layers with constant weights can never break "
                                      "their symmetry: conclusive"}};
  }

  void check(const AnalysisContext& ctx, std::vector<Finding>& out) const override {
    const std::vector<WeightInit> weights = collect(ctx);
    // Longest run of consecutive weighted layers (in graph order) with constant weights.
    size_t run = 0, best_run = 0, best_start = 0;
    for (size_t k = 0; k < weights.size(); ++k) {
      run = weights[k].constant ? run + 1 : 0;
      if (run > best_run) best_run = run, best_start = k + 1 - run;
    }
    for (const WeightInit& w : weights) {
      if (w.nonfinite) {
        emit(ctx, out, w, sym::nonfinite_initialization, true, 1.0,
             ctx.layer_label(w.layer) + " starts with " + std::to_string(w.init->nan + w.init->inf) +
                 " NaN/Inf weights in " + w.init->name,
             "re-initialise " + w.init->name + " (e.g. glorot_uniform) and check the code that produced it");
        return;
      }
    }
    if (best_run > 0) {
      const bool stacked = double(best_run) >= threshold(ctx, "conclusive_stacked");
      // Conclusive at the start of the stacked run, else a warning at the first constant layer.
      size_t at = best_start;
      for (size_t k = 0; !stacked && k < weights.size(); ++k)
        if (weights[k].constant) { at = k; break; }
      const WeightInit& w = weights[at];
      const std::string value = w.zero ? "all zero" : "constant (" + ru::num(w.init->mean) + ")";
      std::string msg = ctx.layer_label(w.layer) + " starts with weights " + w.init->name + " " + value + " (" +
                        std::to_string(w.init->count) + " values): its units compute the same function and get " +
                        "the same gradient";
      if (stacked)
        msg += ", and so do the next " + std::to_string(best_run - 1) + " weighted layer(s): the symmetry can never break";
      Finding& f = emit(ctx, out, w, w.zero ? sym::zero_initialization : sym::constant_initialization, stacked,
                        stacked ? 0.95 : 0.7, msg,
                        "initialise " + w.init->name + " randomly (glorot_uniform, or he_normal before ReLU) instead of a " +
                            std::string(w.zero ? "zero" : "constant") + " value" +
                            (stacked ? ", and the weights of the layers after it" : ""));
      f.evidence["constant_layers_in_a_row"] = best_run;
      return;
    }
    // Every too-wide layer is listed (a repair re-initialises them all); the finding sits at
    // the first, where the signal starts to grow.
    std::vector<const WeightInit*> wide;
    for (const WeightInit& w : weights)
      if (w.too_wide) wide.push_back(&w);
    if (wide.empty()) return;
    const WeightInit& w = *wide.front();
    const double he = std::sqrt(2.0 / double(w.fan_in));
    std::string msg = ctx.layer_label(w.layer) + " starts with weights of std " + ru::num(w.init->std) +
                      " for a fan-in of " + std::to_string(w.fan_in) + " (He would use " + ru::num(he) +
                      "): activations grow ~" + ru::num(w.init->std / he) + "x per layer";
    nlohmann::json layers = nlohmann::json::array();
    std::string others;
    for (const WeightInit* o : wide) {
      layers.push_back(o->layer);
      if (o != wide.front()) others += (others.empty() ? "" : ", ") + ctx.layer_label(o->layer);
    }
    if (!others.empty()) msg += "; so do the weights of " + others;
    Finding& f = emit(ctx, out, w, sym::wide_initialization, false, 0.6, msg,
                      "initialise " + w.init->name + (wide.size() > 1 ? " and the other too-wide weights" : "") +
                          " with glorot_uniform or he_normal (std ~ sqrt(2 / fan_in) = " + ru::num(he) + ")");
    f.evidence["wide_layers"] = layers;
  }

 private:
  // The weight (first parameter) of every layer anchored by a linear parameterised op
  // (Dense, Conv, MatMul): biases and normalisation scales are legitimately constant.
  std::vector<WeightInit> collect(const AnalysisContext& ctx) const {
    std::vector<WeightInit> out;
    const TraceHeader& h = ctx.header();
    for (const LayerInfo& layer : h.layers) {
      const auto anchor = ru::anchor_probe(ctx, layer.index);
      if (!anchor || !h.probes[*anchor].op.linear || layer.params.empty()) continue;
      const InitializerSummary* init = nullptr;
      for (const InitializerSummary& s : h.initializers)
        if (s.name == layer.params[0]) init = &s;
      const int64_t units = ru::layer_units(ctx, layer.index);
      // A bias has exactly one value per unit; a weight more (unless the fan-in is 1).
      if (!init || init->count <= 1 || (units > 0 && init->count <= units)) continue;
      WeightInit w;
      w.layer = layer.index;
      w.init = init;
      w.fan_in = units > 0 && init->count % units == 0 ? init->count / units : 0;
      w.nonfinite = init->nan + init->inf > 0;
      w.constant = !w.nonfinite && init->std <= 1e-12 * std::max(1.0, std::fabs(init->mean));
      w.zero = w.constant && init->min == 0 && init->max == 0;
      const double he = w.fan_in > 0 ? std::sqrt(2.0 / double(w.fan_in)) : 0.0;
      w.too_wide = !w.nonfinite && w.fan_in > 0 &&
                   ((w.fan_in >= threshold(ctx, "min_fan_in") && init->std > threshold(ctx, "max_std")) ||
                    init->std > threshold(ctx, "max_he_ratio") * he);
      out.push_back(w);
    }
    return out;
  }

  Finding& emit(const AnalysisContext& ctx, std::vector<Finding>& out, const WeightInit& w, const Symptom& symptom,
                bool conclusive, double confidence, const std::string& message, const std::string& fix) const {
    Finding f = ctx.make(*this, symptom, Stage::kStatic, w.layer, std::nullopt);
    f.root_cause = RootCause::kInitialization;
    f.conclusive = conclusive;
    f.confidence = confidence;
    f.message = message;
    f.recommendation = fix;
    f.evidence = {{"parameter", w.init->name}, {"count", w.init->count}, {"mean", w.init->mean},
                  {"std", w.init->std},        {"min", w.init->min},     {"max", w.init->max},
                  {"fan_in", w.fan_in}};
    out.push_back(std::move(f));
    return out.back();
  }
};

}  // namespace

std::unique_ptr<Rule> make_rule_bad_initialization() { return std::make_unique<BadInitialization>(); }

}  // namespace dl::an
