#include "runtime/probes.h"

#include <cmath>
#include <cstring>

namespace dl::rt {

an::OpDescription describe(const OpTraits& t, const Shape& shape) {
  an::OpDescription d;
  switch (t.role) {
    case OpTraits::Role::kParameterized: d.role = "parameterized"; break;
    case OpTraits::Role::kActivation: d.role = "activation"; break;
    case OpTraits::Role::kElementwise: d.role = "elementwise"; break;
    case OpTraits::Role::kShape: d.role = "shape"; break;
    default: d.role = "other"; break;
  }
  d.linear = t.linear;
  d.out_lo = t.out_lo;
  d.out_hi = t.out_hi;
  d.has_dead_zone = t.has_dead_zone;
  d.saturates = t.saturates;
  d.normalizes = t.normalizes;
  if (t.normalizes && !shape.empty()) {
    int64_t axis = t.normalized_axis < 0 ? t.normalized_axis + int64_t(shape.size()) : t.normalized_axis;
    d.units = axis >= 0 && axis < int64_t(shape.size()) ? shape[size_t(axis)] : 0;
  } else {
    d.units = shape.size() >= 2 ? shape[1] : (shape.empty() ? 1 : shape[0]);
  }
  return d;
}

an::TensorStats reduce_stats(const Tensor& t, const an::OpDescription* desc, std::vector<uint8_t>* unit_flags) {
  an::TensorStats s;
  const int64_t n = t.numel();
  s.count = static_cast<uint32_t>(std::min<int64_t>(n, UINT32_MAX));
  if (n == 0 || t.dtype() != DType::kFloat32) return s;
  const float* x = t.f();
  const bool dead_zone = desc && desc->has_dead_zone;
  const bool sat = desc && desc->saturates && std::isfinite(desc->out_lo) && std::isfinite(desc->out_hi);
  const float sat_lo = sat ? float(desc->out_lo + 1e-3 * (desc->out_hi - desc->out_lo)) : 0.f;
  const float sat_hi = sat ? float(desc->out_hi - 1e-3 * (desc->out_hi - desc->out_lo)) : 0.f;
  const float dead_at = dead_zone ? float(desc->out_lo) : 0.f;
  double sum = 0, sumsq = 0, sumabs = 0;
  float mn = INFINITY, mx = -INFINITY;
  uint32_t nan = 0, inf = 0;
  int64_t zeros = 0, dead = 0, satn = 0;
  for (int64_t k = 0; k < n; ++k) {
    const float v = x[k];
    if (std::isnan(v)) { ++nan; continue; }
    if (std::isinf(v)) { ++inf; continue; }
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
    sum += v;
    sumsq += double(v) * v;
    sumabs += std::fabs(v);
    zeros += v == 0.0f;
    if (dead_zone) dead += v <= dead_at;
    if (sat) satn += (v <= sat_lo) | (v >= sat_hi);
  }
  const int64_t finite = n - nan - inf;
  s.nan = nan;
  s.inf = inf;
  if (finite > 0) {
    s.min = mn;
    s.max = mx;
    const double mean = sum / double(finite);
    s.mean = float(mean);
    s.std = float(std::sqrt(std::max(0.0, sumsq / double(finite) - mean * mean)));
    s.mean_abs = float(sumabs / double(finite));
  }
  s.l2 = float(std::sqrt(sumsq));
  s.zero_frac = float(double(zeros) / double(n));
  s.dead_frac = float(double(dead) / double(n));
  s.sat_frac = float(double(satn) / double(n));
  // A unit (axis 1) is dead when it sits in the dead zone for every sample and position.
  if (dead_zone && unit_flags && t.rank() >= 2 && dead > 0) {
    const int64_t batch = t.dim(0), units = t.dim(1), inner = n / std::max<int64_t>(batch * units, 1);
    unit_flags->assign(static_cast<size_t>(units), 1);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t u = 0; u < units; ++u) {
        if (!(*unit_flags)[size_t(u)]) continue;
        const float* p = x + (b * units + u) * inner;
        for (int64_t i = 0; i < inner; ++i)
          if (!(p[i] <= dead_at)) { (*unit_flags)[size_t(u)] = 0; break; }
      }
    int64_t dead_units = 0;
    for (uint8_t f : *unit_flags) dead_units += f;
    s.dead_units = float(double(dead_units) / double(units));
  }
  return s;
}

