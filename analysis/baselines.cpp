#include "analysis/baselines.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "converter/errors.h"

namespace dl::an {
namespace {

constexpr int kPatience = 1;
constexpr double kMinDelta = 0.0;
const char* const kNoLocalization =
    "Keras' callback only stops training; it names no layer or cause: run with --detector deeplocalize for a diagnosis.";

int64_t epoch_of(const Trace& t, int64_t iteration) {
  const int64_t b = t.header.batches_per_epoch;
  return b > 0 ? iteration / b : -1;
}

int64_t last_iteration_of(const Trace& t, int64_t epoch) {
  const int64_t b = t.header.batches_per_epoch;
  if (b <= 0) return -1;
  return std::min<int64_t>((epoch + 1) * b, static_cast<int64_t>(t.loss.size())) - 1;
}

// TerminateOnNaN.on_batch_end: the first batch whose loss is NaN or Inf.
bool terminate_on_nan(const Trace& t, Finding& f) {
  for (size_t i = 0; i < t.loss.size(); ++i) {
    const float loss = t.loss[i];
    if (std::isfinite(loss)) continue;
    f.symptom = "keras_terminate_on_nan";
    f.rule = "keras_terminate_on_nan";
    f.stage = Stage::kLoss;
    f.iteration = static_cast<int64_t>(i);
    f.epoch = epoch_of(t, f.iteration);
    f.message = std::string("TerminateOnNaN: the loss of batch ") + std::to_string(i) + " is " +
                (std::isnan(loss) ? "NaN" : "Inf") + "; Keras stops training";
    f.evidence = {{"loss", std::isnan(loss) ? "nan" : (loss > 0 ? "inf" : "-inf")}, {"iteration", f.iteration}};
    return true;
  }
  return false;
}

// EarlyStopping.on_epoch_end with patience 1 and min_delta 0 (Keras 2.2).
bool early_stopping(const Trace& t, bool on_metric, Finding& f) {
  const bool higher_better = on_metric && t.header.metric_higher_is_better;
  const std::string monitor = on_metric ? (t.header.metric_name.empty() ? "accuracy" : t.header.metric_name) : "loss";
  double best = higher_better ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  int wait = 0;
  for (const EpochRecord& e : t.epochs) {
    const double current = on_metric ? e.metric : e.loss;
    const bool improved = higher_better ? current - kMinDelta > best : current - kMinDelta < best;
    if (improved) {
      best = current;
      wait = 0;
      continue;
    }
    if (++wait < kPatience) continue;
    f.symptom = on_metric ? "keras_early_stopping_accuracy" : "keras_early_stopping_loss";
    f.rule = f.symptom;
    f.stage = on_metric ? Stage::kAccuracy : Stage::kLoss;
    f.epoch = e.epoch;
    f.iteration = last_iteration_of(t, e.epoch);
    auto num = [](double v) -> nlohmann::json { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(std::to_string(v)); };
    f.message = "EarlyStopping(monitor=\"" + monitor + "\", patience=1): epoch " + std::to_string(e.epoch) + " " +
                monitor + " " + std::to_string(current) + " did not improve on the best " + std::to_string(best) +
                "; Keras stops training";
    f.evidence = {{"monitor", monitor}, {"current", num(current)}, {"best", num(best)},
                  {"patience", kPatience}, {"min_delta", kMinDelta}};
    return true;
  }
  return false;
}

}  // namespace

const std::vector<std::string>& detector_names() {
  static const std::vector<std::string> names = {"deeplocalize", "keras-terminate-on-nan", "keras-early-stopping-loss",
                                                 "keras-early-stopping-accuracy", "keras-union"};
  return names;
}

const char* detector_name(Detector d) { return detector_names()[static_cast<size_t>(d)].c_str(); }

Detector detector_from(const std::string& name) {
  const auto& names = detector_names();
  for (size_t k = 0; k < names.size(); ++k)
    if (names[k] == name) return static_cast<Detector>(k);
  std::string known;
  for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
  throw ConfigError("--detector: unknown detector '" + name + "' (known: " + known + ")");
}

Diagnosis baseline_diagnose(Detector d, const Trace& t) {
  Diagnosis out;
  const bool nan = d == Detector::kTerminateOnNaN || d == Detector::kUnion;
  const bool loss = d == Detector::kEarlyStoppingLoss || d == Detector::kUnion;
  const bool metric = d == Detector::kEarlyStoppingAccuracy || d == Detector::kUnion;
  Finding f;
  if (nan && terminate_on_nan(t, f)) out.findings.push_back(f);
  f = Finding();
  if (loss && early_stopping(t, false, f)) out.findings.push_back(f);
  f = Finding();
  if (metric && early_stopping(t, true, f)) out.findings.push_back(f);
  // Earliest stop first; an epoch-end callback fires after the batches of its epoch.
  std::stable_sort(out.findings.begin(), out.findings.end(), [](const Finding& a, const Finding& b) {
    const auto key = [](const Finding& x) { return x.iteration < 0 ? std::numeric_limits<int64_t>::max() : x.iteration; };
    return key(a) < key(b);
  });
  for (Finding& g : out.findings) {
    g.root_cause = RootCause::kUnknown;
    g.layer = -1;
    g.recommendation = kNoLocalization;
  }
  out.fault = !out.findings.empty();
  return out;
}

}  // namespace dl::an
