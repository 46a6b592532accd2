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

// Prints the report on stdout (unless quiet and a file is given) and writes it to
// `file` when set. format: "text" or "json".
void emit_report(const an::Diagnosis& diagnosis, const an::Trace& trace, const an::RunInfo& info,
                 const std::string& format, const std::string& file, bool quiet, const TerminalStyle& style);

// Writes a copy of the model with the trained parameter values.
void save_trained_model(const std::string& model_path, const std::string& out_path, const rt::ParamStore& store);

}  // namespace dl::cli
