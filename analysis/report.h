// Reports of a diagnosis: the JSON report of the contract (`--format json`, `--report`)
// and the text report for people (the default). Both read only the diagnosis, the trace
// and a summary of the run, so `deeplocalize analyze TRACE` reports like `train` does.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "analysis/trace.h"

namespace dl::an {

// What the report says about the run besides the findings.
struct RunInfo {
  std::string tool_version, model, data;
  int64_t iterations = 0, epochs = 0;
  bool stopped_early = false;
  bool complete = true;  // false when training was interrupted
  // Per epoch; the validation curves are empty without a validation split.
  std::vector<double> epoch_loss, epoch_metric, epoch_val_loss, epoch_val_metric;
  std::string metric_name = "accuracy";  // or "mae" for regression
  double import_s = 0, train_s = 0, analysis_s = 0;
  double fixes_s = -1;  // wall time of the fix trials (--verify-fixes); < 0: none ran
  // The detector when it is not the analysis (a Keras baseline, see baselines.h); the
  // reports then name it ("detector" in JSON). Empty for deeplocalize's own analysis.
  std::string detector;
};

// The contract's JSON report: tool, version, model, data, verdict ("fault"/"ok"),
// findings (symptom, stage, layer {index, name, nodes} or null, epoch, iteration,
// root_cause, recommendation, evidence, and the additions message, rule,
// consequence_of, conclusive), warnings (unconfirmed findings, same shape), training
// {iterations, epochs, stopped_early, loss[], accuracy[] (the per-epoch metric, whatever
// its name), metric, val_loss[]/val_accuracy[] when present}, timing, complete.
// Non-finite numbers are stored as JSON numbers (nlohmann writes them as null).
nlohmann::json report_json(const Diagnosis& d, const Trace& t, const RunInfo& run);

// The text report: verdict headline, primary finding with evidence and "Fix: ...",
// other findings (consequences marked), warnings, a loss/metric sparkline of the run and
// timing. ANSI colour only when `color` is true. Ends with a newline.
std::string report_text(const Diagnosis& d, const Trace& t, const RunInfo& run, bool color);

// A one-line Unicode sparkline of `values` downsampled to at most `width` columns (each
// column the mean of its bucket), log-scaled when the positive values span more than
// three orders of magnitude; a bucket holding NaN or Inf is drawn as '!'. Sets `lo`/`hi`
// to the finite range drawn and `log_scale` to the scale used. Empty for no values.
std::string sparkline(const std::vector<float>& values, size_t width, double& lo, double& hi, bool& log_scale);

// Helpers shared by both reports.
namespace report_detail {
// The layer's ONNX nodes: the finding's own list, or the trace's layer table.
std::vector<std::string> layer_nodes(const Finding& f, const Trace& t);
// "layer 2 (/4/Gemm, /5/Softmax)", or "" for a finding without a layer.
std::string layer_label(const Finding& f, const Trace& t);
}  // namespace report_detail

}  // namespace dl::an
