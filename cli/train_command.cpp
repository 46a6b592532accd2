#include "cli/train_command.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <tuple>

#include <unistd.h>

#include "analysis/analyzer.h"
#include "analysis/baselines.h"
#include "analysis/report.h"
#include "analysis/trace_io.h"
#include "cli/fix_trials.h"
#include "cli/online_analysis.h"
#include "cli/option_bindings.h"
#include "cli/output.h"
#include "cli/output_guard.h"
#include "cli/progress.h"
#include "converter/errors.h"
#include "converter/import.h"
#include "runtime/export_adapt.h"
#include "runtime/param_roles.h"
#include "runtime/probes.h"
#include "runtime/run_summary.h"
#include "runtime/threads.h"
#include "runtime/trainer.h"

namespace dl::cli {

std::atomic<bool> g_interrupted{false};
std::atomic<int> g_signal{0};
extern "C" void on_signal(int sig) {
  g_signal.store(sig);
  g_interrupted.store(true);
}

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }


// The notes of settings the command line made moot join the model's (stderr, the report).
rt::TrainConfig resolve_config(ir::Model& model, const TrainOptions& o) {
  rt::TrainConfig c = rt::config_from_metadata(model.metadata, model.path);
  for (std::string& note : apply_overrides(o, c)) model.warnings.push_back(std::move(note));
  c.max_memory_bytes = static_cast<int64_t>(std::ceil(o.max_memory_mb * 1024 * 1024));  // > 0: 0 means the default
  rt::validate(c);
  return c;
}

// Sample shape and output width from a batch-1 forward plan of the model (sharing the
// model, its buffers counted against the memory cap, freed before training plans its own).
rt::DatasetSpec dataset_spec(const std::shared_ptr<const ir::Model>& model, const rt::TrainConfig& c) {
  rt::GraphOptions go;
  go.batch_size = 1;
  go.max_memory_bytes = c.max_memory_bytes;
  rt::ExecutionGraph probe(model, go);
  if (probe.input_names().size() != 1)
    throw ConfigError(model->path + ": training needs a model with exactly one data input (this one has " +
                      std::to_string(probe.input_names().size()) + ")");
  rt::DatasetSpec spec;
  spec.targets = c.targets;
  const rt::Shape& in = probe.input(0).shape();
  spec.sample_shape = rt::Shape(in.begin() + 1, in.end());
  spec.input_name = probe.input_names()[0];
  const rt::Tensor& out = probe.output(0);
  spec.output_width = out.numel();
  if (c.loss == "sparse_categorical_crossentropy")
    spec.encoding = rt::DatasetSpec::Encoding::kSparse;
  else if (c.loss == "categorical_crossentropy" && c.targets == 1 && spec.output_width > 1)
    spec.encoding = rt::DatasetSpec::Encoding::kOneHot;
  return spec;
}

an::RunInfo run_info(const TrainOptions& o, const rt::TrainResult& r) {
  an::RunInfo info;
  info.tool_version = DL_VERSION_STRING;
  info.model = o.model;
  info.data = o.data;
  info.iterations = r.iterations;
  info.epochs = r.epochs;
  info.stopped_early = r.stopped_early;
  info.complete = !r.interrupted;
  info.metric_name = r.metric_name;
  for (const rt::EpochSummary& e : r.history) {
    info.epoch_loss.push_back(e.loss);
    info.epoch_metric.push_back(e.metric);
    if (e.has_validation) {
      info.epoch_val_loss.push_back(e.val_loss);
      info.epoch_val_metric.push_back(e.val_metric);
    }
  }
  return info;
}

// The loss history a Keras callback sees: every batch loss and the epoch logs.
class HistoryRecorder : public rt::TrainListener {
 public:
  explicit HistoryRecorder(an::Trace& trace) : trace_(trace) {}
  void after_update(const rt::ExecutionGraph&, const rt::IterationInfo& i) override {
    trace_.add_loss(i.iteration, float(i.loss), float(i.metric));
  }
  void on_epoch_end(const rt::EpochSummary& s) override {
    an::EpochRecord e;
    e.epoch = s.epoch, e.loss = s.loss, e.metric = s.metric;
    e.has_validation = s.has_validation, e.val_loss = s.val_loss, e.val_metric = s.val_metric;
    trace_.add_epoch(e);
  }

 private:
  an::Trace& trace_;
};

