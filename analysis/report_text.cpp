#include <algorithm>
#include <cmath>
#include <cstdio>

#include "analysis/fixes.h"
#include "analysis/report.h"
#include "io/text_escape.h"

namespace dl::an {
namespace {

using nlohmann::json;
using report_detail::layer_label;

constexpr size_t kCurveWidth = 60;

std::string num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// ANSI styling, a no-op without colour.
struct Style {
  bool on;
  std::string wrap(const char* code, const std::string& s) const {
    return on ? std::string("\x1b[") + code + "m" + s + "\x1b[0m" : s;
  }
  std::string red(const std::string& s) const { return wrap("1;31", s); }
  std::string green(const std::string& s) const { return wrap("1;32", s); }
  std::string yellow(const std::string& s) const { return wrap("1;33", s); }
  std::string bold(const std::string& s) const { return wrap("1", s); }
  std::string dim(const std::string& s) const { return wrap("2", s); }
};

std::string value_text(const json& v) {
  if (v.is_number()) return num(v.get<double>());
  if (v.is_string()) return v.get<std::string>();
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string where(const Finding& f, const Trace& t) {
  std::string s = layer_label(f, t);
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : ", ") + part; };
  if (f.epoch >= 0) add("epoch " + std::to_string(f.epoch));
  if (f.iteration >= 0) add("iteration " + std::to_string(f.iteration));
  if (s.empty()) s = f.stage == Stage::kStatic ? "before training" : "the whole run";
  return s;
}

std::string what(const Finding& f) { return f.message.empty() ? f.symptom : f.message; }

// "layer 2 (/4/Gemm, /5/Softmax): message", without repeating a label the message has.
std::string headline(const Finding& f, const Trace& t) {
  const std::string label = layer_label(f, t);
  const std::string m = what(f);
  if (label.empty() || m.find(label) != std::string::npos) return m;
  return label + ": " + m;
}

void primary(std::string& out, const Finding& f, const Trace& t, const Style& st) {
  out += st.red("FAULT") + ": " + headline(f, t) + "\n";
  out += "  symptom:    " + f.symptom + " (" + stage_name(f.stage) + " stage" +
         (f.rule.empty() ? "" : ", rule " + f.rule) + ")\n";
  out += "  where:      " + where(f, t) + "\n";
  out += "  root cause: " + std::string(root_cause_name(f.root_cause)) + "\n";
  if (f.evidence.is_object() && !f.evidence.empty()) {
    out += "  evidence:\n";
    for (auto it = f.evidence.begin(); it != f.evidence.end(); ++it)
      out += "    " + it.key() + ": " + value_text(it.value()) + "\n";
  }
  if (!f.recommendation.empty()) out += "  " + st.bold("Fix:") + " " + f.recommendation + "\n";
}

std::string metrics_text(const FixOutcome& x) {
  const std::string metric = x.metric_name.empty() ? "metric" : x.metric_name;
  return "loss " + num(x.before.loss) + " \u2192 " + num(x.after.loss) + ", " + metric + " " + num(x.before.metric) +
         " \u2192 " + num(x.after.metric);
}

// What the verified repairs say about the layer (analysis/fixes.h).
void repair_localization(std::string& out, const Finding& f) {
  const std::string what = describe_repair_localization(f);
  if (!what.empty()) out += "  Localization: " + what + "\n";
}

// The repairs tried with --verify-fixes: the best verified one first, with its curve.
void fixes(std::string& out, const Finding& f, const RunInfo& run, const Style& st) {
  if (f.fixes.empty()) return;
  size_t verified = 0;
  double seconds = 0;
  for (const FixOutcome& x : f.fixes) verified += x.verified, seconds += x.seconds;
  out += "\n" + st.bold(verified ? "Verified fixes" : "No verified fix") + " (" + std::to_string(f.fixes.size()) +
         " repair" + (f.fixes.size() == 1 ? "" : "s") + " tried on this model, " + num(seconds) + " s of training):\n";
  for (size_t k = 0; k < f.fixes.size(); ++k) {
    const FixOutcome& x = f.fixes[k];
    out += "  " + std::to_string(k + 1) + ". " + (x.verified ? st.green("\u2714 ") : st.dim("\u2718 ")) + x.change +
           " [" + root_cause_name(x.root_cause) + "]\n";
    out += "     " + metrics_text(x) + " (" + num(x.seconds) + " s)" + (x.verified ? "" : ": " + x.reason) + "\n";
    if (k == 0 && x.verified && !x.epoch_loss.empty()) {
      // Loss per epoch of the faulty run and of the repaired one.
      for (const auto& [label, values] : {std::pair{"before", &run.epoch_loss}, std::pair{"after ", &x.epoch_loss}}) {
        double lo = 0, hi = 0;
        bool log_scale = false;
        const std::vector<float> v(values->begin(), values->end());
        const std::string line = sparkline(v, kCurveWidth, lo, hi, log_scale);
        if (line.empty()) continue;
        out += std::string("     loss per epoch ") + label + " " + line + "  min " + num(lo) + "  max " + num(hi) +
               (log_scale ? "  (log scale)" : "") + "\n";
      }
    }
    if (k == 0 && x.verified && !x.python_code.empty()) {
      out += "     add to your data pipeline:\n";
      size_t from = 0;
      while (from < x.python_code.size()) {
        size_t to = x.python_code.find('\n', from);
        if (to == std::string::npos) to = x.python_code.size();
        out += "       " + x.python_code.substr(from, to - from) + "\n";
        from = to + 1;
      }
    }
  }
  repair_localization(out, f);
}

void secondary(std::string& out, const std::vector<Finding>& fs, const Trace& t, const Style& st) {
  if (fs.size() < 2) return;
  out += "\nOther findings:\n";
  for (size_t k = 1; k < fs.size(); ++k) {
    const Finding& f = fs[k];
    const bool consequence = f.consequence_of >= 0;
    const std::string indent = consequence ? "      " : "  ";
    std::string line = "#" + std::to_string(k + 1) + " " + f.symptom + " (" + where(f, t) + "; root cause: " +
                       root_cause_name(f.root_cause) + ")";
    if (consequence) line += " (consequence of #" + std::to_string(f.consequence_of + 1) + ")";
    out += indent + (consequence ? st.dim(line) : line) + "\n";
    out += indent + "   " + what(f) + "\n";
    if (!consequence && !f.recommendation.empty()) out += indent + "   Fix: " + f.recommendation + "\n";
  }
}

void warnings(std::string& out, const std::vector<Finding>& ws, const Trace& t, const Style& st) {
  if (ws.empty()) return;
  out += "\n" + st.yellow("Warnings") + " (not confirmed by the run):\n";
  for (const Finding& f : ws) {
    out += "  - " + headline(f, t) + " [" + f.symptom + "]\n";
    if (!f.recommendation.empty()) out += "    Fix: " + f.recommendation + "\n";
  }
}

void curve(std::string& out, const char* name, const std::vector<float>& v) {
  double lo = 0, hi = 0;
  bool log_scale = false;
  const std::string line = sparkline(v, kCurveWidth, lo, hi, log_scale);
  if (line.empty()) return;
  std::string label = name;
  label.resize(std::max<size_t>(label.size(), 9), ' ');
  out += "  " + label + " " + line + "  min " + num(lo) + "  max " + num(hi) + (log_scale ? "  (log scale)" : "") + "\n";
}

void curves(std::string& out, const Trace& t, const std::string& metric) {
  if (t.loss.empty()) return;
  const size_t n = t.loss.size();
  const size_t per = (n + kCurveWidth - 1) / kCurveWidth;
  out += "\nCurves over " + std::to_string(n) + " iteration" + (n == 1 ? "" : "s") +
         (per > 1 ? " (about " + std::to_string(per) + " per column)" : "") + ":\n";
  curve(out, "loss", t.loss);
  if (t.metric.size() == n) curve(out, metric.c_str(), t.metric);
  const auto bad = [](float x) { return !std::isfinite(x); };
  if (std::any_of(t.loss.begin(), t.loss.end(), bad) || std::any_of(t.metric.begin(), t.metric.end(), bad))
    out += "  ('!' marks NaN or Inf)\n";
}

// First and last per-epoch value, or of the per-iteration curve without epochs.
std::string change(const std::vector<double>& epochs, const std::vector<float>& iterations) {
  if (!epochs.empty()) return num(epochs.front()) + " \u2192 " + num(epochs.back());
  if (!iterations.empty()) return num(iterations.front()) + " \u2192 " + num(iterations.back());
  return "n/a";
}

// Everything the report quotes from the model, the trace or the command line (node
// names, paths, messages that embed them) is made visible before the report is built
// (io/text_escape.h), so only Style's own sequences reach a terminal.
nlohmann::json visible_json(const json& j) {
  if (j.is_string()) return io::visible(j.get<std::string>());
  if (j.is_array()) {
    json out = json::array();
    for (const json& v : j) out.push_back(visible_json(v));
    return out;
  }
  if (!j.is_object()) return j;
  json out = json::object();
  for (auto it = j.begin(); it != j.end(); ++it) out[io::visible(it.key())] = visible_json(it.value());
  return out;
}

Finding visible_finding(const Finding& f, const Trace& t) {
  Finding v = f;
  v.nodes = report_detail::layer_nodes(f, t);
  for (std::string* s : {&v.symptom, &v.rule, &v.message, &v.recommendation}) *s = io::visible(*s);
  for (std::string& n : v.nodes) n = io::visible(n);
  v.evidence = visible_json(f.evidence);
  for (FixOutcome& x : v.fixes) {
    for (std::string* s : {&x.change, &x.reason, &x.metric_name}) *s = io::visible(*s);
    x.python_code = io::visible_multiline(x.python_code);
  }
  return v;
}

Diagnosis visible_diagnosis(const Diagnosis& d, const Trace& t) {
  Diagnosis v;
  v.fault = d.fault;
  for (const Finding& f : d.findings) v.findings.push_back(visible_finding(f, t));
  for (const Finding& f : d.warnings) v.warnings.push_back(visible_finding(f, t));
  return v;
}

RunInfo visible_run(const RunInfo& run) {
  RunInfo v = run;
  for (std::string* s : {&v.tool_version, &v.model, &v.data, &v.metric_name, &v.detector}) *s = io::visible(*s);
  return v;
}

std::string report_text_visible(const Diagnosis& d, const Trace& t, const RunInfo& run, bool color);

}  // namespace

