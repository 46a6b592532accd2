// Helpers shared by several rules: configuration lookup, the model's output layer and
// its traits, learning-rate and update-size summaries, loss curves, number formatting.
// Rules stay small by asking these; nothing here knows op type names.
// Defined in rule_util.cpp (configuration, output, layers, findings, text),
// rule_util_dynamics.cpp (parameter dynamics, learning rate, vanishing cause) and
// rule_util_trend.cpp (curves, windows, line fits, metric judgement).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
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
// The mean over rows of the target columns' sum (one-hot targets: 1).
double target_row_sum(const DataSummary& d);
// Several labels per row: class targets in several columns whose mean row sum is further
// from 1 than `tolerance` (one-hot rows sum to 1). Keras' "accuracy" on such targets is
// categorical (does the highest output hit the first of the row's labels?): it does not
// measure the task.
bool multilabel_targets(const TraceHeader& h, double tolerance = 0.05);

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
// The gradient probe of the layer's output: the one of its last step that has one.
std::optional<size_t> layer_output_gradient_probe(const AnalysisContext& ctx, int layer);
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
// rate); too large when the median update ratio exceeds huge_update, or when the median
// over layers of each weight's largest ratio in the run exceeds peak_update (a first step
// that rewrites the weights, after which the units may be dead and nothing moves).
enum class LrVerdict { kFine, kTooSmall, kTooLarge };
LrVerdict judge_learning_rate(const AnalysisContext& ctx, double tiny_lr, double tiny_update, double huge_update,
                              double peak_update = std::numeric_limits<double>::infinity());
// The median over layers of each weight's largest ||dw||/||w|| in the run.
std::optional<double> median_peak_update_ratio(const AnalysisContext& ctx);

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

// --- per-layer parameter dynamics, trace windows, input scale (dynamic rules) -------------
namespace dl::an::ru {

// The parameter probes (weight, param_grad, update) of one layer.
struct LayerParamProbes {
  int layer = -1;
  std::vector<size_t> weight, grad, update;
};
// Every layer that owns parameter probes, in graph order.
std::vector<LayerParamProbes> param_probes(const AnalysisContext& ctx);
// sqrt of the sum of the probes' squared L2 norms at one record (NaN when one holds NaN/Inf).
double combined_l2(const Trace& t, size_t record, const std::vector<size_t>& probes);
// ||dw|| / ||w|| over all of a layer's parameters at one record: bias vectors that start
// at zero would read 1.0 on their own after the first step, the layer as a whole does not.
// 0 when nothing moved; inf when the weights are zero but moved.
double layer_update_ratio(const Trace& t, size_t record, const LayerParamProbes& p);
// ||grad|| / ||w|| over all of a layer's parameters at one record (inf when ||w|| = 0 < ||grad||).
double layer_relative_grad(const Trace& t, size_t record, const LayerParamProbes& p);
// The layer's parameter norm before training, from the initializer summaries (nullopt when
// none of its parameters is summarised).
std::optional<double> initial_weight_l2(const AnalysisContext& ctx, int layer);
// Largest layer update ratio over records [from, to); its layer in *layer when given (-1 if none).
double max_update_ratio(const AnalysisContext& ctx, size_t from, size_t to, int* layer = nullptr);

// Number of leading records in which the loss and every probe are finite (the whole
// trace when none holds NaN/Inf); AnalysisContext::finite_records(), computed once per
// analysis. Trend rules judge only these: after a NaN, statistics are meaningless.
size_t finite_prefix(const AnalysisContext& ctx);
// [start, end) of the last `n` records of the first `end` ones (fewer when the run is short).
size_t window_start(size_t end, size_t n);
double median(std::vector<double> v);

// Scale of the input features (data summary): the largest |x| and the largest over the
// smallest non-zero per-feature std.
struct InputScale {
  double max_abs = 0;
  double std_spread = 1;
};
InputScale input_scale(const TraceHeader& h);

// Why gradients vanish in layers up to `layer`: weights with std below tiny_std
// (initialization), saturating activations in those layers (activation), else
// architecture. `why` receives a clause for the message, `fix` a recommendation.
RootCause vanishing_cause(const AnalysisContext& ctx, int layer, double tiny_std, std::string& why, std::string& fix);

}  // namespace dl::an::ru