// Stops training where the baseline's Keras callback would: TerminateOnNaN after a
// batch, EarlyStopping at an epoch end.
class BaselineMonitor : public rt::TrainListener {
 public:
  BaselineMonitor(const an::Trace& trace, an::Detector d, bool stop) : trace_(trace), detector_(d), stop_(stop) {}
  void after_update(const rt::ExecutionGraph&, const rt::IterationInfo& i) override {
    if (!std::isfinite(i.loss) || !std::isfinite(float(i.loss))) check();
  }
  void on_epoch_end(const rt::EpochSummary&) override { check(); }
  bool should_stop() override { return stop_ && fired_; }

 private:
  void check() {
    if (!fired_) fired_ = an::baseline_diagnose(detector_, trace_).fault;
  }
  const an::Trace& trace_;
  an::Detector detector_;
  bool stop_;
  bool fired_ = false;
};

}  // namespace

CLI::App* add_train_command(CLI::App& app, TrainOptions& o) {
  CLI::App* c = app.add_subcommand("train", "Train a model with probes, find and explain faults");
  c->add_option("model", o.model, "ONNX model (training configuration in its metadata)")->required();
  c->add_option("data", o.data, "Training data: CSV (targets in the last columns), .npy or .npz (x, y)")->required();
  add_table_options(c, o);  // runtime/option_list.def
  c->add_option("--trace", o.trace_file, "Write the probe trace to FILE (see docs/trace-format.md)");
  c->add_option("--report", o.report_file, "Write the report to FILE (atomically; HTML when FILE ends in .html)");
  c->add_option("--format", o.format, "Report format: text, json or html")->check(CLI::IsMember({"text", "json", "html"}));
  c->add_option("--save", o.save_file, "Write the trained weights into a copy of the model");
  c->add_option("--set", o.settings, "Override a rule threshold: rule.key=value (repeatable)");
  c->add_flag("--no-probes", o.no_probes, "Train without probes (no analysis; for measuring overhead)");
  c->add_flag("-q,--quiet", o.quiet, "Print nothing but errors and the report (nothing on stdout with --report)");
  c->add_flag("-v,--verbose", o.verbose, "Add per-layer statistics to the text report");
  c->add_option("--detector", o.detector, "deeplocalize (default), or a Keras callback baseline: keras-terminate-on-nan, "
                                          "keras-early-stopping-loss, keras-early-stopping-accuracy, keras-union")
      ->check(CLI::IsMember(an::detector_names()));
  c->add_flag("--verify-fixes", o.verify_fixes, "After a fault, retrain with each candidate repair and report the ones that work");
  c->add_option("--export-fixed", o.export_fixed, "Write the model with the best verified fix applied to FILE.onnx (implies --verify-fixes)");
  c->add_flag("--force", o.force, "Allow an output to overwrite an input (the model, the data) or another output");
  return c;
}

LoadedCase load_case(const TrainOptions& o) {
  const auto t_import = Clock::now();
  LoadedCase c;
  conv::ImportOptions import;
  if (o.max_memory_mb > 0 && o.max_memory_mb < 1e12)  // the model file is read under the cap too
    import.max_file_bytes = static_cast<int64_t>(std::ceil(o.max_memory_mb * 1024 * 1024));
  {
    ir::Model model = conv::import_model(o.model, import);
    rt::adapt_export(model);
    c.config = resolve_config(model, o);
    c.model = std::make_shared<const ir::Model>(std::move(model));
  }
  for (const std::string& s : o.settings) c.settings.set(s);
  const rt::DatasetSpec spec = dataset_spec(c.model, c.config);
  rt::ReadOptions read;
  read.max_bytes = c.config.max_memory_bytes > 0 ? c.config.max_memory_bytes : rt::kDefaultMaxDataBytes;
  {
    rt::Dataset all;
    try {
      all = rt::load_dataset(o.data, spec, read);
    } catch (const ResourceError& e) {
      throw ResourceError(std::string(e.what()) + " (raise it with --max-memory)");
    }
    if (c.config.validation_split > 0) {
      std::tie(c.train, c.validation) = rt::split_validation(all, c.config.validation_split);
    } else {
      c.train = std::move(all);  // no copy: a big data set is held once, not twice
    }
  }
  // A repaired model (--export-fixed) carries the data preprocessing it was verified with.
  c.preprocessing = rt::Preprocessing::from_metadata(c.model->metadata, o.model);
  if (!c.preprocessing.empty()) {
    c.preprocessing.apply(c.train);
    if (c.validation.n > 0) c.preprocessing.apply(c.validation);
  }
  c.import_s = since(t_import);
  return c;
}

