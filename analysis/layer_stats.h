// Per-layer statistics for reports: which probes summarise a layer (its output, its
// gradient, its update), the values at a recorded iteration, each layer's status in a
// diagnosis, and the compact per-layer table of `--verbose` text reports.
#pragma once

#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "analysis/trace.h"

namespace dl::an {

// Probe indices (into header.probes) that summarise one layer; -1 when absent.
struct LayerProbes {
  int output = -1;      // forward probe of the layer's last step (its output activations)
  int dead = -1;        // forward probe of the last step with a dead zone, else output
  int saturation = -1;  // forward probe of the last step that saturates, else output
  int gradient = -1;    // gradient probe of the layer's last step that has one
  int update = -1;      // update probe of the layer's largest parameter
};

// One entry per header.layers entry, in the same order.
std::vector<LayerProbes> layer_probes(const Trace& t);

// The values reports show, at one record; NaN where a probe is absent (dead fractions
// of a layer without a dead zone, saturation of one that does not saturate) or its
// tensor held NaN/Inf.
struct LayerValues {
  double act_mean, act_std;  // output activations
  double grad_norm;          // ||dL/d output||
  double update_ratio;       // ||dw|| / ||w||
  double dead_frac, dead_units, sat_frac;
  bool finite = true;        // no NaN/Inf in any of the layer's summarised tensors
};
LayerValues layer_values(const Trace& t, const LayerProbes& p, size_t record);

// A layer's status in the diagnosis: "fault (primary)", "fault" (another conclusive
// finding that is no consequence), "consequence", "warning" or "ok". One entry per
// header.layers entry.
std::vector<std::string> layer_status(const Diagnosis& d, const Trace& t);

// The `--verbose` addition to the text report: one row per layer with the activation
// mean/std, gradient norm, update ratio, dead/saturated fractions at the last recorded
// iteration and the layer's status. ANSI colour only when `color`. Empty without records.
std::string report_layer_stats(const Diagnosis& d, const Trace& t, bool color);

}  // namespace dl::an
