// Static: a hidden layer of a single unit in front of a wider layer. Everything the later
// layers see is one number per sample, so a classifier over C >= 3 classes can only cut
// that line into intervals: most class layouts cannot be separated (DeepCrime's "change
// number of units" operator at its extreme; the "layer too narrow" faults of the
// DeepLocalize/DeepFD benchmarks). Conclusive before a C >= 3 output; a warning before a
// two-unit output (upstream in symptom_list.def: primary when the run fails).
#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an {
namespace {

class BottleneckLayer : public Rule {
 public:
  std::string id() const override { return "bottleneck_layer"; }
  std::string description() const override { return "A hidden layer of one unit in front of a wider layer"; }
  std::vector<Threshold> thresholds() const override {
    return {{"max_units", 1, "a layer this narrow carries one number per sample; two units already allow a plane"},
            {"conclusive_outputs", 3,
             "from this output width on, one number per sample cannot separate most class layouts"}};
  }

  void check(const AnalysisContext& ctx, std::vector<Finding>& out) const override {
    const ru::OutputLayer o = ru::output_layer(ctx);
    if (o.layer < 1) return;
    const int64_t max_units = static_cast<int64_t>(threshold(ctx, "max_units"));
    for (int l = 0; l < o.layer; ++l) {
      const auto anchor = ru::anchor_probe(ctx, l);
      if (!anchor) continue;
      // The layer's whole output per sample, not its channels: a 1-channel convolution
      // still passes a full feature map on.
      const int64_t units = ru::layer_units(ctx, l);
      const int64_t sample = ctx.header().probes[*anchor].op.sample_size;
      if (units < 1 || units > max_units || sample != units) continue;
      int64_t widest_after = 0;
      for (int k = l + 1; k <= o.layer; ++k) widest_after = std::max(widest_after, ru::layer_units(ctx, k));
      if (widest_after <= units) continue;
      Finding f = ctx.make(*this, sym::bottleneck_layer, Stage::kStatic, l, std::nullopt);
      f.root_cause = RootCause::kArchitecture;
      f.conclusive = o.units >= static_cast<int64_t>(threshold(ctx, "conclusive_outputs"));
      f.confidence = f.conclusive ? 0.9 : 0.6;
      f.message = ctx.layer_label(l) + " has " + std::to_string(units) + " unit" + (units == 1 ? "" : "s") +
                  " but feeds layers up to " + std::to_string(widest_after) +
                  " units wide: every later layer sees one number per sample" +
                  (f.conclusive ? ", which cannot separate " + std::to_string(o.units) + " outputs" : "");
      f.recommendation = "widen " + ctx.layer_label(l) + " (e.g. to " + std::to_string(std::max<int64_t>(16, widest_after)) +
                         " units), or remove it";
      f.evidence = {{"units", units}, {"widest_later_layer", widest_after}, {"output_units", o.units}};
      out.push_back(std::move(f));
      return;  // the first bottleneck is where the information is lost
    }
  }
};

}  // namespace

std::unique_ptr<Rule> make_rule_bottleneck_layer() { return std::make_unique<BottleneckLayer>(); }

}  // namespace dl::an
