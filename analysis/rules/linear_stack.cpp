// Static: two parameterised linear layers in series with no non-linearity between them
// collapse into one linear map (the extra layer adds parameters, not capacity).
//
// In series means data flow (LayerInfo::feeds: the first layer's values are read by the
// second's parameterised node and nothing else): a residual or parallel branch (ResNet's
// downsample convolution next to the block's last one) is not a stack. Nor is a designed
// bottleneck, where the first layer narrows below both its input and the second's output
// (MobileNetV2's linear bottlenecks, low-rank factorisations): that restricts the rank on
// purpose. Traces without data flow fall back to graph order.
#include <algorithm>

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an {
namespace {

class LinearStack : public Rule {
 public:
  std::string id() const override { return "linear_stack"; }
  std::string description() const override {
    return "Consecutive linear layers (Dense/Conv) with no activation between them";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"confidence", 0.6,
             "two linear layers in series may be a deliberate factorisation the bottleneck test does not "
             "recognise, so this is a warning"},
            {"conclusive_all_linear", 1,
             "1: a fault when no hidden layer has a non-linearity (the network is a single-layer model; on the "
             "suite's development split every such mutant is killed, and only 1 of 7 fails visibly enough for "
             "the trend rules) and some hidden layer is wider than the output (its capacity is lost); 0: a "
             "warning then too"}};
  }

  void check(const AnalysisContext& ctx, std::vector<Finding>& out) const override {
    const TraceHeader& h = ctx.header();
    std::vector<int> stacked;
    for (size_t l = 0; l + 1 < h.layers.size(); ++l) {
      const int feeds = h.layers[l].feeds;
      if (feeds != LayerInfo::kFeedsUnknown && feeds != int(l) + 1) continue;
      if (affine(ctx, int(l)) && starts_linear(ctx, int(l) + 1) && !bottleneck(ctx, int(l))) stacked.push_back(int(l));
    }
    if (stacked.empty()) return;
    const int first = stacked.front();
    // No activation anywhere: the whole model is one linear map (far more likely a bug
    // than one redundant linear layer in an otherwise non-linear model).
    bool any_nonlinear = false;
    for (const Probe& p : h.probes)
      any_nonlinear = any_nonlinear || (p.kind == ProbeKind::kForward && (p.op.role == "activation" || !p.op.linear));
    // No hidden layer has a non-linearity (only the output layer may): the network is one
    // linear map followed by the output activation, a single-layer model whatever its depth.
    // Nobody stacks layers to get that: conclusive.
    bool hidden_linear = true;
    const int last = int(h.layers.size()) - 1;
    int64_t widest_hidden = 0;
    for (int l = 0; l < last; ++l) {
      if (ru::anchor_probe(ctx, l) && !affine(ctx, l)) hidden_linear = false;
      widest_hidden = std::max(widest_hidden, ru::layer_units(ctx, l));
    }
    // ...unless no hidden layer is wider than the output: then the stack is a linear model
    // with a redundant factor (Dense(1)-Dense(1) linear regression), which may be what
    // the user meant; the capacity a wide hidden layer would add is not lost.
    const int64_t out_units = ru::output_layer(ctx).units;
    const bool wasted_width = out_units <= 0 || widest_hidden <= 0 || widest_hidden > out_units;
    Finding f = ctx.make(*this, sym::linear_stack, Stage::kStatic, first, std::nullopt);
    f.root_cause = RootCause::kActivation;
    f.conclusive = hidden_linear && wasted_width && threshold(ctx, "conclusive_all_linear") > 0;
    f.confidence = any_nonlinear ? threshold(ctx, "confidence") : std::min(1.0, threshold(ctx, "confidence") + 0.2);
    f.message = ctx.layer_label(first) + " has no activation and feeds " + ctx.layer_label(first + 1) +
                " directly: two linear maps in a row are one linear map" +
                (!any_nonlinear ? " (the model has no non-linearity at all)"
                 : hidden_linear ? " (no hidden layer has a non-linearity: the network is a single-layer model)"
                                 : "") +
                (stacked.size() > 1 ? " (" + std::to_string(stacked.size()) + " such pairs)" : "");
    f.recommendation = "add a non-linear activation (e.g. ReLU) after " + ctx.layer_label(first) +
                       ", or merge it with the next layer";
    nlohmann::json pairs = nlohmann::json::array();
    for (int l : stacked) pairs.push_back({l, l + 1});
    f.evidence = {{"stacked_pairs", pairs}, {"model_is_linear", !any_nonlinear}, {"hidden_layers_linear", hidden_linear},
                  {"widest_hidden_units", widest_hidden}, {"output_units", out_units}};
    out.push_back(std::move(f));
  }

 private:
  // Every step of the layer is linear (affine) and none is an activation.
  static bool affine(const AnalysisContext& ctx, int layer) {
    const std::vector<size_t> probes = ru::layer_forward_probes(ctx, layer);
    if (!ru::anchor_probe(ctx, layer)) return false;
    for (size_t k : probes) {
      const OpDescription& op = ctx.header().probes[k].op;
      if (op.role == "activation" || !op.linear) return false;
    }
    return !probes.empty();
  }
  // Layer `l` has fewer units than its fan-in and than the next layer: a designed bottleneck.
  static bool bottleneck(const AnalysisContext& ctx, int l) {
    const TraceHeader& h = ctx.header();
    const int64_t units = ru::layer_units(ctx, l), next_units = ru::layer_units(ctx, l + 1);
    if (units <= 0 || next_units <= 0 || h.layers[size_t(l)].params.empty()) return false;
    int64_t weights = 0;
    for (const InitializerSummary& s : h.initializers)
      if (s.name == h.layers[size_t(l)].params[0]) weights = s.count;
    const int64_t fan_in = weights % units == 0 ? weights / units : 0;
    return units < fan_in && units < next_units;
  }
  // The layer begins (before any non-linear step) with a linear parameterised op.
  static bool starts_linear(const AnalysisContext& ctx, int layer) {
    for (size_t k : ru::layer_forward_probes(ctx, layer)) {
      const OpDescription& op = ctx.header().probes[k].op;
      if (op.role == "parameterized") return op.linear;
      if (op.role == "activation" || !op.linear) return false;
    }
    return false;
  }
};

}  // namespace

std::unique_ptr<Rule> make_rule_linear_stack() { return std::make_unique<LinearStack>(); }

}  // namespace dl::an
