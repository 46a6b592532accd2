// Helpers shared by several rules: configuration lookup, the model's output layer and
// its traits, learning-rate and update-size summaries, loss curves, number formatting.
// Rules stay small by asking these; nothing here knows op type names.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "analysis/context.h"
#include "analysis/finding.h"
#include "analysis/trace.h"

namespace dl::an::ru {

// --- configuration (the trace header's config map) ---------------------------------
std::string config(const TraceHeader& h, const std::string& key, const std::string& fallback = "");
// The number under `key`, or `fallback` when absent or not a number.
double config_number(const TraceHeader& h, const std::string& key, double fallback);
bool from_logits(const TraceHeader& h);
// binary/categorical/sparse_categorical cross-entropy.
bool is_cross_entropy(const std::string& loss);
// mse, mae, huber (and their long names): the targets are values the output must reach.
bool is_regression_loss(const std::string& loss);
// The configured learning rate, else the optimizer's Keras default (adam 0.001, sgd 0.01...).
double learning_rate(const TraceHeader& h);
double keras_default_learning_rate(const std::string& optimizer);

// --- the model's output ---------------------------------------------------------------
struct OutputLayer {
  int layer = -1;               // index of the last layer, -1 when the header has none
  std::optional<size_t> probe;  // its last forward probe that changes values (shape ops skipped)
  OpDescription op;             // that probe's traits (unbounded linear when no probe)
  std::string node;             // its ONNX node
  int64_t units = 0;            // normalised-axis size for normalising ops, else output width
};
OutputLayer output_layer(const AnalysisContext& ctx);
// The output is bounded to [0, 1] or sums to 1: probabilities, not logits.
bool outputs_probabilities(const OpDescription& op);
// "[0, inf)", "(-inf, inf)", "[-1, 1]".
std::string range_text(double lo, double hi);

// --- layers -----------------------------------------------------------------------------
// Forward probes of one layer, in program order.
std::vector<size_t> layer_forward_probes(const AnalysisContext& ctx, int layer);
// The layer's parameterised (anchor) forward probe, if any.
std::optional<size_t> anchor_probe(const AnalysisContext& ctx, int layer);
// Output units of a layer (anchor's units, else the widest of its probes); 0 if unknown.
int64_t layer_units(const AnalysisContext& ctx, int layer);

// --- training dynamics --------------------------------------------------------------------
// Relative update size ||dw||/||w|| of each layer's first parameter (its weight), averaged
// over the last half of the records; the median over layers. nullopt without records.
std::optional<double> median_update_ratio(const AnalysisContext& ctx);

// The learning rate judged from the update sizes: too small when lr <= tiny_lr, or when
// the median update ratio is below tiny_update with an lr under a tenth of the
// optimizer's default (a normal lr with tiny updates means vanishing gradients, not the
// rate); too large when the median update ratio exceeds huge_update.
enum class LrVerdict { kFine, kTooSmall, kTooLarge };
LrVerdict judge_learning_rate(const AnalysisContext& ctx, double tiny_lr, double tiny_update, double huge_update);

// A smoothed loss/metric curve: per-epoch means when there are at least `min_epochs`
// complete epochs, else means of about `points` equal windows of the per-iteration
// values. `per_epoch` says which; `iterations_per_point` converts points to iterations.
struct Curve {
  std::vector<double> loss, metric;
  bool per_epoch = false;
  double iterations_per_point = 1;
};
Curve curve(const AnalysisContext& ctx, size_t min_epochs = 4, size_t points = 10);

// The last iteration/epoch of the run (for findings judged at the end of training).
void place_at_end(const AnalysisContext& ctx, Finding& f);

// Findings of the named rules (those registered), e.g. the static checks a trend rule
// defers to. Never call it with the calling rule's own id.
std::vector<Finding> findings_of(const AnalysisContext& ctx, std::initializer_list<const char*> rule_ids);

// --- text -----------------------------------------------------------------------------------
// Compact number: 3 significant digits ("0.00123", "1.5e+04", "inf").
std::string num(double v);

}  // namespace dl::an::ru