ProbeRecorder::ProbeRecorder(const ExecutionGraph& graph, an::Trace& trace) : trace_(trace) {
  auto& probes = trace_.header.probes;
  const auto& steps = graph.steps();
  forward_probe_.assign(steps.size(), -1);
  gradient_probe_.assign(steps.size(), -1);
  int64_t widest = 1;
  for (size_t k = 0; k < steps.size(); ++k) {
    const Step& st = steps[k];
    if (st.outputs.empty() || st.outputs[0] < 0) continue;
    const Tensor& out = graph.value(st.outputs[0]);
    if (out.dtype() != DType::kFloat32) continue;
    if (out.rank() >= 2) widest = std::max(widest, out.dim(1));
    an::Probe p;
    p.kind = an::ProbeKind::kForward;
    p.layer = st.layer;
    p.step = static_cast<int>(k);
    p.node = st.node->name;
    p.op_type = st.node->op_type;
    p.op = describe(st.op->traits(), out.shape());
    forward_probe_[k] = static_cast<int>(probes.size());
    probes.push_back(p);
    if (st.bwd.dout.size() > 0 && st.bwd.dout[0]) {
      p.kind = an::ProbeKind::kGradient;
      gradient_probe_[k] = static_cast<int>(probes.size());
      probes.push_back(p);
    }
  }
  unit_flags_.reserve(static_cast<size_t>(widest));
  int layer_of_param = -1;
  for (const Param& prm : const_cast<ExecutionGraph&>(graph).params()) {
    for (const Layer& l : graph.layers())
      for (const std::string& name : l.params)
        if (name == prm.name) layer_of_param = l.index;
    weight_probe_.push_back(static_cast<int>(probes.size()));
    for (an::ProbeKind kind : {an::ProbeKind::kWeight, an::ProbeKind::kParamGrad, an::ProbeKind::kUpdate}) {
      an::Probe p;
      p.kind = kind;
      p.layer = layer_of_param;
      p.node = prm.name;
      probes.push_back(p);
    }
    previous_.emplace_back(static_cast<size_t>(prm.value->numel()));
  }
  weight_norm_before_.assign(weight_probe_.size(), 0.0);
}

void ProbeRecorder::on_batch_begin(const IterationInfo& info) {
  current_ = nullptr;
  if (!trace_.wants(info.iteration)) return;
  an::IterationRecord r;
  r.iteration = info.iteration;
  r.epoch = info.epoch;
  current_ = trace_.begin_record(r);
}

void ProbeRecorder::on_forward(size_t step_index, const Step& step) {
  if (!current_ || forward_probe_[step_index] < 0) return;
  const int p = forward_probe_[step_index];
  current_[p] = reduce_stats(*step.fwd.out[0], &trace_.header.probes[size_t(p)].op, &unit_flags_);
}

void ProbeRecorder::on_backward(size_t step_index, const Step& step) {
  if (!current_ || gradient_probe_[step_index] < 0 || !step.bwd.dout[0]) return;
  current_[gradient_probe_[step_index]] = reduce_stats(*step.bwd.dout[0], nullptr, nullptr);
}

void ProbeRecorder::before_update(const ExecutionGraph& graph, const IterationInfo&) {
  if (!current_) return;
  auto& params = const_cast<ExecutionGraph&>(graph).params();
  for (size_t k = 0; k < params.size() && k < weight_probe_.size(); ++k) {
    current_[weight_probe_[k] + 1] = reduce_stats(*params[k].grad, nullptr, nullptr);
    std::memcpy(previous_[k].data(), params[k].value->f(), previous_[k].size() * sizeof(float));
  }
}

void ProbeRecorder::after_update(const ExecutionGraph& graph, const IterationInfo& info) {
  trace_.add_loss(info.iteration, float(info.loss), float(info.metric));
  if (!current_) return;
  trace_.records.back().loss = float(info.loss);
  trace_.records.back().metric = float(info.metric);
  auto& params = const_cast<ExecutionGraph&>(graph).params();
  for (size_t k = 0; k < params.size() && k < weight_probe_.size(); ++k) {
    const Tensor& w = *params[k].value;
    current_[weight_probe_[k]] = reduce_stats(w, nullptr, nullptr);
    double dw2 = 0, nonfinite = 0;
    const float* now = w.f();
    const float* before = previous_[k].data();
    for (size_t i = 0; i < previous_[k].size(); ++i) {
      const double d = double(now[i]) - double(before[i]);
      if (std::isfinite(d)) dw2 += d * d; else nonfinite += 1;
    }
    an::TensorStats u;
    u.count = static_cast<uint32_t>(previous_[k].size());
    u.l2 = float(std::sqrt(dw2));
    const double wn = current_[weight_probe_[k]].l2;
    u.mean = float(wn > 0 ? std::sqrt(dw2) / wn : (dw2 > 0 ? INFINITY : 0.0));
    u.nan = static_cast<uint32_t>(nonfinite);
    current_[weight_probe_[k] + 2] = u;
  }
}

void ProbeRecorder::on_epoch_end(const EpochSummary& s) {
  an::EpochRecord e;
  e.epoch = s.epoch;
  e.loss = s.loss;
  e.metric = s.metric;
  e.has_validation = s.has_validation;
  e.val_loss = s.val_loss;
  e.val_metric = s.val_metric;
  trace_.add_epoch(e);
}

}  // namespace dl::rt
