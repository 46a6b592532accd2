#include "analysis/report.h"

#include "analysis/fixes.h"

namespace dl::an {

namespace report_detail {

std::vector<std::string> layer_nodes(const Finding& f, const Trace& t) {
  if (!f.nodes.empty() || f.layer < 0) return f.nodes;
  const auto& layers = t.header.layers;
  if (static_cast<size_t>(f.layer) < layers.size()) return layers[static_cast<size_t>(f.layer)].nodes;
  return {};
}

std::string layer_label(const Finding& f, const Trace& t) {
  if (f.layer < 0) return "";
  std::string s = "layer " + std::to_string(f.layer);
  const std::vector<std::string> nodes = layer_nodes(f, t);
  if (nodes.empty()) return s;
  s += " (";
  for (size_t k = 0; k < nodes.size(); ++k) s += (k ? ", " : "") + nodes[k];
  return s + ")";
}

}  // namespace report_detail

namespace {

using nlohmann::json;

json layer_json(const Finding& f, const Trace& t) {
  if (f.layer < 0) return nullptr;
  const std::vector<std::string> nodes = report_detail::layer_nodes(f, t);
  return {{"index", f.layer}, {"name", nodes.empty() ? std::string() : nodes.front()}, {"nodes", nodes}};
}

json finding_json(const Finding& f, const Trace& t) {
  json evidence = f.evidence.is_object() ? f.evidence : json::object();
  json j = {{"symptom", f.symptom},
          {"stage", stage_name(f.stage)},
          {"layer", layer_json(f, t)},
          {"epoch", f.epoch},
          {"iteration", f.iteration},
          {"root_cause", root_cause_name(f.root_cause)},
          {"recommendation", f.recommendation},
          {"evidence", evidence},
          {"message", f.message},
          {"rule", f.rule},
          {"consequence_of", f.consequence_of >= 0 ? json(f.consequence_of) : json(nullptr)},
          {"conclusive", f.conclusive}};
  if (f.fixes_attempted || !f.fixes.empty()) {
    j["fixes"] = json::array();
    for (const FixOutcome& x : f.fixes) j["fixes"].push_back(to_json(x));
    j["repair_localization"] = to_json(f.repair_localization, f.fixes);
  }
  return j;
}

json numbers(const std::vector<double>& v) {
  json a = json::array();
  for (double x : v) a.push_back(x);
  return a;
}

}  // namespace

json report_json(const Diagnosis& d, const Trace& t, const RunInfo& run) {
  json findings = json::array(), warnings = json::array();
  for (const Finding& f : d.findings) findings.push_back(finding_json(f, t));
  for (const Finding& f : d.warnings) warnings.push_back(finding_json(f, t));

  json training = {{"iterations", run.iterations},
                   {"epochs", run.epochs},
                   {"stopped_early", run.stopped_early},
                   {"loss", numbers(run.epoch_loss)},
                   {"accuracy", numbers(run.epoch_metric)},
                   {"metric", run.metric_name}};
  if (!run.epoch_val_loss.empty()) training["val_loss"] = numbers(run.epoch_val_loss);
  if (!run.epoch_val_metric.empty()) training["val_accuracy"] = numbers(run.epoch_val_metric);

  json report = {{"tool", "deeplocalize"},
                 {"version", run.tool_version},
                 {"model", run.model},
                 {"data", run.data},
                 {"verdict", d.fault ? "fault" : "ok"},
                 {"complete", run.complete},
                 {"findings", findings},
                 {"warnings", warnings},
                 {"notes", t.header.notes},
                 {"training", training},
                 {"timing", {{"import_s", run.import_s}, {"train_s", run.train_s}, {"analysis_s", run.analysis_s}}}};
  if (!run.detector.empty()) report["detector"] = run.detector;
  if (run.fixes_s >= 0) report["timing"]["fixes_s"] = run.fixes_s;
  return report;
}

}  // namespace dl::an
