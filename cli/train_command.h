// `deeplocalize train` and `deeplocalize analyze`: the main job. Import, train with
// probes, analyse, report; or re-analyse a saved trace.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dl::cli {

struct TrainOptions {
  std::string model, data;
  std::optional<std::string> loss, optimizer;
  std::optional<bool> from_logits, nesterov;
  std::optional<double> lr, momentum, decay, clipnorm, clipvalue, validation_split;
  std::optional<int64_t> epochs, batch_size, targets, seed;
  std::string trace_file, report_file, save_file;
  std::string format = "text";
  bool no_stop = false, quiet = false, verbose = false, no_probes = false;
  int64_t probe_every = 1;
  double max_memory_mb = 0;
  double trace_max_mb = 256;
  std::vector<std::string> settings;  // --set rule.key=value
};

struct AnalyzeOptions {
  std::string trace_file, report_file;
  std::string format = "text";
  std::vector<std::string> settings;
  bool quiet = false;
};

CLI::App* add_train_command(CLI::App& app, TrainOptions& options);
CLI::App* add_analyze_command(CLI::App& app, AnalyzeOptions& options);
int run_train(const TrainOptions& options);
int run_analyze(const AnalyzeOptions& options);

}  // namespace dl::cli
