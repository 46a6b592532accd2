// `deeplocalize train` and `deeplocalize analyze`: the main job. Import, train with
// probes, analyse, report; or re-analyse a saved trace.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "analysis/report.h"
#include "analysis/trace.h"
#include "converter/ir.h"
#include "runtime/data/dataset.h"
#include "runtime/data/preprocess.h"
#include "runtime/train_config.h"

namespace dl::cli {

struct TrainOptions {
  std::string model, data;
  std::optional<std::string> loss, optimizer, frozen;
  std::optional<bool> from_logits, nesterov;
  std::optional<double> lr, momentum, decay, clipnorm, clipvalue, validation_split;
  std::optional<int64_t> epochs, batch_size, targets, seed;
  std::string trace_file, report_file, save_file;
  std::string format = "text";
  bool no_stop = false, quiet = false, verbose = false, no_probes = false;
  int64_t probe_every = 1;
  int threads = 0;  // --threads: compute threads (0: all cores); set by run_train and the batch, not per case
  double max_memory_mb = 0;
  double trace_max_mb = 256;
  std::vector<std::string> settings;  // --set rule.key=value
  std::string detector = "deeplocalize";  // or a Keras baseline (analysis/baselines.h)
  // Verified fixes (cli/fix_trials.h).
  bool verify_fixes = false;
  int64_t max_trials = 12;
  double trial_budget_s = 0;  // 0: automatic (see fix_trials.h)
  int64_t trial_jobs = 0;     // 0: one per core
  std::string export_fixed;   // implies verify_fixes
  bool force = false;         // --force: an output may overwrite an input or another output
};

// How diagnose_case runs: `train` shows progress and catches SIGINT/SIGTERM while
// training; a batch runs cases silently.
struct CaseRunOptions {
  bool progress = true;        // progress on stderr (unless options.quiet)
  bool handle_signals = true;  // SIGINT/SIGTERM stop training at the end of the iteration
  bool trial = false;          // a fix trial: writes no --save file
  const std::atomic<bool>* interrupt = nullptr;  // without handle_signals: stops training when set
};

// One case, diagnosed: what `train` reports.
struct CaseResult {
  an::Trace trace;
  an::Diagnosis diagnosis;
  an::RunInfo info;
  nlohmann::json report;  // the contract's JSON report (an::report_json)
  bool interrupted = false;
  int signal = 0;  // the signal that interrupted training
};

// A case read and ready to train: the model (initial weights), the resolved configuration,
// the data split (with any preprocessing the model's metadata records already applied).
// The model is immutable and shared by every graph and fix trial of the case (a repair
// that edits it makes its own copy).
struct LoadedCase {
  std::shared_ptr<const ir::Model> model;
  rt::TrainConfig config;
  an::Settings settings;
  rt::Dataset train, validation;
  rt::Preprocessing preprocessing;  // from the model's metadata (already applied)
  double import_s = 0;
};
LoadedCase load_case(const TrainOptions& options);

// Trains one model on one data split with probes (or a baseline's history) and analyses
// the run. The datasets are taken by value: pass copies to keep the originals.
CaseResult train_case(std::shared_ptr<const ir::Model> model, const rt::TrainConfig& config, rt::Dataset train,
                      rt::Dataset validation, const an::Settings& settings, const TrainOptions& options,
                      const CaseRunOptions& run);

// Set by SIGINT/SIGTERM while `train` runs (training or fix trials).
extern std::atomic<bool> g_interrupted;
extern std::atomic<int> g_signal;
extern "C" void on_signal(int sig);

// The whole `train` pipeline for one case: import, train with probes (or the baseline's
// history only), analyse, and with --verify-fixes try the candidate repairs; writes
// --trace, --save and --export-fixed files when set. Throws dl::Error for bad input like
// `train` does.
CaseResult diagnose_case(const TrainOptions& options, const CaseRunOptions& run = {});

struct AnalyzeOptions {
  std::string trace_file, report_file;
  std::string format = "text";
  std::vector<std::string> settings;
  bool quiet = false, verbose = false, force = false;
};

CLI::App* add_train_command(CLI::App& app, TrainOptions& options);
CLI::App* add_analyze_command(CLI::App& app, AnalyzeOptions& options);
int run_train(const TrainOptions& options);
int run_analyze(const AnalyzeOptions& options);

}  // namespace dl::cli
