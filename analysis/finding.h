// A finding: one diagnosed symptom, placed (layer, iteration), explained (root cause,
// recommendation) and backed by evidence (the numbers that triggered it).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace dl::an {

// The contract's root-cause vocabulary.
enum class RootCause {
  kData, kLoss, kActivation, kLearningRate, kInitialization, kOptimizer,
  kArchitecture, kTrainingLength, kLabels, kUnknown,
};
const char* root_cause_name(RootCause c);
RootCause root_cause_from(const std::string& name);  // kUnknown when not in the vocabulary

enum class Stage { kStatic, kForward, kBackward, kWeights, kLoss, kAccuracy };
const char* stage_name(Stage s);

// One change to the model, its training configuration or its data.
struct FixAction {
  enum class Kind {
    kLearningRate,   // factor: learning rate multiplied by it
    kOptimizer,      // value: optimizer name (its default learning rate)
    kEpochs,         // factor: epochs multiplied by it (at least `count` epochs)
    kLoss,           // value: loss name (from_logits false)
    kActivation,     // layer, value: op type ("Identity" removes the activation)
    kReinitialize,   // layer, value: "glorot_uniform" or "he_uniform"
    kFeatures,       // value: "standardize" or "minmax"
    kTargets,        // standardise regression targets
    kLabels,         // remap class ids to 0..C-1
  };
  Kind kind = Kind::kLearningRate;
  int layer = -1;
  std::string value;
  double factor = 1;
  int64_t count = 0;

  bool operator==(const FixAction& o) const {
    return kind == o.kind && layer == o.layer && value == o.value && factor == o.factor && count == o.count;
  }
};
const char* fix_kind_name(FixAction::Kind k);

// Loss and metric at the end of a run (the last epoch's means over its batches, Keras'
// history), in the original target units. NaN when not available or not comparable.
struct FixMetrics {
  double loss = std::numeric_limits<double>::quiet_NaN();
  double metric = std::numeric_limits<double>::quiet_NaN();
};

// The outcome of one trial, as the reports show it.
struct FixOutcome {
  std::string change;  // human-readable, e.g. "learning rate 1 -> 0.01"
  std::vector<FixAction> actions;
  RootCause root_cause = RootCause::kUnknown;
  bool verified = false;
  std::string reason;
  std::string metric_name;
  FixMetrics before, after;
  bool targets_scaled = false;   // the fix scales the targets: `after` is converted back,
  FixMetrics after_train_units;  // and this is the run's own (scaled) loss and metric
  std::vector<double> epoch_loss, epoch_metric;  // the trial's history (after the fix)
  int64_t iterations = 0;
  double seconds = 0;
  std::vector<std::string> remaining;  // symptoms the trial still shows
  std::string python_code;             // preprocessing to add to the user's pipeline
  bool loss_comparable = true;         // false when the fix changes the loss function
  int order = 0;                       // proposal order (the evidence's ranking of the candidates)
};

struct Finding {
  std::string symptom;  // rule-specific id, e.g. "nan_forward", "dead_relu"
  std::string rule;     // id of the rule that raised it (its file stem)
  Stage stage = Stage::kForward;
  int layer = -1;                  // -1: no layer (data, learning rate, epochs)
  std::vector<std::string> nodes;  // ONNX nodes of that layer
  int64_t epoch = -1, iteration = -1;
  RootCause root_cause = RootCause::kUnknown;
  std::string message;         // what is wrong, one sentence with the layer and numbers
  std::string recommendation;  // what to do, one sentence a user can act on
  nlohmann::json evidence = nlohmann::json::object();
  // Conclusive: certain to be a fault (training stops unless --no-stop). Others are
  // warnings that count only when the dynamic evidence confirms them.
  bool conclusive = true;
  // A symptom explained by an earlier finding (index into the finding list), e.g. NaN
  // in the loss after NaN in layer 2's output.
  int consequence_of = -1;
  double confidence = 1.0;
  // With --verify-fixes (primary finding): the repairs tried, ranked, best first.
  std::vector<FixOutcome> fixes;
  bool fixes_attempted = false;  // --verify-fixes looked for repairs (fixes may be empty)
};

nlohmann::json to_json(const FixOutcome& f);  // analysis/fixes.cpp
nlohmann::json to_json(const Finding& f);

}  // namespace dl::an
