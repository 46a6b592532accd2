// Internal to ProbeRecorder (runtime/probes.h): one parameter's state, shared by the
// step side (runtime/probes.cpp) and the parameter side (runtime/probes_params.cpp).
#pragma once

#include "analysis/trace.h"
#include "runtime/parallel.h"
#include "runtime/probe_stats.h"
#include "runtime/probes.h"

namespace dl::rt {

// One parameter's sums of this iteration, gathered chunk by chunk by the optimizer, and
// its last full statistics (weight, param_grad, update), carried into the other records.
struct ProbeRecorder::ParamState {
  // (Cache lines of its own: parts come from different threads.) Cleared by after_update
  // as it merges them, so a full iteration starts from clear parts without a pass over
  // every parameter's.
  struct alignas(64) Part {
    stats::ParamSums sums;
    bool seen = false;
  };
  Part parts[kMaxElementwiseParts];
};

}  // namespace dl::rt