CaseResult train_case(std::shared_ptr<const ir::Model> model, const rt::TrainConfig& config, rt::Dataset train_data,
                      rt::Dataset validation_data, const an::Settings& settings, const TrainOptions& o,
                      const CaseRunOptions& run) {
  const an::Detector detector = an::detector_from(o.detector);
  const bool baseline = an::is_baseline(detector);
  const bool probing = !o.no_probes && !baseline;
  const auto t_train = Clock::now();
  const std::vector<std::string> model_notes = model->warnings;
  // An adapted model (rt::adapt_export) no longer matches its file: written whole.
  const std::shared_ptr<const ir::Model> saved_model = run.trial ? nullptr : model;
  if (!o.quiet) {
    // Eval-mode exports deduplicate identical initializers into Identity aliases: the
    // layers reading them then train one tensor, which the user should know.
    for (const std::string& t : rt::tied_param_notes(rt::model_params(*model)))
      std::cerr << "warning: " << model->path << ": tied parameter: " << t << "; these layers train it as one tensor\n";
    for (const std::string& w : model->warnings) std::cerr << "note: " << model->path << ": " << w << "\n";
  }
  rt::Trainer trainer(std::move(model), config, std::move(train_data), std::move(validation_data));
  CaseResult out;
  an::Trace& trace = out.trace;
  rt::describe_run(trainer.graph(), config, trainer.train_data(), trainer.metric().name(),
                   trainer.metric().higher_is_better(), trace.header);
  trace.header.model = o.model;
  trace.header.data = o.data;
  trace.header.notes = model_notes;
  std::unique_ptr<rt::ProbeRecorder> probes;
  if (probing) {
    probes = std::make_unique<rt::ProbeRecorder>(trainer.graph(), trace);
    trace.set_probe_every(o.probe_every);
    trace.set_capacity_bytes(static_cast<int64_t>(o.trace_max_mb * 1024 * 1024));
    trace.reserve_iterations(config.epochs * trace.header.batches_per_epoch);
    trainer.set_observer(probes.get());
    trainer.add_listener(probes.get());
  }
  // A baseline sees only the loss history, as a Keras callback does, and stops
  // training when its callback would.
  HistoryRecorder history(trace);
  BaselineMonitor monitor(trace, detector, !o.no_stop);
  if (baseline) {
    trace.reserve_iterations(config.epochs * trace.header.batches_per_epoch);
    trainer.add_listener(&history);
    trainer.add_listener(&monitor);
  }
  OnlineAnalysis online(trace, settings, !o.no_stop && probing);
  if (probing) trainer.add_listener(&online);
  TerminalStyle style = TerminalStyle::detect();
  ProgressPrinter progress(config.epochs, trainer.metric().name(), style, o.quiet || !run.progress);
  trainer.add_listener(&progress);

  rt::TrainResult result;
  if (run.handle_signals) {
    g_interrupted.store(false);
    auto old_int = std::signal(SIGINT, on_signal);
    auto old_term = std::signal(SIGTERM, on_signal);
    trainer.set_interrupt_flag(&g_interrupted);
    result = trainer.run();
    std::signal(SIGINT, old_int);
    std::signal(SIGTERM, old_term);
    out.signal = g_signal.load();
  } else {
    trainer.set_interrupt_flag(run.interrupt);
    result = trainer.run();
  }
  trace.complete = !result.interrupted;
  const double train_s = since(t_train);

  const auto t_analysis = Clock::now();
  if (probing) out.diagnosis = an::analyze(trace, settings, /*final=*/true);
  if (baseline) out.diagnosis = an::baseline_diagnose(detector, trace);
  out.info = run_info(o, result);
  out.info.train_s = train_s;
  out.info.analysis_s = since(t_analysis);
  if (baseline) out.info.detector = an::detector_name(detector);
  out.interrupted = result.interrupted;
  if (!o.save_file.empty() && !run.trial) save_trained_model(*saved_model, o.save_file, *trainer.store());
  return out;
}

// --verify-fixes / --export-fixed: refused up front when they cannot work, so a long run
// does not end in an error.
static void check_fix_options(const TrainOptions& o) {
  const bool wanted = o.verify_fixes || !o.export_fixed.empty();
  if (!wanted) return;
  const char* option = o.export_fixed.empty() ? "--verify-fixes" : "--export-fixed";
  if (o.no_probes) throw ConfigError(std::string(option) + " needs the probes: it cannot be combined with --no-probes");
  if (o.detector != "deeplocalize")
    throw ConfigError(std::string(option) + " needs deeplocalize's own analysis, not the baseline --detector " + o.detector);
  if (!o.export_fixed.empty()) {
    const std::filesystem::path out(o.export_fixed);
    const std::filesystem::path dir = out.has_parent_path() ? out.parent_path() : std::filesystem::path(".");
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec) || ::access(dir.c_str(), W_OK) != 0)
      throw ConfigError("--export-fixed " + o.export_fixed + ": the directory " + dir.string() +
                        " does not exist or is not writable");
    if (std::filesystem::is_directory(out, ec)) throw ConfigError("--export-fixed " + o.export_fixed + " is a directory");
  }
}

