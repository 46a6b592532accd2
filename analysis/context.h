// What a rule sees: the trace, the thresholds, whether training has ended, and
// helpers shared by rules (probe lookup, learning progress, finding construction).
#pragma once

#include <optional>
#include <vector>

#include "analysis/finding.h"
#include "analysis/rule.h"
#include "analysis/symptoms.h"
#include "analysis/trace.h"

namespace dl::an {

// How well the run is learning, judged from the loss and metric curves alone.
struct LearningProgress {
  int64_t iterations = 0;
  double first_loss = 0;   // mean loss over the first window
  double last_loss = 0;    // mean loss over the last window
  double best_loss = 0;    // lowest window mean
  double loss_improvement = 0;  // (first - last) / |first|, 0 when undefined
  bool loss_finite = true;
  double first_metric = 0, last_metric = 0;
  double chance_metric = -1;  // accuracy of guessing the majority class; -1 when not classification
  // The cross-entropy of predicting only the class frequencies (their entropy): binary per
  // column, averaged; one-hot categorical; class ids (sparse, or one column given to
  // categorical_crossentropy) when balanced (ln C, majority rate at most 1.5 / C). -1 when
  // unknown (other losses, targets outside [0, 1], unbalanced ids).
  double chance_loss = -1;
  // The loss of the best constant prediction: chance_loss for cross-entropies, the targets'
  // variance for mse, their mean absolute deviation (~0.8 std) for mae; -1 when unknown.
  double constant_loss = -1;
  bool enough = false;        // enough iterations to judge trends
};

class AnalysisContext {
 public:
  AnalysisContext(const Trace& trace, const Settings& settings, bool final);

  const Trace& trace() const { return trace_; }
  const TraceHeader& header() const { return trace_.header; }
  const Settings& settings() const { return settings_; }
  // True at the end of training: trend rules judge only then (or when called offline).
  bool final() const { return final_; }
  const LearningProgress& progress() const { return progress_; }
  // The AUTOTRAINER gate: the run is failing to learn (the loss fell less than
  // min_improvement, the accuracy is at chance, or the loss ends at the constant
  // prediction's). Trend symptoms only count then.
  bool failing_to_learn(double min_improvement) const;

  // Probe indices of one kind, in probe order (program order for forward/gradient).
  std::vector<size_t> probes(ProbeKind kind) const;
  // The forward probe of each layer's last step (the layer's output), by layer.
  std::optional<size_t> layer_output_probe(int layer) const;
  // First record index at or after which `pred(stats)` holds for `probe`.
  template <class Pred>
  std::optional<size_t> first_record(size_t probe, Pred pred) const {
    for (size_t r = 0; r < trace_.size(); ++r)
      if (pred(trace_.at(r, probe))) return r;
    return std::nullopt;
  }

  // A finding pre-filled with the rule id, layer nodes and the record's iteration/epoch.
  Finding make(const Rule& rule, const Symptom& symptom, Stage stage, int layer,
               std::optional<size_t> record) const;
  std::string layer_label(int layer) const;  // "layer 2 (/4/Gemm, /5/Softmax)"
  // Records before the first one whose loss or any probe holds NaN/Inf (all records when
  // none does). Scanned once per context: several rules ask it in every online analysis.
  size_t finite_records() const;

 private:
  const Trace& trace_;
  const Settings& settings_;
  bool final_;
  LearningProgress progress_;
  mutable std::optional<size_t> finite_records_;
};

}  // namespace dl::an
