#include "analysis/layer_stats.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "io/text_escape.h"

namespace dl::an {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Position in header.layers of the layer with this index, or -1.
int layer_position(const Trace& t, int index) {
  const auto& layers = t.header.layers;
  for (size_t k = 0; k < layers.size(); ++k)
    if (layers[k].index == index) return static_cast<int>(k);
  return -1;
}

std::string num(double v) {
  if (std::isnan(v)) return "-";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string pad(std::string s, size_t width, bool right = true) {
  if (s.size() >= width) return s;
  const std::string fill(width - s.size(), ' ');
  return right ? fill + s : s + fill;
}

}  // namespace

std::vector<LayerProbes> layer_probes(const Trace& t) {
  const auto& layers = t.header.layers;
  const auto& probes = t.header.probes;
  std::vector<LayerProbes> out(layers.size());
  std::vector<int> out_step(layers.size(), -1), grad_step(layers.size(), -1);
  std::vector<int64_t> update_count(layers.size(), -1);
  for (size_t i = 0; i < probes.size(); ++i) {
    const Probe& p = probes[i];
    const int pos = layer_position(t, p.layer);
    if (pos < 0) continue;
    LayerProbes& lp = out[static_cast<size_t>(pos)];
    const int idx = static_cast<int>(i);
    switch (p.kind) {
      case ProbeKind::kForward:
        if (p.step >= out_step[pos]) out_step[pos] = p.step, lp.output = idx;
        if (p.op.has_dead_zone) lp.dead = idx;  // probes are in program order: the last wins
        if (p.op.saturates) lp.saturation = idx;
        break;
      case ProbeKind::kGradient:
        if (p.step >= grad_step[pos]) grad_step[pos] = p.step, lp.gradient = idx;
        break;
      case ProbeKind::kUpdate: {
        const int64_t count = t.records.empty() ? 0 : int64_t(t.at(0, i).count);
        if (count > update_count[pos]) update_count[pos] = count, lp.update = idx;
        break;
      }
      default:
        break;
    }
  }
  for (LayerProbes& lp : out) {
    if (lp.dead < 0) lp.dead = lp.output;
    if (lp.saturation < 0) lp.saturation = lp.output;
  }
  return out;
}

LayerValues layer_values(const Trace& t, const LayerProbes& p, size_t record) {
  LayerValues v{kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, true};
  if (record >= t.records.size()) return v;
  const auto get = [&](int probe, auto field) {
    if (probe < 0) return kNaN;
    const TensorStats& s = t.at(record, static_cast<size_t>(probe));
    if (!s.finite()) {
      v.finite = false;
      return kNaN;
    }
    return double(field(s));
  };
  v.act_mean = get(p.output, [](const TensorStats& s) { return s.mean; });
  v.act_std = get(p.output, [](const TensorStats& s) { return s.std; });
  v.grad_norm = get(p.gradient, [](const TensorStats& s) { return s.l2; });
  v.update_ratio = get(p.update, [](const TensorStats& s) { return s.mean; });
  const auto& probes = t.header.probes;
  const int dead = p.dead >= 0 && probes[size_t(p.dead)].op.has_dead_zone ? p.dead : -1;
  const int sat = p.saturation >= 0 && probes[size_t(p.saturation)].op.saturates ? p.saturation : -1;
  v.dead_frac = get(dead, [](const TensorStats& s) { return s.dead_frac; });
  v.dead_units = get(dead, [](const TensorStats& s) { return s.dead_units; });
  v.sat_frac = get(sat, [](const TensorStats& s) { return s.sat_frac; });
  return v;
}

std::vector<std::string> layer_status(const Diagnosis& d, const Trace& t) {
  std::vector<std::string> status(t.header.layers.size(), "ok");
  const auto rank = [](const std::string& s) {
    if (s == "fault (primary)") return 4;
    if (s == "fault") return 3;
    if (s == "consequence") return 2;
    if (s == "warning") return 1;
    return 0;
  };
  const auto mark = [&](int layer, const std::string& s) {
    const int pos = layer < 0 ? -1 : layer_position(t, layer);
    if (pos >= 0 && rank(s) > rank(status[static_cast<size_t>(pos)])) status[static_cast<size_t>(pos)] = s;
  };
  for (size_t k = 0; k < d.findings.size(); ++k) {
    const Finding& f = d.findings[k];
    if (k == 0 && d.fault)
      mark(f.layer, "fault (primary)");
    else if (f.consequence_of >= 0)
      mark(f.layer, "consequence");
    else
      mark(f.layer, f.conclusive ? "fault" : "warning");
  }
  for (const Finding& f : d.warnings) mark(f.layer, "warning");
  return status;
}

std::string report_layer_stats(const Diagnosis& d, const Trace& t, bool color) {
  if (t.records.empty() || t.header.layers.empty()) return "";
  const size_t last = t.records.size() - 1;
  const std::vector<LayerProbes> probes = layer_probes(t);
  const std::vector<std::string> status = layer_status(d, t);
  std::string out = "\nPer-layer statistics at iteration " + std::to_string(t.records[last].iteration) +
                    " (last recorded):\n";
  out += "  layer  ops                     act mean   act std  grad norm  upd ratio   dead  dead units  saturated  status\n";
  for (size_t k = 0; k < t.header.layers.size(); ++k) {
    const LayerInfo& l = t.header.layers[k];
    std::string ops;
    for (size_t j = 0; j < l.op_types.size(); ++j) ops += (j ? "+" : "") + io::visible(l.op_types[j]);  // a trace may come from anywhere
    if (ops.size() > 22) ops = ops.substr(0, 21) + "~";
    const LayerValues v = layer_values(t, probes[k], last);
    std::string row = "  " + pad(std::to_string(l.index), 5) + "  " + pad(ops, 22, false) + pad(num(v.act_mean), 10) +
                      pad(num(v.act_std), 10) + pad(num(v.grad_norm), 11) + pad(num(v.update_ratio), 11) +
                      pad(num(v.dead_frac), 7) + pad(num(v.dead_units), 12) + pad(num(v.sat_frac), 11) + "  " +
                      status[k] + (v.finite ? "" : " (NaN/Inf)");
    const bool bad = status[k] != "ok" && status[k] != "warning";
    if (color && bad) row = "\x1b[1;31m" + row + "\x1b[0m";
    out += row + "\n";
  }
  return out;
}

}  // namespace dl::an
