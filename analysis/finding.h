// A finding: one diagnosed symptom, placed (layer, iteration), explained (root cause,
// recommendation) and backed by evidence (the numbers that triggered it).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
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
};

nlohmann::json to_json(const Finding& f);

}  // namespace dl::an
