// The charts of the HTML report: loss/metric curves and the per-layer small multiples.
#include <algorithm>
#include <cmath>

#include "analysis/layer_stats.h"
#include "analysis/report_html.h"
#include "analysis/report_html_parts.h"
#include "analysis/svg_chart.h"

namespace dl::an::html {
namespace {

using svg::escape;

// Column colours; red is kept for failures.
constexpr const char* kBlue = "#2563eb";
constexpr const char* kAmber = "#d97706";
constexpr const char* kViolet = "#7c3aed";
constexpr const char* kTeal = "#0d9488";
constexpr const char* kSlate = "#475569";
constexpr const char* kPink = "#db2777";
constexpr const char* kOrange = "#ea580c";
constexpr const char* kGreen = "#16a34a";

svg::Series series(const std::string& label, const char* color, bool dashed = false) {
  svg::Series s;
  s.label = label;
  s.color = color;
  s.dashed = dashed;
  return s;
}

std::string swatch(const char* color, bool dashed) {
  return std::string("<span class=\"sw") + (dashed ? " dash" : "") + "\" style=\"border-color:" + color +
         "\"></span>";
}

std::string placeholder(const std::string& text) { return "<div class=\"na\">" + escape(text) + "</div>"; }

}  // namespace

std::string curves_section(const Trace& t, const RunInfo& run, const Domain& dom) {
  std::vector<float> loss = t.loss, metric = t.metric;
  if (loss.empty())
    for (const IterationRecord& r : t.records) loss.push_back(r.loss), metric.push_back(r.metric);
  if (loss.empty()) return "";
  std::string out = "<section id=\"curves\"><h2>Training curves</h2><div class=\"curves\">";
  const auto x_of = [&](size_t i) {
    return t.loss.empty() ? double(t.records[i].iteration) : double(i);
  };
  const std::string mark_label =
      dom.failure >= 0 ? "first failure: iteration " + std::to_string(dom.failure) : std::string();
  const int64_t bpe = t.header.batches_per_epoch;
  for (int which = 0; which < 2; ++which) {
    const std::vector<float>& v = which == 0 ? loss : metric;
    if (v.empty()) continue;
    const bool is_loss = which == 0;
    const std::string name = is_loss ? "loss" : (run.metric_name.empty() ? "metric" : run.metric_name);
    svg::Series s = series("per batch", is_loss ? kBlue : kGreen);
    for (size_t i = 0; i < v.size(); ++i) s.x.push_back(x_of(i)), s.y.push_back(v[i]);
    std::vector<svg::Series> all{s};
    // Per-batch values are noisy: draw them faintly under a moving average.
    if (v.size() >= 100) {
      const size_t window = std::max<size_t>(5, v.size() / 40);
      all[0].opacity = 0.3;
      svg::Series avg = series("moving average", is_loss ? kBlue : kGreen);
      avg.x = s.x;
      avg.y = svg::moving_average(s.y, window, svg::uses_log_scale({s}, svg::Scale::kAuto));
      all.push_back(avg);
    }
    const std::vector<double>& val = is_loss ? run.epoch_val_loss : run.epoch_val_metric;
    if (!val.empty() && bpe > 0) {
      svg::Series vs = series("validation (per epoch)", kOrange);
      vs.dots = true;
      for (size_t e = 0; e < val.size(); ++e) vs.x.push_back(double(int64_t(e + 1) * bpe - 1)), vs.y.push_back(val[e]);
      all.push_back(vs);
    }
    svg::ChartOptions o;
    o.width = 560, o.height = 250;
    o.title = is_loss ? "Loss" : name == "accuracy" ? "Accuracy" : name == "mae" ? "Mean absolute error" : name;
    o.aria_label = o.title + " over iterations";
    o.x_min = dom.x0, o.x_max = dom.x1;
    o.mark_x = dom.failure >= 0 ? double(dom.failure) : o.mark_x;
    o.mark_label = mark_label;
    if (!is_loss && name == "accuracy") o.y_min = 0, o.y_max = 1, o.scale = svg::Scale::kLinear;
    out += "<figure class=\"curve\">" + svg::chart(all, o) + "</figure>";
  }
  out += "</div>";
  const auto bad = [](float x) { return !std::isfinite(x); };
  if (std::any_of(loss.begin(), loss.end(), bad) || std::any_of(metric.begin(), metric.end(), bad))
    out += "<p class=\"note\">Red shading marks iterations whose value is NaN or Inf.</p>";
  return out + "</section>";
}

std::string layers_section(const Diagnosis& d, const Trace& t, const Domain& dom) {
  const auto& layers = t.header.layers;
  if (layers.empty()) return "";
  std::string out = "<section id=\"layer-charts\"><h2>Layer statistics over training</h2>";
  if (t.records.empty())
    return out + "<p class=\"note\">No probe records in this run (trained without probes).</p></section>";
  out += "<p class=\"note\">" + std::to_string(t.records.size()) + " recorded iterations" +
         (t.records.size() > 1 ? " (every " + std::to_string(t.stride() * t.probe_every()) + ")" : std::string()) +
         ". <span class=\"key-fail\"></span> first failure" +
         (dom.failure >= 0 ? " (iteration " + std::to_string(dom.failure) + ")" : std::string(" (none)")) +
         "; <span class=\"key-nan\"></span> NaN/Inf; the faulty layer is framed in red.</p>";
  const char* const columns[] = {"Output activations", "Gradient norm", "Update ratio", "Dead fraction",
                                 "Saturated fraction"};
  const std::string legends[] = {
      swatch(kBlue, false) + "mean" + swatch(kAmber, true) + "std",
      swatch(kViolet, false) + "\u2016\u2202L/\u2202out\u2016",
      swatch(kTeal, false) + "\u2016\u0394w\u2016/\u2016w\u2016, log",
      swatch(kSlate, false) + "values" + swatch(kPink, true) + "units",
      swatch(kOrange, false) + "values"};
  out += "<div class=\"lgrid head\"><div class=\"colhead\">Layer</div>";
  for (size_t c = 0; c < 5; ++c)
    out += "<div class=\"colhead\">" + escape(columns[c]) + "<br/><span class=\"legend\">" + legends[c] +
           "</span></div>";
  out += "</div>";

  const std::vector<LayerProbes> probes = layer_probes(t);
  const std::vector<std::string> status = layer_status(d, t);
  const auto& hp = t.header.probes;
  for (size_t k = 0; k < layers.size(); ++k) {
    const LayerProbes& p = probes[k];
    const std::string& st = status[k];
    std::vector<svg::Series> cols[5];
    cols[0] = {series("mean", kBlue), series("std", kAmber, true)};
    cols[1] = {series("gradient norm", kViolet)};
    cols[2] = {series("update ratio", kTeal)};
    cols[3] = {series("dead values", kSlate), series("dead units", kPink, true)};
    cols[4] = {series("saturated", kOrange)};
    for (size_t r = 0; r < t.records.size(); ++r) {
      const LayerValues v = layer_values(t, p, r);
      const double x = double(t.records[r].iteration);
      const double ys[5][2] = {{v.act_mean, v.act_std}, {v.grad_norm, 0}, {v.update_ratio, 0},
                               {v.dead_frac, v.dead_units}, {v.sat_frac, 0}};
      for (int c = 0; c < 5; ++c)
        for (size_t s = 0; s < cols[c].size(); ++s) cols[c][s].x.push_back(x), cols[c][s].y.push_back(ys[c][s]);
    }
    const bool has[5] = {p.output >= 0, p.gradient >= 0, p.update >= 0,
                         p.dead >= 0 && hp[size_t(p.dead)].op.has_dead_zone,
                         p.saturation >= 0 && hp[size_t(p.saturation)].op.saturates};
    const char* missing[5] = {"not recorded", "no gradient", "no parameters", "no dead zone", "does not saturate"};
    const std::string cls = st == "fault (primary)" ? " primary" : st == "ok" ? "" : " " + status_class(st);
    out += "<div class=\"lgrid lrow" + cls + "\" id=\"layer-" + std::to_string(layers[k].index) + "\">";
    out += "<div class=\"llabel\"><div class=\"lname\">layer " + std::to_string(layers[k].index) + "</div>";
    std::string ops;
    for (size_t j = 0; j < layers[k].op_types.size(); ++j) ops += (j ? " \u2192 " : "") + layers[k].op_types[j];
    out += "<div class=\"ops\">" + escape(ops) + "</div>";
    if (st != "ok") out += status_badge(st);
    if (st == "fault (primary)" && dom.failure >= 0)
      out += "<div class=\"lnote\">first failure at iteration " + std::to_string(dom.failure) + "</div>";
    out += "</div>";
    for (int c = 0; c < 5; ++c) {
      if (!has[c]) {
        out += "<div class=\"cell\">" + placeholder(missing[c]) + "</div>";
        continue;
      }
      svg::ChartOptions o;
      o.width = 200, o.height = 112;
      o.compact = true;
      o.x_min = dom.x0, o.x_max = dom.x1;
      o.mark_x = dom.failure >= 0 ? double(dom.failure) : o.mark_x;
      o.aria_label = "layer " + std::to_string(layers[k].index) + ": " + columns[c];
      if (c == 2) o.scale = svg::Scale::kLog;
      if (c >= 3) o.y_min = 0, o.y_max = 1, o.scale = svg::Scale::kLinear;
      out += "<div class=\"cell\">" + svg::chart(cols[c], o) + "</div>";
    }
    out += "</div>";
  }
  return out + "</section>";
}

}  // namespace dl::an::html