std::string sparkline(const std::vector<float>& values, size_t width, double& lo, double& hi, bool& log_scale) {
  static const char* const kBars[] = {"\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586", "\u2587", "\u2588"};
  lo = hi = 0;
  log_scale = false;
  const size_t n = values.size();
  if (n == 0 || width == 0) return "";
  const size_t cols = std::min(n, width);
  std::vector<double> col(cols);
  std::vector<bool> bad(cols, false);
  for (size_t c = 0; c < cols; ++c) {
    const size_t from = c * n / cols, to = std::max(from + 1, (c + 1) * n / cols);
    double sum = 0;
    for (size_t k = from; k < to; ++k) {
      if (!std::isfinite(values[k])) bad[c] = true;
      sum += values[k];
    }
    col[c] = sum / double(to - from);
  }
  bool any = false, positive = true;
  for (size_t c = 0; c < cols; ++c) {
    if (bad[c]) continue;
    lo = any ? std::min(lo, col[c]) : col[c];
    hi = any ? std::max(hi, col[c]) : col[c];
    positive = positive && col[c] > 0;
    any = true;
  }
  log_scale = any && positive && hi / lo > 1e3;
  const auto scale = [&](double x) { return log_scale ? std::log10(x) : x; };
  const double a = scale(lo), b = scale(hi);
  std::string s;
  for (size_t c = 0; c < cols; ++c) {
    if (bad[c]) {
      s += '!';
      continue;
    }
    const int level = b > a ? static_cast<int>(std::lround((scale(col[c]) - a) / (b - a) * 7)) : 3;  // flat: mid
    s += kBars[std::clamp(level, 0, 7)];
  }
  return s;
}

