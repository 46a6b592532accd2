// The JSON header of a trace file (docs/trace-format.md): TraceHeader, the sampling
// state, the epoch records and the section counts. Internal to analysis/trace_io.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "analysis/trace.h"

namespace dl::an::trace_json {

// Section counts declared in the header; the binary sections must match them.
struct Counts {
  int64_t records = 0, probes = 0, iterations = 0;
};

nlohmann::json encode(const Trace& trace, int format_version);

// Fills header, epochs, sampling state and `complete` of `trace` from `j` and returns the
// declared section counts. Throws dl::DataError "LABEL: trace header: FIELD: ..." naming
// the missing, mistyped or out-of-range field.
Counts decode(const nlohmann::json& j, int format_version, const std::string& label, Trace& trace);

}  // namespace dl::an::trace_json
