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

// The fields a repair kind carries (analysis/repair_list.def): a bit set.
constexpr unsigned kRepairLayer = 1, kRepairValue = 2, kRepairFactor = 4, kRepairCount = 8;

// One change to the model, its training configuration or its data: a repair kind of
// analysis/repair_list.def and the fields that kind carries (the others keep their
// defaults). What each kind does: its `doc` there.
struct FixAction {
  enum class Kind {
#define DL_REPAIR(stem, Name, fields, scope, doc) k##Name,
#include "analysis/repair_list.def"
#undef DL_REPAIR
  };
  Kind kind = Kind::kLearningRate;
  int layer = -1;     // kRepairLayer: the layer's index (trace header)
  std::string value;  // kRepairValue: an op type, optimizer, loss, initializer or scaling
  double factor = 1;  // kRepairFactor
  int64_t count = 0;  // kRepairCount

  bool operator==(const FixAction& o) const {
    return kind == o.kind && layer == o.layer && value == o.value && factor == o.factor && count == o.count;
  }
};
const char* fix_kind_name(FixAction::Kind k);  // the kind's stem (analysis/repair_kinds.h)

// Loss and metric at the end of a run (the last epoch's means over its batches, Keras'
// history), in the original target units. NaN when not available or not comparable.
struct FixMetrics {
  double loss = std::numeric_limits<double>::quiet_NaN();
  double metric = std::numeric_limits<double>::quiet_NaN();
};

// How a trial ended (the reports' `reason` says it in words).
enum class TrialStatus {
  kVerified,
  kSymptomRemains,  // the primary symptom is still there
  kNewFault,        // a conclusive fault the faulty run did not have
  kInfiniteLoss,
  kNoImprovement,
  kCutShort,       // stopped by the trial budget
  kCouldNotTrain,  // the repair could not be applied to the data or trained
};

// The outcome of one trial, as the reports show it.
// A trial's accuracy on rows it did not train on: the user's validation split, or a
// stratified fifth of the rows the fix trials hold out (docs/fixes.md). rows 0: no check.
struct HeldOutAccuracy {
  int64_t rows = 0;
  double accuracy = std::numeric_limits<double>::quiet_NaN();  // the trial's last epoch
  double chance = std::numeric_limits<double>::quiet_NaN();    // the majority class's share
};

struct FixOutcome {
  std::string change;  // human-readable, e.g. "learning rate 1 -> 0.01"
  std::vector<FixAction> actions;
  RootCause root_cause = RootCause::kUnknown;
  bool verified = false;
  TrialStatus status = TrialStatus::kNoImprovement;
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
  HeldOutAccuracy held_out;            // the trial on rows it did not train on (rows 0: none)
};

// With --verify-fixes: what the verified repairs say about where the fault is
// (analysis/fix_localize.cpp, DeepMufl-style). A repair that edits layers (activation,
// initialization) and removes the fault points at those layers; one that changes only the
// training configuration or the data (learning rate, loss, scaling) points away from them.
// Decisive: the best-ranked verified repair that changes only layers, or only the training
// configuration and the data.
struct RepairLocalization {
  enum class Status {
    kNotTried,     // no repairs were tried
    kConfirmed,    // the best decisive repair (below) edits only layers, the finding's among them
    kOtherLayer,   // it edits only layers, not the finding's (or the finding has no layer)
    kNotLayer,     // the best decisive repair changes only the training or the data
    kMixed,        // only repairs that change a layer and the training or data at once are verified
    kUnconfirmed,  // no repair is verified
  };
  struct LayerScore {
    int layer = -1;
    double score = 0;  // each verified layer-only repair adds 1 / (the layers it edits)
    int repairs = 0;   // verified layer-only repairs that edit it
  };
  Status status = Status::kNotTried;
  std::vector<LayerScore> ranking;  // highest score first, then graph order
  int repair = -1;                  // index in Finding::fixes of the repair behind the status
};
const char* repair_localization_name(RepairLocalization::Status s);

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
  // The rule's own reading of a learning-rate fault, when it knows better than its
  // symptom's pace (symptom_list.def): -1 too large, +1 too small, 0 the pace decides.
  // unchanged_weights is slow by pace, but after a blow-up into saturation the rate is too large.
  int lr_direction = 0;
  // With --verify-fixes (primary finding): the repairs tried, ranked, best first.
  std::vector<FixOutcome> fixes;
  bool fixes_attempted = false;  // --verify-fixes looked for repairs (fixes may be empty)
  RepairLocalization repair_localization;  // from `fixes` (localize_by_repair)
};

nlohmann::json to_json(const FixOutcome& f);  // analysis/fixes.cpp
nlohmann::json to_json(const Finding& f);

}  // namespace dl::an
