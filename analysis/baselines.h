// The Keras callback baselines of the DeepLocalize paper, for a side-by-side with the
// analysis: TerminateOnNaN, EarlyStopping(monitor="loss", patience=1, min_delta=0),
// EarlyStopping(monitor="accuracy", patience=1, min_delta=0) and the union of the three.
// They read only the per-iteration loss and the per-epoch history of a trace, exactly as
// the callbacks see them, and report a fault when the callback would have stopped
// training (that is how the papers scored them). They never localize: every finding has
// no layer and root cause `unknown`.
#pragma once

#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "analysis/trace.h"

namespace dl::an {

enum class Detector {
  kDeepLocalize,           // the analysis (rules)
  kTerminateOnNaN,         // keras-terminate-on-nan
  kEarlyStoppingLoss,      // keras-early-stopping-loss
  kEarlyStoppingAccuracy,  // keras-early-stopping-accuracy
  kUnion,                  // keras-union: any of the three
};

const char* detector_name(Detector d);
// Throws ConfigError naming the valid names when `name` is not one of them.
Detector detector_from(const std::string& name);
const std::vector<std::string>& detector_names();
inline bool is_baseline(Detector d) { return d != Detector::kDeepLocalize; }

// The baseline's verdict on the trace so far: fault when its callback(s) stopped (or
// would have stopped) training. Findings, earliest first: symptom
// "keras_terminate_on_nan" (stage loss, at the first NaN/Inf batch loss),
// "keras_early_stopping_loss" (stage loss) or "keras_early_stopping_accuracy" (stage
// accuracy) at the epoch where the monitored value failed to improve on the best.
// Notes on the Keras semantics reproduced here:
//  - EarlyStopping starts from best = +inf (loss) / -inf (accuracy); an epoch improves
//    when it is strictly better than the best (min_delta 0); after `patience` (1) epochs
//    without improvement it stops. A NaN epoch value never improves. As in Keras 2.2 (the
//    papers' version) there is no grace epoch.
//  - For regression runs the trace's metric is "mae" (Keras' accuracy is undefined);
//    the accuracy baseline then monitors it in its own direction (lower is better).
Diagnosis baseline_diagnose(Detector d, const Trace& t);

}  // namespace dl::an
