// Fills the trace header with what the analysis needs to know about a run: layers,
// configuration, initializer and data summaries. Probes are declared by ProbeRecorder.
#pragma once

#include "analysis/trace.h"
#include "runtime/data/dataset.h"
#include "runtime/graph.h"
#include "runtime/train_config.h"

namespace dl::rt {

void describe_run(const ExecutionGraph& graph, const TrainConfig& config, const Dataset& train,
                  const std::string& metric_name, bool metric_higher_is_better, an::TraceHeader& header);

// With count_bounds, also the values beyond 0, -1 and 1 (ColumnSummary::below_zero, ...).
an::ColumnSummary summarize(const float* values, int64_t count, int64_t stride, bool count_bounds = false);

}  // namespace dl::rt
