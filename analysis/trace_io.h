// Saving and loading traces (`--trace FILE`, `deeplocalize analyze FILE`).
//
// The file format is specified in docs/trace-format.md: a magic line "DLTRACE <version>\n",
// a length-prefixed UTF-8 JSON header (everything in TraceHeader plus the sampling state
// and section counts), then little-endian binary sections (records, statistics, per-
// iteration loss and metric). Fields are written one by one in a documented order, never
// as raw struct dumps, so the format does not depend on the compiler or the platform.
#pragma once

#include <cstdint>
#include <string>

#include "analysis/trace.h"

namespace dl::an {

// The format version this build writes and the newest it reads.
// The recurrent and embedding probe kinds (gates .. rows) and op traits were added within
// version 1: optional header fields, no change to the binary sections (a build from before
// them refuses such a trace naming the unknown probe kind).
constexpr int kTraceFormatVersion = 1;

// Writes `trace` to `path` through io::AtomicFile (io/atomic_file.h): a unique temporary
// file renamed over `path`, so an interrupted run or a concurrent writer never leaves a
// half-written trace behind, and a symlink or special file at `path` is never replaced.
// Throws dl::ConfigError "PATH: cannot write (...)" when the file cannot be written.
void write_trace(const Trace& trace, const std::string& path);

// The bytes write_trace() would write (used by write_trace and by tests).
std::string trace_bytes(const Trace& trace);

// Reads a trace written by write_trace(). Throws dl::DataError "PATH: ..." naming what is
// wrong when the file cannot be read or is not a valid trace (bad magic, newer version,
// truncation, malformed or inconsistent header, out-of-range indices, trailing bytes).
Trace read_trace(const std::string& path);

// Parses trace bytes; `label` names the source in error messages ("LABEL: ..."). Safe on
// arbitrary input: never crashes and never allocates more than the input size justifies.
Trace read_trace_bytes(const std::string& bytes, const std::string& label);

}  // namespace dl::an