std::string report_text(const Diagnosis& d, const Trace& t, const RunInfo& run, bool color) {
  return report_text_visible(visible_diagnosis(d, t), t, visible_run(run), color);
}

namespace {

std::string report_text_visible(const Diagnosis& d, const Trace& t, const RunInfo& run, bool color) {
  const Style st{color};
  std::string out = "deeplocalize " + run.tool_version + ": " + run.model +
                    (run.data.empty() ? "" : " with " + run.data) + "\n";
  if (!run.detector.empty())
    out += "Detector: " + run.detector + " (a Keras callback baseline: it can stop training, not localize)\n";
  if (!run.complete)
    out += st.yellow("INTERRUPTED") + ": training stopped after " + std::to_string(run.iterations) +
           " iterations; the diagnosis covers only the part that ran.\n";
  out += "\n";
  if (d.fault && !d.findings.empty()) {
    primary(out, d.findings.front(), t, st);
    fixes(out, d.findings.front(), run, st);
    secondary(out, d.findings, t, st);
  } else {
    out += st.green("OK") + ": no fault found in " + std::to_string(run.iterations) + " iterations (loss " +
           change(run.epoch_loss, t.loss) + ", " + run.metric_name + " " + change(run.epoch_metric, t.metric) + ")\n";
  }
  warnings(out, d.warnings, t, st);
  if (!t.header.notes.empty()) {
    out += "\nNotes about the model:\n";
    for (const std::string& n : t.header.notes) out += "  - " + io::visible(n) + "\n";
  }
  curves(out, t, run.metric_name);
  out += "\nTraining: " + std::to_string(run.iterations) + " iterations, " + std::to_string(run.epochs) + " epoch" +
         (run.epochs == 1 ? "" : "s") + (run.stopped_early ? ", stopped early at the first conclusive fault" : "") +
         (run.complete ? "" : ", " + st.yellow("interrupted")) + "\n";
  if (!run.epoch_loss.empty())
    out += "  per epoch: loss " + change(run.epoch_loss, {}) + ", " + run.metric_name + " " +
           change(run.epoch_metric, {}) +
           (run.epoch_val_loss.empty() ? "" : ", val_loss " + change(run.epoch_val_loss, {})) + "\n";
  out += "Timing: import " + num(run.import_s) + " s, train " + num(run.train_s) + " s, analysis " +
         num(run.analysis_s) + " s" + (run.fixes_s >= 0 ? ", fix trials " + num(run.fixes_s) + " s" : "") + "\n";
  return out;
}

}  // namespace

}  // namespace dl::an