CaseResult diagnose_case(const TrainOptions& o, const CaseRunOptions& run) {
  check_fix_options(o);
  LoadedCase c = load_case(o);
  const bool verify = o.verify_fixes || !o.export_fixed.empty();
  CaseResult out = verify ? train_case(c.model, c.config, c.train, c.validation, c.settings, o, run)
                          : train_case(c.model, c.config, std::move(c.train), std::move(c.validation), c.settings, o, run);
  out.info.import_s = c.import_s;
  if (verify && !out.interrupted) {
    if (run.handle_signals) {
      g_interrupted.store(false);
      auto old_int = std::signal(SIGINT, on_signal);
      auto old_term = std::signal(SIGTERM, on_signal);
      verify_fixes(c, o, run, out);
      std::signal(SIGINT, old_int);
      std::signal(SIGTERM, old_term);
      if (g_interrupted.load()) {  // the trials so far are reported, marked incomplete
        out.interrupted = true;
        out.signal = g_signal.load();
        out.info.complete = false;
      }
    } else {
      verify_fixes(c, o, run, out);
    }
  }
  if (!o.trace_file.empty() && !o.no_probes) an::write_trace(out.trace, o.trace_file);
  out.report = an::report_json(out.diagnosis, out.trace, out.info);
  return out;
}

int run_train(const TrainOptions& o) {
  check_outputs({{"the model", o.model}, {"the data", o.data}},
                {{"--trace", o.trace_file}, {"--report", o.report_file, true}, {"--save", o.save_file},
                 {"--export-fixed", o.export_fixed}},
                o.force);
  // Once for the process, before any graph is built: the thread count is process-wide
  // (Eigen), so it cannot be a per-case setting. 0 leaves the defaults (and OMP_NUM_THREADS).
  if (o.threads > 0) rt::set_compute_threads(o.threads);
  CaseResult r = diagnose_case(o);
  emit_report(r.diagnosis, r.trace, r.info, o.format, o.report_file, o.quiet, TerminalStyle::detect(), o.verbose);
  if (r.interrupted) return r.signal == SIGTERM ? 143 : 130;
  return r.diagnosis.fault ? 1 : 0;
}

CLI::App* add_analyze_command(CLI::App& app, AnalyzeOptions& o) {
  CLI::App* c = app.add_subcommand("analyze", "Re-run the analysis on a saved trace (e.g. with other thresholds)");
  c->add_option("trace", o.trace_file, "Trace written by train --trace")->required();
  c->add_option("--report", o.report_file, "Write the report to FILE (atomically; HTML when FILE ends in .html)");
  c->add_option("--format", o.format, "Report format: text, json or html")->check(CLI::IsMember({"text", "json", "html"}));
  c->add_option("--set", o.settings, "Override a rule threshold: rule.key=value (repeatable)");
  c->add_flag("-q,--quiet", o.quiet, "Print nothing when writing --report");
  c->add_flag("-v,--verbose", o.verbose, "Add per-layer statistics to the text report");
  c->add_flag("--force", o.force, "Allow --report to overwrite the trace");
  return c;
}

int run_analyze(const AnalyzeOptions& o) {
  check_outputs({{"the trace", o.trace_file}}, {{"--report", o.report_file, true}}, o.force);
  const auto t0 = Clock::now();
  an::Trace trace = an::read_trace(o.trace_file);
  an::Settings settings;
  for (const std::string& s : o.settings) settings.set(s);
  an::Diagnosis diagnosis = an::analyze(trace, settings, /*final=*/true);
  an::RunInfo info;
  info.tool_version = DL_VERSION_STRING;
  info.model = trace.header.model;
  info.data = trace.header.data;
  info.iterations = static_cast<int64_t>(trace.loss.size());
  info.epochs = static_cast<int64_t>(trace.epochs.size());
  info.complete = trace.complete;
  info.metric_name = trace.header.metric_name;
  for (const an::EpochRecord& e : trace.epochs) {
    info.epoch_loss.push_back(e.loss);
    info.epoch_metric.push_back(e.metric);
    if (e.has_validation) {
      info.epoch_val_loss.push_back(e.val_loss);
      info.epoch_val_metric.push_back(e.val_metric);
    }
  }
  info.analysis_s = since(t0);
  emit_report(diagnosis, trace, info, o.format, o.report_file, o.quiet, TerminalStyle::detect(), o.verbose);
  return diagnosis.fault ? 1 : 0;
}

}  // namespace dl::cli
