// Static: a Dropout that zeroes most of its inputs while training. Keras' `rate` and
// torch's `p` are the fraction DROPPED; TF1's `keep_prob` was the fraction kept, and a
// rate of 0.9 or 0.95 written as a keep probability is a classic fault (DeepCrime's
// "change dropout rate" operator; Humbatova et al.'s taxonomy). The few surviving values
// are scaled by 1/(1 - rate), so the next layer sees mostly noise and training stalls.
// Below conclusive_rate a warning (a wide layer can still learn through a high rate) that
// becomes the primary finding when the run fails (symptom_list.def: upstream); from it on a
// fault: such rates are keep probabilities, not a design choice.
#include <algorithm>

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an {
namespace {

class ExcessiveDropout : public Rule {
 public:
  std::string id() const override { return "excessive_dropout"; }
  std::string description() const override {
    return "A Dropout that zeroes most of its inputs while training (rate written as a keep probability)";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"max_rate", 0.7,
             "common healthy rates are 0.1-0.5 (every healthy base of models/suite and models/benchmark uses "
             "0.5 or less); rates of 0.9 and more are keep probabilities written as rates"},
            {"conclusive_rate", 0.9,
             "from this rate on a fault even when the run learns: no healthy setup of models/suite or "
             "models/benchmark comes near it, and in the suite every such mutant is killed (worse than its base "
             "over 3 seeds) although 10 of the 22 of the development split still learn enough to pass the trend rules"},
            {"confidence", 0.7, "how sure the warning is when the run does not fail"}};
  }

  void check(const AnalysisContext& ctx, std::vector<Finding>& out) const override {
    const TraceHeader& h = ctx.header();
    const double max_rate = threshold(ctx, "max_rate");
    const Probe* worst = nullptr;
    int count = 0;
    for (const Probe& p : h.probes) {
      if (p.kind != ProbeKind::kForward || !(p.op.drop_rate > max_rate)) continue;
      ++count;
      if (!worst || p.op.drop_rate > worst->op.drop_rate) worst = &p;
    }
    if (!worst) return;
    const double rate = worst->op.drop_rate;
    Finding f = ctx.make(*this, sym::excessive_dropout, Stage::kStatic, worst->layer, std::nullopt);
    f.root_cause = RootCause::kArchitecture;
    f.conclusive = rate >= threshold(ctx, "conclusive_rate");
    f.confidence = f.conclusive ? 0.9 : threshold(ctx, "confidence");
    const double kept = 1.0 - rate;
    f.message = "Dropout '" + worst->node + "' in " + ctx.layer_label(worst->layer) + " zeroes " +
                ru::num(100.0 * rate) + "% of its inputs while training and scales the rest by " +
                ru::num(1.0 / kept) + ": the next layer sees mostly noise" +
                (count > 1 ? " (" + std::to_string(count) + " such Dropout steps)" : "");
    f.recommendation = "lower the dropout rate to 0.2-0.5; if " + ru::num(rate) +
                       " was meant as the probability to KEEP a unit (TF1 keep_prob), the rate is " + ru::num(kept);
    f.evidence = {{"drop_rate", rate}, {"kept_fraction", kept}, {"node", worst->node}, {"dropout_steps", count}};
    if (worst->op.units > 0) f.evidence["units_kept_per_sample"] = kept * double(worst->op.units);
    out.push_back(std::move(f));
  }
};

}  // namespace

std::unique_ptr<Rule> make_rule_excessive_dropout() { return std::make_unique<ExcessiveDropout>(); }

}  // namespace dl::an
