// Synthetic traces for rule tests: a dense model described layer by layer, filled with
// the statistics of a healthy run, which a test then bends into the symptom it needs.
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "analysis/trace.h"

namespace dl::test {

class TraceBuilder {
 public:
  // Adds a dense layer: Gemm (parameterised) followed by an activation: "relu",
  // "sigmoid", "tanh", "softmax", "linear" (no activation step).
  TraceBuilder& dense(const std::string& activation, int64_t units) {
    layers_.push_back({activation, units});
    return *this;
  }
  TraceBuilder& config(const std::string& key, const std::string& value) {
    config_[key] = value;
    return *this;
  }
  TraceBuilder& batches_per_epoch(int64_t b) {
    batches_ = b;
    return *this;
  }

  // Probe index helpers (valid after build()).
  size_t forward(int layer, bool activation = true) const { return find(an::ProbeKind::kForward, layer, activation); }
  size_t gradient(int layer, bool activation = true) const { return find(an::ProbeKind::kGradient, layer, activation); }
  size_t weight(int layer) const { return find(an::ProbeKind::kWeight, layer, false); }
  size_t param_grad(int layer) const { return find(an::ProbeKind::kParamGrad, layer, false); }
  size_t update(int layer) const { return find(an::ProbeKind::kUpdate, layer, false); }

  // A healthy classification run: loss falls from ~log(C) towards 0.1, accuracy
  // rises from chance to 0.95, moderate activations and gradients.
  an::Trace build(int64_t iterations) {
    an::Trace t;
    an::TraceHeader& h = t.header;
    h.model = "synthetic.onnx";
    h.data = "synthetic.csv";
    h.config = {{"loss", "categorical_crossentropy"}, {"optimizer", "adam"}, {"learning_rate", "0.001"},
                {"from_logits", "false"}, {"batch_size", "32"}, {"epochs", "10"}};
    for (const auto& [k, v] : config_) h.config[k] = v;
    h.metric_name = "accuracy";
    h.batches_per_epoch = batches_;
    const int64_t classes = layers_.empty() ? 1 : layers_.back().units;
    h.output_width = classes;
    for (size_t l = 0; l < layers_.size(); ++l) {
      an::LayerInfo info;
      info.index = static_cast<int>(l);
      const std::string gemm = "/" + std::to_string(2 * l) + "/Gemm";
      info.nodes = {gemm};
      info.op_types = {"Gemm"};
      info.params = {std::to_string(2 * l) + ".weight", std::to_string(2 * l) + ".bias"};
      add_probe(h, an::ProbeKind::kForward, l, gemm, "Gemm", linear_desc());
      add_probe(h, an::ProbeKind::kGradient, l, gemm, "Gemm", linear_desc());
      if (layers_[l].activation != "linear") {
        const std::string act = "/" + std::to_string(2 * l + 1) + "/" + op_type(layers_[l].activation);
        info.nodes.push_back(act);
        info.op_types.push_back(op_type(layers_[l].activation));
        add_probe(h, an::ProbeKind::kForward, l, act, op_type(layers_[l].activation), act_desc(layers_[l]));
        add_probe(h, an::ProbeKind::kGradient, l, act, op_type(layers_[l].activation), act_desc(layers_[l]));
      }
      for (const std::string& p : info.params)
        for (an::ProbeKind k : {an::ProbeKind::kWeight, an::ProbeKind::kParamGrad, an::ProbeKind::kUpdate}) {
          an::Probe pr;
          pr.kind = k;
          pr.layer = static_cast<int>(l);
          pr.node = p;
          h.probes.push_back(pr);
        }
      h.layers.push_back(info);
      an::InitializerSummary w;
      w.name = info.params[0];
      w.count = 64;
      w.min = -0.3, w.max = 0.3, w.std = 0.15;
      h.initializers.push_back(w);
    }
    an::DataSummary& d = h.data_summary;
    d.rows = batches_ * 32;
    d.features = 4;
    for (int f = 0; f < 4; ++f) d.feature_columns.push_back({-2.0, 2.0, 0.0, 1.0, 0, 0});
    d.all_features = {-2.0, 2.0, 0.0, 1.0, 0, 0};
    for (int64_t c = 0; c < classes; ++c) d.target_columns.push_back({0.0, 1.0, 1.0 / double(classes), 0.4, 0, 0});
    d.targets_are_classes = true;
    d.targets_integer = true;
    d.classes = classes;
    probes_ = h.probes;

    for (int64_t it = 0; it < iterations; ++it) {
      const double progress = double(it) / double(std::max<int64_t>(iterations - 1, 1));
      an::IterationRecord r;
      r.iteration = it;
      r.epoch = it / batches_;
      r.loss = float(std::log(double(classes) + 1) * std::exp(-3.0 * progress) + 0.05);
      r.metric = float(1.0 / double(classes) + (0.95 - 1.0 / double(classes)) * (1 - std::exp(-4.0 * progress)));
      an::TensorStats* s = t.begin_record(r);
      for (size_t p = 0; p < h.probes.size(); ++p) s[p] = healthy_stats(h.probes[p], it);
      t.records.back() = r;
      t.add_loss(it, r.loss, r.metric);
      if ((it + 1) % batches_ == 0) {
        an::EpochRecord e;
        e.epoch = r.epoch;
        e.loss = r.loss;
        e.metric = r.metric;
        t.add_epoch(e);
      }
    }
    return t;
  }

