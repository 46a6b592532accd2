// Writing what the CLI produces: reports (stdout and/or file), saved models, text
// files. Files are written to a temporary name and renamed, so a reader never sees a
// half-written one.
#pragma once

#include <string>

#include "analysis/analyzer.h"
#include "analysis/report.h"
#include "analysis/trace.h"
#include "cli/progress.h"
#include "runtime/graph.h"

#ifndef DL_VERSION_STRING
#define DL_VERSION_STRING "0.0.0"
#endif

namespace dl::cli {

void write_text_atomically(const std::string& path, const std::string& text);

// The format of a report file: "html" when the name ends in .html/.htm or format is
// "html", else `format` ("text" or "json").
std::string report_file_format(const std::string& format, const std::string& file);

// Prints the report on stdout (unless quiet and a file is given) and writes it to
// `file` when set. format: "text", "json" or "html"; the file is HTML whenever its name
// ends in .html (stdout then gets the text report, or JSON with format "json").
// `verbose` adds the per-layer statistics table to text reports. ANSI colour only when
// style.color (stderr is a terminal and NO_COLOR is unset) and stdout is a terminal.
void emit_report(const an::Diagnosis& diagnosis, const an::Trace& trace, const an::RunInfo& info,
                 const std::string& format, const std::string& file, bool quiet, const TerminalStyle& style,
                 bool verbose = false);

// Writes a copy of the model with the trained parameter values.
void save_trained_model(const std::string& model_path, const std::string& out_path, const rt::ParamStore& store);

}  // namespace dl::cli
