// End of training, only when the run falls short: a layer whose parameters no update
// changed while gradients reached them and other layers trained (the kUpdate probes all zero, the kParamGrad
// probes not: its learning rate is 0, e.g. `deeplocalize.frozen`), or an embedding table
// (op traits: embedding; its kRows probe) most of whose rows no update ever changed (ids
// the training data never holds). A frozen layer keeps its initial weights: when those
// are random, what it computes is noise the rest of the network must work around.
#include <algorithm>
#include <cmath>

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an {
namespace {

class FrozenLayer : public Rule {
 public:
  std::string id() const override { return "frozen_layer"; }
  std::string description() const override {
    return "A layer (or most rows of an embedding table) never updated while the run falls short";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"min_records", 3, "full parameter records needed to call a layer never updated"},
            {"rows_unused", 0.5, "fraction of an embedding's rows never changed: every table of the healthy "
                                 "models/modern and parity fixtures had all its rows updated (0)"},
            {"min_improvement", 0.05, "the run falls short: the loss fell less than 5%..."},
            {"poor_fraction", 0.75, "...or the final accuracy is below chance + 75% of the way to 1"}};
  }

  void check(const AnalysisContext& ctx, std::vector<Finding>& out) const override {
    if (!ru::run_falls_short(ctx, threshold(ctx, "min_improvement"), threshold(ctx, "poor_fraction"))) return;
    const Trace& t = ctx.trace();
    const size_t end = ru::finite_prefix(ctx);
    // A layer frozen while others train: when nothing moves at all, unchanged_weights
    // explains the run (a global learning rate of 0, gradients clipped to 0).
    const auto layers = ru::param_probes(ctx);
    std::vector<int> still;
    bool any_moved = false;
    for (const ru::LayerParamProbes& l : layers) {
      size_t full = 0;
      bool moved = false, graded = false;
      for (size_t r = 0; r < end && !moved; ++r) {
        if (l.update.empty() || t.at(r, l.update[0]).carried()) continue;
        ++full;
        for (size_t k : l.update) moved = moved || !(t.at(r, k).l2 == 0);
        for (size_t k : l.grad) graded = graded || t.at(r, k).l2 > 0;
      }
      any_moved = any_moved || moved;
      if (!moved && graded && double(full) >= threshold(ctx, "min_records")) still.push_back(int(&l - layers.data()));
    }
    if (any_moved && !still.empty()) {
      out.push_back(frozen(ctx, layers[size_t(still[0])]));
      return;
    }
    for (size_t k : ctx.probes(ProbeKind::kRows)) {
      if (end == 0) break;
      const TensorStats& s = t.at(end - 1, k);
      if (!(s.dead_frac >= threshold(ctx, "rows_unused"))) continue;
      const Probe& p = ctx.header().probes[k];
      Finding f = ctx.make(*this, sym::embedding_rows_unused, Stage::kWeights, p.layer, end - 1);
      f.conclusive = false;
      f.confidence = 0.6;
      f.root_cause = RootCause::kData;
      f.message = ctx.layer_label(p.layer) + ": " + ru::num(100 * s.dead_frac) + "% of the " +
                  std::to_string(s.count) + " rows of the table " + p.node + " looks up were never updated: the "
                  "training data never holds their ids";
      f.recommendation = "check that the token ids of the data match the table (vocabulary size, id offset), or "
                         "shrink the vocabulary to the ids that occur";
      f.evidence = {{"node", p.node}, {"rows", s.count}, {"rows_never_updated", s.dead_frac}};
      out.push_back(f);
      return;
    }
  }

 private:
  Finding frozen(const AnalysisContext& ctx, const ru::LayerParamProbes& l) const {
    const TraceHeader& h = ctx.header();
    std::string params;
    for (size_t k : l.update) params += (params.empty() ? "" : ", ") + h.probes[k].node;
    const std::string listed = ru::config(h, "frozen");
    Finding f = ctx.make(*this, sym::frozen_layer, Stage::kWeights, l.layer, size_t(0));
    f.conclusive = true;  // no update moved it, and the run falls short
    f.confidence = 0.9;
    f.root_cause = RootCause::kLearningRate;
    f.message = ctx.layer_label(l.layer) + " was never updated (" + params + ": every update 0 while gradients " +
                "reached it)" +
                (listed.empty() ? "" : ", frozen by the configuration (deeplocalize.frozen or --frozen: " + listed + ")") +
                ", and the run falls short: the layer keeps its initial weights";
    f.recommendation = "train " + ctx.layer_label(l.layer) + " (remove it from deeplocalize.frozen / "
                       "requires_grad=False, or give it a learning rate above 0), or load trained weights into it "
                       "before freezing it";
    f.evidence = {{"params", params}, {"frozen", listed}};
    return f;
  }
};

}  // namespace

std::unique_ptr<Rule> make_rule_frozen_layer() { return std::make_unique<FrozenLayer>(); }

}  // namespace dl::an