 private:
  struct LayerSpec {
    std::string activation;
    int64_t units;
  };

  static std::string op_type(const std::string& a) {
    if (a == "relu") return "Relu";
    if (a == "sigmoid") return "Sigmoid";
    if (a == "tanh") return "Tanh";
    if (a == "softmax") return "Softmax";
    return "Identity";
  }
  static an::OpDescription linear_desc() {
    an::OpDescription d;
    d.role = "parameterized";
    d.linear = true;
    return d;
  }
  static an::OpDescription act_desc(const LayerSpec& l) {
    an::OpDescription d;
    d.role = "activation";
    d.units = l.units;
    if (l.activation == "relu") d.out_lo = 0, d.has_dead_zone = true;
    if (l.activation == "sigmoid") d.out_lo = 0, d.out_hi = 1, d.saturates = true;
    if (l.activation == "tanh") d.out_lo = -1, d.out_hi = 1, d.saturates = true;
    if (l.activation == "softmax") d.out_lo = 0, d.out_hi = 1, d.saturates = true, d.normalizes = true;
    return d;
  }
  void add_probe(an::TraceHeader& h, an::ProbeKind kind, size_t layer, const std::string& node,
                 const std::string& op, const an::OpDescription& desc) {
    an::Probe p;
    p.kind = kind;
    p.layer = static_cast<int>(layer);
    p.step = static_cast<int>(h.probes.size());
    p.node = node;
    p.op_type = op;
    p.op = desc;
    h.probes.push_back(p);
  }
  an::TensorStats healthy_stats(const an::Probe& p, int64_t it) const {
    an::TensorStats s;
    s.count = 32 * 16;
    const double wobble = 1.0 + 0.05 * std::sin(double(it));
    switch (p.kind) {
      case an::ProbeKind::kForward:
        s.mean = float(0.1 * wobble), s.std = 0.8f, s.min = -2.0f, s.max = 2.5f, s.mean_abs = 0.6f, s.l2 = 18.0f;
        if (p.op.has_dead_zone) s.min = 0, s.dead_frac = 0.4f, s.zero_frac = 0.4f, s.dead_units = 0.05f;
        if (p.op.saturates) s.min = 0.05f, s.max = 0.95f, s.mean = 0.5f, s.std = 0.2f, s.sat_frac = 0.02f;
        break;
      case an::ProbeKind::kGradient:
        s.mean = 0, s.std = float(0.01 * wobble), s.min = -0.05f, s.max = 0.05f, s.l2 = 0.2f, s.mean_abs = 0.008f;
        break;
      case an::ProbeKind::kWeight:
        s.count = 64, s.mean = 0.0f, s.std = 0.15f, s.min = -0.4f, s.max = 0.4f, s.l2 = 1.2f, s.mean_abs = 0.12f;
        break;
      case an::ProbeKind::kParamGrad:
        s.count = 64, s.std = float(0.02 * wobble), s.min = -0.06f, s.max = 0.06f, s.l2 = 0.16f, s.mean_abs = 0.015f;
        break;
      case an::ProbeKind::kUpdate:
        s.count = 64, s.l2 = 1.2e-3f, s.mean = 1e-3f;
        break;
      case an::ProbeKind::kFeature:  // a spread attention / a normalising LayerNorm
        s.count = 32, s.mean = 0.9f, s.min = 0.7f, s.max = 0.99f, s.std = 0.05f;
        break;
      default:  // recurrent and embedding probes: built by their own tests (sequence_probes_test)
        break;
    }
    return s;
  }
  size_t find(an::ProbeKind kind, int layer, bool activation) const {
    size_t found = std::numeric_limits<size_t>::max();
    for (size_t k = 0; k < probes_.size(); ++k) {
      const an::Probe& p = probes_[k];
      if (p.kind != kind || p.layer != layer) continue;
      if (kind == an::ProbeKind::kForward || kind == an::ProbeKind::kGradient) {
        const bool is_act = p.op.role == "activation";
        if (is_act == activation || found == std::numeric_limits<size_t>::max()) found = k;
        if (is_act == activation) return k;
      } else {
        return k;  // the weight (first parameter) of the layer
      }
    }
    return found;
  }

  std::vector<LayerSpec> layers_;
  std::map<std::string, std::string> config_;
  int64_t batches_ = 10;
  std::vector<an::Probe> probes_;
};

}  // namespace dl::test
