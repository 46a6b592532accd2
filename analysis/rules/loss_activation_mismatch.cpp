// Static: the last layer's activation does not suit the loss (from its traits and the
// configured loss / from_logits), e.g. softmax over one unit, probabilities fed to a
// from-logits loss, logits fed to a probability cross-entropy. An output that a
// probability cross-entropy clips (logits or a ReLU fed to it) is confirmed by the run
// when the clip takes the gradient of a large share of the outputs (clipped_outputs).
#include <algorithm>
#include <cmath>

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an {
namespace {

// What the run shows of a probability cross-entropy clipping the model's outputs. The loss
// passes no gradient to an output it clips to [1e-7, 1 - 1e-7] (runtime/loss.h). With
// binary_crossentropy and sparse_categorical_crossentropy that is the only way an output's
// gradient is exactly 0, so the exact zeros of the output gradient count the clipped
// outputs. categorical_crossentropy normalises each row first: a row whose target's
// probability is clipped gets no gradient at all, any other row no exact 0, so there the
// zeros count the rows left without a gradient.
struct Clipping {
  double fraction = 0;       // median share of the output gradient's exact zeros
  size_t records = 0;        // over this many fully reduced records
  int64_t from = 0, to = 0;  // between these iterations
};

// Over the last stretch of the run (its last quarter, at least an epoch of iterations, and
// only once an epoch has been trained, or kEarlyIterations when the epoch's length is not
// known, or the run has ended): nullopt when there is not enough of it yet, or when rows
// with invalid class ids (which get no gradient either) make the zeros ambiguous. A record
// counts its zeros only when the output's own values show what the clip catches there
// (values below 0 or above 1; for a ReLU output, its zeros or values above 1): an output
// whose values stayed in [0, 1] is counted as unclipped, whatever its gradient.
std::optional<Clipping> clipped_outputs(const AnalysisContext& ctx, const ru::OutputLayer& o, bool relu_like,
                                        size_t min_records) {
  const std::optional<size_t> probe = ru::layer_output_gradient_probe(ctx, o.layer);
  const Trace& t = ctx.trace();
  const size_t end = ru::finite_prefix(ctx);
  if (!probe || !o.probe || end == 0 || ctx.header().data_summary.label_issue_count > 0) return std::nullopt;
  const int64_t last = t.records[end - 1].iteration;
  const int64_t epoch = std::max<int64_t>(1, ctx.header().batches_per_epoch);
  const int64_t settled = ctx.header().batches_per_epoch > 0 ? epoch : int64_t(ru::kEarlyIterations);
  if (!ctx.final() && last + 1 < settled) return std::nullopt;
  const int64_t from = last - std::max(epoch, (last + 1) / 4) + 1;
  Clipping c;
  std::vector<double> zeros;
  for (size_t r = end; r-- > 0 && t.records[r].iteration >= from;) {
    const TensorStats& g = t.at(r, *probe);
    const TensorStats& y = t.at(r, *o.probe);
    if (g.count == 0 || g.fractions_carried() || y.count == 0) continue;
    const bool outside = y.min < 0.0f || y.max > 1.0f || (relu_like && (y.min <= 0.0f));
    zeros.push_back(outside ? double(g.zero_frac) : 0.0);
    if (zeros.size() == 1) c.to = t.records[r].iteration;
    c.from = t.records[r].iteration;
  }
  if (zeros.size() < min_records) return std::nullopt;
  c.records = zeros.size();
  c.fraction = ru::median(zeros);
  return c;
}

class LossActivationMismatch : public Rule {
 public:
  std::string id() const override { return "loss_activation_mismatch"; }
  std::string description() const override {
    return "The last layer's activation does not suit the loss (softmax over one unit, sigmoid with "
           "categorical cross-entropy, probabilities fed to a from-logits loss, logits or ReLU fed to a "
           "probability cross-entropy)";
  }
  std::vector<Threshold> thresholds() const override {
    return {{"many_classes", 2,
             "sigmoid outputs with categorical_crossentropy are flagged from this many output units "
             "(one unit is a different fault: a single-unit categorical loss)"},
            {"row_sum_tolerance", 0.05, "one-hot targets sum to 1 per row: a mean row sum further from 1 than this "
                                        "means several labels per row (multi-label data)"},
            {"conclusive_row_sum", 0.5, "conclusive when the mean target row sum is this far from 1: a "
                                        "distribution over classes (softmax / categorical loss) cannot fit them"},
            {"logits_confidence", 0.9,
             "confidence that probabilities fed to a from-logits loss stall training (the loss sees "
             "a nearly uniform softmax of values in [0, 1])"},
            {"clipped_outputs", 0.25,
             "logits or a ReLU fed to a probability cross-entropy are a confirmed fault when the loss clips "
             "this share of the outputs (median over the last quarter of the run, at least an epoch): "
             "they get no gradient"},
            {"clipped_min_records", 3, "fully reduced records the clipped share needs"}};
  }

  void check(const AnalysisContext& ctx, std::vector<Finding>& out) const override {
    const TraceHeader& h = ctx.header();
    const std::string loss = ru::config(h, "loss");
    if (loss.empty() || h.layers.empty()) return;
    const bool logits = ru::from_logits(h);
    const ru::OutputLayer o = ru::output_layer(ctx);
    const OpDescription& op = o.op;
    const bool ce = ru::is_cross_entropy(loss);
    const bool categorical = loss == "categorical_crossentropy" || loss == "sparse_categorical_crossentropy";
    const bool probabilities = ru::outputs_probabilities(op);
    const bool relu_like = op.has_dead_zone && op.out_lo == 0.0 && std::isinf(op.out_hi);
    const bool unbounded = !probabilities && !relu_like;
    const std::string where = ctx.layer_label(o.layer);
    const std::string node = o.node.empty() ? "its output" : o.node;

    auto emit = [&](const Symptom& symptom, RootCause cause, bool conclusive, double confidence,
                    const std::string& message, const std::string& fix) {
      Finding f = ctx.make(*this, symptom, Stage::kStatic, o.layer, std::nullopt);
      f.root_cause = cause;
      f.conclusive = conclusive;
      f.confidence = confidence;
      f.message = message;
      f.recommendation = fix;
      f.evidence = {{"loss", loss},         {"from_logits", logits},   {"output_node", o.node},
                    {"output_units", o.units}, {"out_lo", op.out_lo}, {"out_hi", op.out_hi},
                    {"normalizes", op.normalizes}, {"dead_zone", op.has_dead_zone}};
      out.push_back(std::move(f));
    };
    // The run confirms a clipped output: makes the last finding conclusive.
    auto confirm_clipping = [&]() {
      const auto c = clipped_outputs(ctx, o, relu_like, static_cast<size_t>(threshold(ctx, "clipped_min_records")));
      if (!c) return;
      Finding& f = out.back();
      f.evidence["clipped_output_fraction"] = c->fraction;
      f.evidence["clipped_records"] = c->records;
      if (c->fraction < threshold(ctx, "clipped_outputs")) return;
      f.conclusive = true;
      f.confidence = std::max(f.confidence, 0.9);
      const std::string share = ru::num(100.0 * c->fraction) + "%";
      f.message += "; the run confirms it: " +
                   (loss == "categorical_crossentropy"
                        ? "the loss clipped the target's probability in " + share + " of the rows, which got no "
                                                                                "gradient at all"
                        : "the loss clipped " + share + " of " + where + "'s outputs, which got no gradient") +
                   " (median of " + std::to_string(c->records) + " records, iterations " + std::to_string(c->from) +
                   " to " + std::to_string(c->to) + ")";
    };

    // A softmax over one unit outputs exactly 1.0 for every sample, whatever the loss.
    if (op.normalizes && o.units == 1) {
      std::string fix = ru::is_regression_loss(loss)
                            ? "remove the softmax (" + node + ") so " + where + " has a linear output for " + loss
                            : "replace the softmax (" + node + ") with a sigmoid and use binary_crossentropy, or "
                              "give " + where + " one unit per class for categorical_crossentropy";
      emit(sym::softmax_single_unit, RootCause::kActivation, true, 1.0,
           where + " applies softmax to a single unit: its output is always 1.0 and the loss cannot change",
           fix);
      return;
    }
    // Categorical cross-entropy over one output: the prediction is normalised to 1.0
    // (or soft-maxed over one logit), so the loss is constantly 0.
    if (categorical && o.units == 1) {
      emit(sym::categorical_single_unit, RootCause::kLoss, true, 1.0,
           where + " has one output unit but the loss is " + loss +
               ", which normalises each prediction over the units: the loss is always 0",
           "use binary_crossentropy with a sigmoid output for two classes, or make " + where + " " +
               "as wide as the number of classes with a softmax");
      return;
    }
    if (!ce) return;
    // Several 1s per target row (multi-label) with a loss or output that makes classes compete.
    const DataSummary& d = h.data_summary;
    const double row_sum = ru::target_row_sum(d);
    const double off = std::fabs(row_sum - 1.0);
    const bool multi_label = d.target_columns.size() > 1 && d.label_issue_count == 0 &&
                             off > threshold(ctx, "row_sum_tolerance");
    if (multi_label && (loss == "categorical_crossentropy" || op.normalizes)) {
      emit(loss == "categorical_crossentropy" ? sym::multilabel_categorical : sym::multilabel_softmax,
           loss == "categorical_crossentropy" ? RootCause::kLoss : RootCause::kActivation,
           off >= threshold(ctx, "conclusive_row_sum"), 0.9,
           "the targets have " + ru::num(row_sum) + " labels per row on average (multi-label) but " +
               (loss == "categorical_crossentropy" ? loss + " with " + where + " treats them as one class per sample"
                                                   : where + " applies softmax, so its outputs compete and sum to 1"),
           "use a sigmoid output on " + where + " with binary_crossentropy for multi-label targets");
      out.back().evidence["target_row_sum"] = row_sum;
      return;
    }
    if (logits && probabilities) {
      emit(sym::probabilities_to_logits_loss, RootCause::kLoss, false, threshold(ctx, "logits_confidence"),
           where + " outputs probabilities in " + ru::range_text(op.out_lo, op.out_hi) + " but " + loss +
               " is configured with from_logits=true, so they are squashed a second time and the gradients "
               "become tiny",
           "set from_logits to false (--from-logits false), or remove the final activation of " + where +
               " so the loss receives logits");
      return;
    }
    if (op.normalizes && loss == "binary_crossentropy" && o.units > 1) {
      emit(sym::softmax_binary_crossentropy, RootCause::kLoss, false, 0.7,
           where + " applies softmax over " + std::to_string(o.units) +
               " units but the loss is binary_crossentropy, which treats each unit as an independent yes/no",
           "use categorical_crossentropy for one class per sample, or sigmoid outputs of " + where +
               " for multi-label targets");
      return;
    }
    if (categorical && probabilities && !op.normalizes && !logits &&
        double(o.units) >= threshold(ctx, "many_classes")) {
      emit(sym::sigmoid_categorical_crossentropy, RootCause::kActivation, false, 0.7,
           where + " outputs " + std::to_string(o.units) + " independent values in " +
               ru::range_text(op.out_lo, op.out_hi) + " (no softmax) but the loss is " + loss +
               ", which expects one probability distribution per sample",
           "use a softmax activation instead of " + node + " on " + where + " with " + loss);
      return;
    }
    if (relu_like) {
      // A normalising probability loss divides by the row sum: a row of zeros is 0/0 = NaN,
      // and a ReLU output produces one as soon as every unit of a sample is in its dead zone.
      const bool divides = categorical && !logits;
      const std::string act = logits ? "no activation (raw logits)"
                                     : (loss == "binary_crossentropy" ? "a sigmoid" : "a softmax");
      emit(sym::relu_output_crossentropy, RootCause::kActivation, divides, divides ? 0.9 : 0.8,
           where + " ends in a ReLU-like activation with output " + ru::range_text(op.out_lo, op.out_hi) +
               " and a dead zone at 0, which cannot express " + (logits ? "negative logits" : "probabilities") +
               " for " + loss +
               (divides ? " (a sample whose outputs are all 0 makes the normalised prediction 0/0 = NaN)" : ""),
           "replace the final ReLU (" + node + ") of " + where + " with " + act + " for " + loss);
      if (!logits && !divides) confirm_clipping();
      return;
    }
    if (!logits && unbounded) {
      const bool has_activation = op.role == "activation";
      const std::string act = loss == "binary_crossentropy" ? "sigmoid" : "softmax";
      emit(sym::logits_to_probability_loss, has_activation ? RootCause::kActivation : RootCause::kLoss, false, 0.8,
           where + " outputs values in " + ru::range_text(op.out_lo, op.out_hi) + ", not probabilities, but " + loss +
               " with from_logits=false expects probabilities and clips them to [1e-7, 1 - 1e-7]",
           has_activation ? "replace the final activation (" + node + ") of " + where + " with " + act
                          : "set from_logits to true (--from-logits true) if " + where +
                                " outputs logits, or add a " + act + " activation after it");
      confirm_clipping();
    }
  }
};

}  // namespace

std::unique_ptr<Rule> make_rule_loss_activation_mismatch() { return std::make_unique<LossActivationMismatch>(); }

}  // namespace dl::an
