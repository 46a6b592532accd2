#include "analysis/report_html.h"

#include <algorithm>
#include <cmath>

#include "analysis/layer_stats.h"
#include "analysis/report_html_parts.h"
#include "analysis/svg_chart.h"

namespace dl::an {
namespace html {
namespace {

using nlohmann::json;
using svg::escape;
using svg::num;

// No '<' or '&' anywhere: the style sheet is XML text as it stands.
const char* const kStyle = R"(
* { box-sizing: border-box; }
body { margin: 0; background: #eef2f6; color: #0f172a;
  font: 14px/1.45 "DejaVu Sans", Helvetica, Arial, sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 18px 22px 36px; }
header.top { display: flex; justify-content: space-between; align-items: baseline; gap: 16px;
  padding-bottom: 8px; }
header.top h1 { font-size: 19px; margin: 0; }
header.top .run { color: #475569; font-size: 13px; text-align: right; overflow-wrap: anywhere; }
section { background: #ffffff; border: 1px solid #dbe2ea; border-radius: 8px; padding: 14px 18px;
  margin: 14px 0; }
h2 { font-size: 16px; margin: 0 0 10px; }
h3 { font-size: 14px; margin: 14px 0 6px; }
.verdict.fault { border-left: 8px solid #dc2626; }
.verdict.ok { border-left: 8px solid #16a34a; }
.verdict .headline { font-size: 18px; font-weight: 600; margin: 8px 0 10px; }
.badge { display: inline-block; padding: 1px 9px; border-radius: 10px; font-weight: 700; font-size: 12px;
  color: #ffffff; background: #64748b; letter-spacing: 0.02em; }
.verdict .badge { font-size: 15px; padding: 3px 14px; }
.badge.primary, .badge.fault { background: #dc2626; }
.badge.consequence { background: #ea580c; }
.badge.warning { background: #b45309; }
.badge.ok { background: #16a34a; }
.banner { background: #fef3c7; border: 1px solid #f59e0b; padding: 6px 10px; border-radius: 6px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 3px 16px; margin: 6px 0 12px; }
dl.facts dt { color: #475569; }
dl.facts dd { margin: 0; font-weight: 600; overflow-wrap: anywhere; }
.fix { background: #ecfdf5; border: 1px solid #6ee7b7; padding: 8px 12px; border-radius: 6px; margin: 8px 0; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #e2e8f0; vertical-align: top; }
th { background: #f8fafc; color: #334155; font-weight: 600; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
table.epochs { width: auto; min-width: 40%; }
.vbody { display: grid; grid-template-columns: minmax(0, 1fr) minmax(240px, 36%); gap: 22px; align-items: start; }
table.evidence td { overflow-wrap: anywhere; }
a { color: inherit; }
tr.primary td { background: #fef2f2; }
tr.primary td:first-child { box-shadow: inset 4px 0 0 #dc2626; }
tr.consequence td:first-child { box-shadow: inset 4px 0 0 #ea580c; }
code { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12px; }
.note { color: #475569; font-size: 12.5px; margin: 4px 0 8px; }
.curves { display: grid; grid-template-columns: 1fr 1fr; gap: 14px; }
figure { margin: 0; }
svg.chart { width: 100%; height: auto; display: block; }
.lgrid { display: grid; grid-template-columns: 138px repeat(5, minmax(0, 1fr)); gap: 8px; padding: 6px 8px;
  align-items: center; }
.lgrid.head { padding-top: 0; padding-bottom: 2px; align-items: end; }
.colhead { font-weight: 600; font-size: 12.5px; color: #1e293b; }
.legend { font-weight: 400; font-size: 11px; color: #475569; }
.lrow { border: 2px solid transparent; border-top: 1px solid #e2e8f0; }
.lrow.primary { border: 3px solid #dc2626; background: #fef2f2; border-radius: 8px; margin: 4px 0; }
.lrow.fault { border: 2px solid #f87171; border-radius: 8px; }
.lrow.consequence { border: 2px dashed #fb923c; border-radius: 8px; }
.lrow.warning { border: 2px dashed #fbbf24; border-radius: 8px; }
.lname { font-weight: 700; font-size: 15px; }
.ops { font-size: 11.5px; color: #475569; overflow-wrap: anywhere; margin-bottom: 3px; }
.lnote { font-size: 11.5px; color: #b91c1c; font-weight: 600; margin-top: 3px; }
.na { height: 100%; min-height: 56px; display: flex; align-items: center; justify-content: center;
  color: #94a3b8; font-size: 11.5px; border: 1px dashed #e2e8f0; border-radius: 4px; }
.sw { display: inline-block; width: 16px; height: 0; border-top: 2px solid; vertical-align: middle;
  margin: 0 3px 0 7px; }
.sw:first-child { margin-left: 0; }
.sw.dash { border-top-style: dashed; }
.key-fail { display: inline-block; width: 0; height: 12px; border-left: 2px dashed #dc2626;
  vertical-align: middle; margin: 0 3px; }
.key-nan { display: inline-block; width: 12px; height: 12px; background: #fbd5d5; vertical-align: middle;
  margin: 0 3px; }
.two { display: grid; grid-template-columns: 1fr 1fr; gap: 18px; }
footer { color: #64748b; font-size: 12px; text-align: center; margin-top: 10px; }
)";

// Evidence values: numbers as "%.4g", objects as "key: value, ...", arrays as lists.
std::string value_text(const json& v) {
  if (v.is_number()) return num(v.get<double>());
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() || v.is_array()) {
    std::string s;
    for (auto it = v.begin(); it != v.end(); ++it)
      s += (s.empty() ? "" : ", ") + (v.is_object() ? it.key() + ": " : std::string()) + value_text(it.value());
    return v.is_array() ? "[" + s + "]" : s;
  }
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string where(const Finding& f, const Trace& t) {
  std::string s = report_detail::layer_label(f, t);
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : ", ") + part; };
  if (f.epoch >= 0) add("epoch " + std::to_string(f.epoch));
  if (f.iteration >= 0) add("iteration " + std::to_string(f.iteration));
  if (s.empty()) s = f.stage == Stage::kStatic ? "before training" : "the whole run";
  return s;
}

std::string fact(const std::string& key, const std::string& value_html) {
  return "<dt>" + escape(key) + "</dt><dd>" + value_html + "</dd>";
}

std::string with_commas(int64_t v) {
  std::string s = std::to_string(v < 0 ? -v : v);
  for (int i = int(s.size()) - 3; i > 0; i -= 3) s.insert(size_t(i), ",");
  return (v < 0 ? "-" : "") + s;
}

std::string verdict_section(const Diagnosis& d, const Trace& t, const RunInfo& run) {
  std::string out = std::string("<section class=\"verdict ") + (d.fault ? "fault" : "ok") + "\" id=\"verdict\">";
  if (!run.detector.empty())
    out += "<p class=\"note\">Detector: " + escape(run.detector) + " (a Keras callback baseline: it can stop training, "
           "not localize)</p>";
  if (!run.complete)
    out += "<p class=\"banner\"><strong>Interrupted</strong>: training stopped after " +
           std::to_string(run.iterations) + " iterations; the diagnosis covers only the part that ran.</p>";
  if (!d.fault || d.findings.empty()) {
    out += "<span class=\"badge ok\">OK</span><p class=\"headline\">No fault found in " +
           std::to_string(run.iterations) + " iterations.</p>";
    return out + "</section>";
  }
  const Finding& f = d.findings.front();
  out += "<span class=\"badge primary\">FAULT</span>";
  out += "<p class=\"headline\">" + escape(f.message.empty() ? f.symptom : f.message) +
         "</p><div class=\"vbody\"><div><dl class=\"facts\">";
  const std::string label = report_detail::layer_label(f, t);
  out += fact("Layer", label.empty() ? "none (the whole model)" : "<a href=\"#layer-" + std::to_string(f.layer) +
                                                                    "\">" + escape(label) + "</a>");
  std::string when = f.iteration >= 0 ? "iteration " + std::to_string(f.iteration) : "before training";
  if (f.epoch >= 0) when += " (epoch " + std::to_string(f.epoch) + ")";
  out += fact("Iteration", escape(when));
  out += fact("Root cause", escape(root_cause_name(f.root_cause)));
  out += fact("Symptom", "<code>" + escape(f.symptom) + "</code> (" + escape(stage_name(f.stage)) + " stage" +
                             (f.rule.empty() ? "" : ", rule <code>" + escape(f.rule) + "</code>") + ")");
  out += "</dl>";
  if (!f.recommendation.empty()) out += "<p class=\"fix\"><strong>Fix:</strong> " + escape(f.recommendation) + "</p>";
  out += "</div><div>";
  if (f.evidence.is_object() && !f.evidence.empty()) {
    out += "<table class=\"evidence\"><tr><th>evidence</th><th class=\"n\">value</th></tr>";
    for (auto it = f.evidence.begin(); it != f.evidence.end(); ++it)
    {
      const std::string value = value_text(it.value());
      out += "<tr><td><code>" + escape(it.key()) + "</code></td><td" + (value.size() > 24 ? "" : " class=\"n\"") +
             ">" + escape(value) + "</td></tr>";
    }
    out += "</table>";
  }
  return out + "</div></div></section>";
}

std::string layer_table(const Diagnosis& d, const Trace& t) {
  const auto& layers = t.header.layers;
  if (layers.empty()) return "";
  const std::vector<std::string> status = layer_status(d, t);
  std::string out = "<section id=\"layers\"><h2>Layers</h2><table><tr><th class=\"n\">#</th><th>nodes</th>"
                    "<th>op types</th><th class=\"n\">parameters</th><th>status</th></tr>";
  for (size_t k = 0; k < layers.size(); ++k) {
    const LayerInfo& l = layers[k];
    std::string nodes, ops;
    for (size_t j = 0; j < l.nodes.size(); ++j) nodes += (j ? ", " : "") + l.nodes[j];
    for (size_t j = 0; j < l.op_types.size(); ++j) ops += (j ? ", " : "") + l.op_types[j];
    const std::string& st = status[k];
    out += "<tr class=\"" + status_class(st) + "\"><td class=\"n\">" + std::to_string(l.index) + "</td><td><code>" +
           escape(nodes) + "</code></td><td>" + escape(ops) + "</td><td class=\"n\">" + with_commas(l.param_count) +
           "</td><td>" + status_badge(st) + "</td></tr>";
  }
  return out + "</table></section>";
}

std::string findings_section(const Diagnosis& d, const Trace& t) {
  const size_t others = d.findings.size() > 1 ? d.findings.size() - 1 : 0;
  if (others == 0 && d.warnings.empty()) return "";
  std::string out = "<section id=\"findings\">";
  const auto row = [&](const Finding& f, const std::string& id, const std::string& relation) {
    std::string msg = escape(f.message.empty() ? f.symptom : f.message);
    if (!f.recommendation.empty() && f.consequence_of < 0) msg += "<br/><strong>Fix:</strong> " + escape(f.recommendation);
    return "<tr class=\"" + std::string(f.consequence_of >= 0 ? "consequence" : "") + "\"><td>" + escape(id) +
           "</td><td><code>" + escape(f.symptom) + "</code></td><td>" + escape(where(f, t)) + "</td><td>" +
           escape(root_cause_name(f.root_cause)) + "</td><td>" + msg + "</td><td>" + escape(relation) + "</td></tr>";
  };
  const std::string head = "<table><tr><th>#</th><th>symptom</th><th>where</th><th>root cause</th>"
                           "<th>what</th><th>relation</th></tr>";
  if (others > 0) {
    out += "<h2>Other findings</h2>" + head;
    for (size_t k = 1; k < d.findings.size(); ++k) {
      const Finding& f = d.findings[k];
      out += row(f, "#" + std::to_string(k + 1),
                 f.consequence_of >= 0 ? "consequence of #" + std::to_string(f.consequence_of + 1) : "independent");
    }
    out += "</table>";
  }
  if (!d.warnings.empty()) {
    out += std::string(others > 0 ? "<h3>" : "<h2>") + "Warnings (not confirmed by the run)" +
           (others > 0 ? "</h3>" : "</h2>") + head;
    for (size_t k = 0; k < d.warnings.size(); ++k) out += row(d.warnings[k], "W" + std::to_string(k + 1), "warning");
    out += "</table>";
  }
  return out + "</section>";
}

std::string epochs_table(const RunInfo& run) {
  const size_t n = run.epoch_loss.size();
  if (n == 0) return "";
  const bool val = run.epoch_val_loss.size() == n;
  std::string out = "<h3>Per epoch</h3><table class=\"epochs\"><tr><th class=\"n\">epoch</th><th class=\"n\">loss</th><th class=\"n\">" +
                    escape(run.metric_name) + "</th>" +
                    (val ? "<th class=\"n\">val loss</th><th class=\"n\">val " + escape(run.metric_name) + "</th>" : "") +
                    "</tr>";
  for (size_t e = 0; e < n; ++e) {
    if (n > 24 && e == 12) out += "<tr><td class=\"n\">\u2026</td><td></td><td></td>" +
                                  std::string(val ? "<td></td><td></td>" : "") + "</tr>";
    if (n > 24 && e >= 12 && e < n - 12) continue;
    const auto at = [&](const std::vector<double>& v) { return e < v.size() ? num(v[e]) : std::string("-"); };
    out += "<tr><td class=\"n\">" + std::to_string(e + 1) + "</td><td class=\"n\">" + at(run.epoch_loss) +
           "</td><td class=\"n\">" + at(run.epoch_metric) + "</td>" +
           (val ? "<td class=\"n\">" + at(run.epoch_val_loss) + "</td><td class=\"n\">" + at(run.epoch_val_metric) +
                      "</td>"
                : "") +
           "</tr>";
  }
  return out + "</table>";
}

std::string summary_section(const Trace& t, const RunInfo& run) {
  std::string out = "<section id=\"summary\"><h2>Training summary</h2><div class=\"two\"><div><dl class=\"facts\">";
  out += fact("Iterations", std::to_string(run.iterations));
  out += fact("Epochs", std::to_string(run.epochs));
  out += fact("Stopped early", run.stopped_early ? "yes, at the first conclusive fault" : "no");
  out += fact("Complete", run.complete ? "yes" : "no (interrupted)");
  out += fact("Probe records", std::to_string(t.records.size()));
  const DataSummary& ds = t.header.data_summary;
  if (ds.rows > 0) out += fact("Data", with_commas(ds.rows) + " rows \u00d7 " + std::to_string(ds.features) + " features");
  out += "</dl></div><div><dl class=\"facts\">";
  for (const auto& [k, v] : t.header.config) out += fact(k, escape(v));
  out += "</dl></div></div>" + epochs_table(run);
  out += "<h3>Timing</h3><p>import " + num(run.import_s) + " s, training " + num(run.train_s) + " s, analysis " +
         num(run.analysis_s) + " s</p>";
  return out + "</section>";
}

}  // namespace

std::string status_class(const std::string& status) {
  if (status == "fault (primary)") return "primary";
  return status;
}

std::string status_badge(const std::string& status) {
  return "<span class=\"badge " + escape(status_class(status)) + "\">" + escape(status) + "</span>";
}

}  // namespace html

int64_t first_failure_iteration(const Diagnosis& d, const Trace& t) {
  if (d.fault && !d.findings.empty() && d.findings.front().iteration >= 0) return d.findings.front().iteration;
  for (size_t i = 0; i < t.loss.size(); ++i)
    if (!std::isfinite(t.loss[i])) return int64_t(i);
  return -1;
}

std::string report_html(const Diagnosis& d, const Trace& t, const RunInfo& run) {
  html::Domain dom;
  double last = t.loss.empty() ? 0 : double(t.loss.size() - 1);
  if (!t.records.empty()) last = std::max(last, double(t.records.back().iteration));
  dom.x1 = std::max(last, 1.0);
  dom.failure = first_failure_iteration(d, t);
  const std::string title = "deeplocalize: " + std::string(d.fault ? "FAULT" : "OK") + " \u2014 " + run.model;
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>"
                    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>"
                    "<meta name=\"generator\" content=\"deeplocalize " + svg::escape(run.tool_version) + "\"/><title>" +
                    svg::escape(title) + "</title><style>" + html::kStyle + "</style></head>\n<body><main>";
  out += "<header class=\"top\"><h1>deeplocalize report</h1><div class=\"run\">model <code>" + svg::escape(run.model) +
         "</code>" + (run.data.empty() ? "" : "<br/>data <code>" + svg::escape(run.data) + "</code>") + "</div></header>\n";
  out += html::verdict_section(d, t, run) + "\n";
  out += html::fixes_section(d, run) + "\n";
  out += html::curves_section(t, run, dom) + "\n";
  out += html::layers_section(d, t, dom) + "\n";
  out += html::layer_table(d, t) + "\n";
  out += html::findings_section(d, t) + "\n";
  if (!t.header.notes.empty()) {  // what was changed or assumed about the model file (rt::adapt_export)
    out += "<section id=\"notes\"><h2>Notes about the model</h2><ul>";
    for (const std::string& n : t.header.notes) out += "<li>" + svg::escape(n) + "</li>";
    out += "</ul></section>\n";
  }
  out += html::summary_section(t, run) + "\n";
  out += "<footer>Generated by deeplocalize " + svg::escape(run.tool_version) +
         ". Self-contained: no scripts, no network.</footer></main></body></html>\n";
  return out;
}

}  // namespace dl::an
