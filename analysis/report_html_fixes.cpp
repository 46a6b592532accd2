// The "Verified fixes" section of the HTML report (--verify-fixes): the repairs tried on
// the user's model, best first, and the loss/metric per epoch before and after the best.
#include "analysis/fixes.h"
#include "analysis/report_html_parts.h"
#include "analysis/svg_chart.h"

namespace dl::an::html {
namespace {

using svg::escape;
using svg::num;

svg::Series epoch_series(const std::string& label, const char* color, const std::vector<double>& v, bool dashed) {
  svg::Series s;
  s.label = label;
  s.color = color;
  s.dashed = dashed;
  s.dots = v.size() == 1;  // a run that stopped in its first epoch has one point: show it
  for (size_t e = 0; e < v.size(); ++e) s.x.push_back(double(e + 1)), s.y.push_back(v[e]);
  return s;
}

std::string chart(const char* title, const std::vector<double>& before, const std::vector<double>& after,
                  bool accuracy) {
  if (before.empty() && after.empty()) return "";
  svg::ChartOptions o;
  o.width = 560, o.height = 230;
  o.title = title;
  o.x_label = "epoch";
  o.aria_label = std::string(title) + " per epoch before and after the fix";
  if (accuracy) o.y_min = 0, o.y_max = 1, o.scale = svg::Scale::kLinear;
  return "<figure class=\"curve\">" +
         svg::chart({epoch_series("before (this run)", "#dc2626", before, true),
                     epoch_series("after the fix", "#16a34a", after, false)},
                    o) +
         "</figure>";
}

}  // namespace

std::string fixes_section(const Diagnosis& d, const RunInfo& run) {
  if (!d.fault || d.findings.empty() || d.findings.front().fixes.empty()) return "";
  const std::vector<FixOutcome>& fixes = d.findings.front().fixes;
  const FixOutcome& best = fixes.front();
  const std::string metric = run.metric_name.empty() ? "metric" : run.metric_name;
  std::string out = "<section id=\"fixes\"><h2>" + std::string(best.verified ? "Verified fixes" : "No verified fix") +
                    "</h2><p class=\"note\">" + std::to_string(fixes.size()) +
                    " repairs retrained on this model from the same initial weights, data and seed. A fix is verified "
                    "when the primary symptom is gone, no new conclusive fault appears and the loss or " +
                    escape(metric) + " improves clearly.</p>";
  if (best.verified) {
    out += "<p class=\"headline\">Best: " + escape(best.change) + "</p>";
    out += "<div class=\"curves\">" + chart("Loss", run.epoch_loss, best.epoch_loss, false) +
           chart(metric == "accuracy" ? "Accuracy" : metric.c_str(), run.epoch_metric, best.epoch_metric,
                 metric == "accuracy") +
           "</div>";
    if (!best.python_code.empty())
      out += "<p>Add this preprocessing to your data pipeline (also recorded in the exported model's metadata):</p>"
             "<pre><code>" + escape(best.python_code) + "</code></pre>";
  }
  out += "<table><tr><th class=\"n\">#</th><th>result</th><th>change</th><th>root cause</th><th class=\"n\">loss "
         "before</th><th class=\"n\">after</th><th class=\"n\">" + escape(metric) +
         " before</th><th class=\"n\">after</th><th class=\"n\">seconds</th><th>why</th></tr>";
  for (size_t k = 0; k < fixes.size(); ++k) {
    const FixOutcome& x = fixes[k];
    out += "<tr><td class=\"n\">" + std::to_string(k + 1) + "</td><td>" +
           (x.verified ? std::string("<span class=\"badge ok\">verified</span>") : std::string("not verified")) +
           "</td><td>" + escape(x.change) + "</td><td>" + escape(root_cause_name(x.root_cause)) +
           "</td><td class=\"n\">" + num(x.before.loss) + "</td><td class=\"n\">" + num(x.after.loss) +
           "</td><td class=\"n\">" + num(x.before.metric) + "</td><td class=\"n\">" + num(x.after.metric) +
           "</td><td class=\"n\">" + num(x.seconds) + "</td><td>" + escape(x.reason) + "</td></tr>";
  }
  out += "</table>";
  if (const std::string loc = describe_repair_localization(d.findings.front()); !loc.empty())
    out += "<p class=\"note\">Localization: " + escape(loc) + "</p>";
  return out + "</section>";
}

}  // namespace dl::an::html
