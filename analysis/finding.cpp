#include "analysis/finding.h"

namespace dl::an {

const char* root_cause_name(RootCause c) {
  switch (c) {
    case RootCause::kData: return "data";
    case RootCause::kLoss: return "loss";
    case RootCause::kActivation: return "activation";
    case RootCause::kLearningRate: return "learning_rate";
    case RootCause::kInitialization: return "initialization";
    case RootCause::kOptimizer: return "optimizer";
    case RootCause::kArchitecture: return "architecture";
    case RootCause::kTrainingLength: return "training_length";
    case RootCause::kLabels: return "labels";
    case RootCause::kUnknown: return "unknown";
  }
  return "unknown";
}

RootCause root_cause_from(const std::string& name) {
  for (int k = 0; k <= static_cast<int>(RootCause::kUnknown); ++k)
    if (name == root_cause_name(static_cast<RootCause>(k))) return static_cast<RootCause>(k);
  return RootCause::kUnknown;
}

const char* stage_name(Stage s) {
  switch (s) {
    case Stage::kStatic: return "static";
    case Stage::kForward: return "forward";
    case Stage::kBackward: return "backward";
    case Stage::kWeights: return "weights";
    case Stage::kLoss: return "loss";
    case Stage::kAccuracy: return "accuracy";
  }
  return "?";
}

}  // namespace dl::an