// --- least-squares trend of a per-iteration series (trend rules) ----------------------------
namespace dl::an::ru {

// y = intercept + slope * k fitted over v[from, to) (k = the index in v). `t` is slope / its
// standard error (0 with fewer than 3 points, +-inf for an exact line), `end` the fitted value
// at to - 1, `mean` the mean of the values. Non-finite values are skipped.
struct LineFit {
  double slope = 0, intercept = 0, t = 0, end = 0, mean = 0;
  size_t n = 0;
};
LineFit fit_line(const std::vector<float>& v, size_t from, size_t to);

// Whether a metric value `now` is poor: accuracy below chance + poor_fraction of the way
// from chance to 1 (chance = majority-class rate, else 1/C); an mae above poor_mae target
// standard deviations. `known` is false for other metrics (or targets without spread), and
// for the accuracy of multi-label targets (no chance level can be told).
struct MetricJudgement {
  bool known = false, poor = false;
  double chance = -1;  // accuracy only
  double goal = 0;     // accuracy: chance + 75% of the way to 1
  std::string text;    // "accuracy 0.4 (chance 0.33)", "mae 2.1 (targets' std 3)"
};
MetricJudgement judge_metric(const AnalysisContext& ctx, double now, double poor_fraction, double poor_mae);

// The cross-entropy of a model that learned only the class frequencies of the training
// targets, and the loss of the best constant prediction (regression too): the context's
// LearningProgress::chance_loss and constant_loss (see there), nullopt when unknown.
std::optional<double> chance_loss(const AnalysisContext& ctx);
std::optional<double> constant_prediction_loss(const AnalysisContext& ctx);

// The loss diverged during the run, before iteration `until`: the model had learned (the
// median loss of a window of iterations fell to `learned` times the constant prediction's
// loss or below), then a later window's median was back at or above that loss: its steps
// undid what it had learned (too large a learning rate or momentum). Windows of max(4, an
// epoch / 4) iterations; `low` is the lowest median before the rise, `high` the highest
// after it; nullopt when the loss did not (or the constant prediction's loss is unknown).
struct LossRise {
  double low = 0, high = 0;         // the two window medians
  int64_t low_at = 0, high_at = 0;  // the first iteration of each window
};
std::optional<LossRise> loss_diverged(const AnalysisContext& ctx, int64_t until, double learned);
// What the configured optimizer makes of a step: "the learning rate 0.1" or, with a momentum
// of 0.99 or more, "the learning rate 0.1 with momentum 0.999 (steps up to 1000x the
// rate's)"; and the advice to go with it.
std::string step_size_text(const TraceHeader& h);
std::string step_size_fix(const TraceHeader& h);

}  // namespace dl::an::ru

namespace dl::an::ru {
// The finding that best explains a run among `findings` (e.g. from findings_of): the first
// conclusive one, else the most confident; nullptr when empty.
const Finding* strongest(const std::vector<Finding>& findings);
}  // namespace dl::an::ru

// ---- Op features: attention and LayerNorm (issue 16; analysis/rules/rule_util_features.cpp) ----
namespace dl::an::ru {
// The kFeature probes of `feature`, in program order.
std::vector<size_t> feature_probes(const AnalysisContext& ctx, OpFeature feature);
// How a condition on a feature probe's statistics held from the start of the run, over
// the finite records (finite_prefix) in which the op reported its feature (count > 0).
struct FeatureSpan {
  size_t reported = 0;   // records with the feature
  size_t held = 0;       // leading ones of those in which the condition holds
  size_t first = 0;      // the first record with the feature (valid when reported > 0)
  size_t last_held = 0;  // the last of the leading holding records
  int64_t iterations = 0;  // iterations from `first` to `last_held`, inclusive
  bool all() const { return reported > 0 && held == reported; }
};
FeatureSpan feature_span(const AnalysisContext& ctx, size_t probe, const std::function<bool(const TensorStats&)>& holds);
// The condition is established: it held in every record so far, at least `min_records`
// of them, over `min_epochs` epochs of iterations or until the end of training.
bool persisted(const AnalysisContext& ctx, const FeatureSpan& s, double min_epochs, size_t min_records);
// The first probe of `feature` (program order) whose condition held from its first record
// and persisted, with its span; nullopt when none.
std::optional<std::pair<size_t, FeatureSpan>> first_persisted(const AnalysisContext& ctx, OpFeature feature,
                                                              const std::function<bool(const TensorStats&)>& holds,
                                                              double min_epochs, size_t min_records);
}  // namespace dl::an::ru

// --- recurrent and embedding rules (issue 16) ---------------------------------------------
namespace dl::an::ru {
// The gate of the recurrent and embedding rules: at the end of training, the loss fell
// less than min_improvement, or the final metric is poor (judge_metric with poor_fraction,
// mae above 1 target std): a run that learned its task well has no fault to explain.
// While the run trains (the online analysis) and for a run stopped before its last epoch,
// the run so far is judged instead (failing_so_far), so that a layer's evidence that is
// complete after a few iterations (gates saturated from the first updates) is reported
// there rather than when the epoch ends (issue 17, time to a verdict).
bool run_falls_short(const AnalysisContext& ctx, double min_improvement, double poor_fraction);
// The analysis is final and the run trained all its configured epochs.
bool run_reached_its_length(const AnalysisContext& ctx);
// Iterations a run needs before failing_so_far judges it.
inline constexpr size_t kEarlyIterations = 8;
// The run so far, from at least kEarlyIterations losses: a non-finite loss; or the mean loss
// of the last quarter of the iterations no lower than the first quarter's by min_improvement
// (a relative fall), or at or above 0.97 of the constant prediction's loss.
bool failing_so_far(const AnalysisContext& ctx, double min_improvement);
// Mean of field `f` of `probe` over records [from, to) that are not carried.
double mean_over(const Trace& t, size_t probe, size_t from, size_t to, float TensorStats::*f);
// Root mean square of a statistics record (l2 / sqrt(count)); NaN when it holds NaN/Inf.
double rms_of(const TensorStats& s);
}  // namespace dl::an::ru
