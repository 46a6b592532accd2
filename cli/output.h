// Writing what the CLI produces: reports (stdout and/or file), saved models, text
// files. Files go through io::AtomicFile (io/atomic_file.h), so a reader never sees a
// half-written one; check_outputs (cli/output_guard.h) has vetted the paths up front.
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

// Writes a text output: to stdout for "-" or "/dev/stdout", to stderr for "/dev/stderr"
// (cli/output_guard.h stream_target_fd), else atomically to the file.
void write_text_output(const std::string& path, const std::string& text);

// Installs a buffer for std::cout that remembers why writing failed, for the life of the
// object. finish() flushes it and throws ConfigError "cannot write to standard output:
// REASON" (e.g. "No space left on device" for >/dev/full) when any write failed, so a
// command whose output was lost exits 2 instead of 0.
class StdoutCheck {
 public:
  StdoutCheck();
  ~StdoutCheck();  // flushes and restores std::cout (never throws)
  StdoutCheck(const StdoutCheck&) = delete;
  StdoutCheck& operator=(const StdoutCheck&) = delete;
  void finish();

 private:
  struct Buffer;
  Buffer* buffer_;
  std::streambuf* previous_;
};

// The format of a report file: "html" when the name ends in .html/.htm or format is
// "html", else `format` ("text" or "json").
std::string report_file_format(const std::string& format, const std::string& file);

// Prints the report on stdout (unless quiet and a file is given) and writes it to
// `file` when set; a `file` naming stdout ("-", "/dev/stdout") replaces the stdout report. format: "text", "json" or "html"; the file is HTML whenever its name
// ends in .html (stdout then gets the text report, or JSON with format "json").
// `verbose` adds the per-layer statistics table to text reports. ANSI colour only when
// style.color (stderr is a terminal and NO_COLOR is unset) and stdout is a terminal.
void emit_report(const an::Diagnosis& diagnosis, const an::Trace& trace, const an::RunInfo& info,
                 const std::string& format, const std::string& file, bool quiet, const TerminalStyle& style,
                 bool verbose = false);

// Writes a copy of the model with the trained parameter values.
void save_trained_model(const ir::Model& model, const std::string& out_path, const rt::ParamStore& store);

}  // namespace dl::cli
