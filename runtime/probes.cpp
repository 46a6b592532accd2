#include "runtime/probes.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
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

namespace {

// The one-pass reduction, vectorised with GCC/Clang vector types: 2 x 16 float lanes
// per statistic (independent chains), summed in float within blocks of kBlock values
// and in double across blocks. NaN and Inf are not counted here: a non-finite value
// makes the sums (or min/max) non-finite, and only then does the caller take the exact
// scalar path that counts them. So the common, finite case costs a few vector
// instructions per 16 values and no branches.
typedef float F16 __attribute__((vector_size(64)));
typedef int32_t I16 __attribute__((vector_size(64)));

struct Sums {
  double sum = 0, sumsq = 0, sumabs = 0;
  float mn = INFINITY, mx = -INFINITY;
  int64_t zeros = 0, dead = 0, sat = 0;
};

inline F16 load16(const float* p) {
  F16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline F16 select(I16 m, F16 a, F16 b) { return (F16)(((I16)a & m) | ((I16)b & ~m)); }
inline double lane_sum(F16 v) {
  double s = 0;
  for (int j = 0; j < 16; ++j) s += double(v[j]);
  return s;
}
inline int64_t lane_sum(I16 v) {
  int64_t s = 0;
  for (int j = 0; j < 16; ++j) s += v[j];
  return s;
}

template <bool kDead, bool kSat>
Sums fast_sums(const float* x, int64_t n, float dead_at, float sat_lo, float sat_hi) {
  constexpr int64_t kBlock = 4096;
  const I16 abs_mask = I16{} + 0x7fffffff;
  const F16 zero = F16{}, dead_v = F16{} + dead_at, lo_v = F16{} + sat_lo, hi_v = F16{} + sat_hi;
  F16 mn0 = F16{} + INFINITY, mn1 = mn0, mx0 = F16{} - INFINITY, mx1 = mx0;
  Sums out;
  int64_t k = 0;
  const int64_t vec_end = n - n % 32;
  while (k < vec_end) {
    const int64_t block_end = std::min(vec_end, k + kBlock);
    F16 s0 = zero, s1 = zero, q0 = zero, q1 = zero, a0 = zero, a1 = zero;
    I16 z0 = I16{}, z1 = I16{}, d0 = I16{}, d1 = I16{}, t0 = I16{}, t1 = I16{};
    for (; k < block_end; k += 32) {
      const F16 u = load16(x + k), v = load16(x + k + 16);
      s0 += u, s1 += v;
      q0 += u * u, q1 += v * v;
      a0 += (F16)((I16)u & abs_mask), a1 += (F16)((I16)v & abs_mask);
      mn0 = select(u < mn0, u, mn0), mn1 = select(v < mn1, v, mn1);
      mx0 = select(u > mx0, u, mx0), mx1 = select(v > mx1, v, mx1);
      z0 -= (u == zero), z1 -= (v == zero);  // comparisons give -1 per true lane
      if (kDead) d0 -= (u <= dead_v), d1 -= (v <= dead_v);
      if (kSat) t0 -= ((u <= lo_v) | (u >= hi_v)), t1 -= ((v <= lo_v) | (v >= hi_v));
    }
    out.sum += lane_sum(s0 + s1);
    out.sumsq += lane_sum(q0 + q1);
    out.sumabs += lane_sum(a0 + a1);
    out.zeros += lane_sum(z0 + z1);
    if (kDead) out.dead += lane_sum(d0 + d1);
    if (kSat) out.sat += lane_sum(t0 + t1);
  }
  for (int j = 0; j < 16; ++j) {
    out.mn = std::min(out.mn, std::min(mn0[j], mn1[j]));
    out.mx = std::max(out.mx, std::max(mx0[j], mx1[j]));
  }
  for (; k < n; ++k) {
    const float v = x[k];
    out.sum += v;
    out.sumsq += double(v) * v;
    out.sumabs += std::fabs(v);
    out.mn = v < out.mn ? v : out.mn;
    out.mx = v > out.mx ? v : out.mx;
    out.zeros += v == 0.0f;
    if (kDead) out.dead += v <= dead_at;
    if (kSat) out.sat += (v <= sat_lo) | (v >= sat_hi);
  }
  return out;
}

bool all_finite(const Sums& s) {
  return std::isfinite(s.sum) && std::isfinite(s.sumsq) && std::isfinite(s.sumabs) && std::isfinite(s.mn) &&
         std::isfinite(s.mx);
}

}  // namespace

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
  Sums r = dead_zone ? (sat ? fast_sums<true, true>(x, n, dead_at, sat_lo, sat_hi)
                            : fast_sums<true, false>(x, n, dead_at, sat_lo, sat_hi))
                     : (sat ? fast_sums<false, true>(x, n, dead_at, sat_lo, sat_hi)
                            : fast_sums<false, false>(x, n, dead_at, sat_lo, sat_hi));
  uint32_t nan = 0, inf = 0;
  if (!all_finite(r)) {
    // Exact path: NaN/Inf present (or a float lane sum overflowed): count them and
    // reduce the finite values in double.
    r = Sums{};
    for (int64_t k = 0; k < n; ++k) {
      const float v = x[k];
      if (std::isnan(v)) { ++nan; continue; }
      if (std::isinf(v)) { ++inf; continue; }
      r.mn = v < r.mn ? v : r.mn;
      r.mx = v > r.mx ? v : r.mx;
      r.sum += v;
      r.sumsq += double(v) * v;
      r.sumabs += std::fabs(v);
      r.zeros += v == 0.0f;
      if (dead_zone) r.dead += v <= dead_at;
      if (sat) r.sat += (v <= sat_lo) | (v >= sat_hi);
    }
  }
  const int64_t finite = n - nan - inf;
  s.nan = nan;
  s.inf = inf;
  if (finite > 0) {
    s.min = r.mn;
    s.max = r.mx;
    const double mean = r.sum / double(finite);
    s.mean = float(mean);
    s.std = float(std::sqrt(std::max(0.0, r.sumsq / double(finite) - mean * mean)));
    s.mean_abs = float(r.sumabs / double(finite));
  }
  s.l2 = float(std::sqrt(r.sumsq));
  s.zero_frac = float(double(r.zeros) / double(n));
  s.dead_frac = float(double(r.dead) / double(n));
  s.sat_frac = float(double(r.sat) / double(n));
  // A unit (axis 1) is dead when it sits in the dead zone for every sample and position.
  if (dead_zone && unit_flags && t.rank() >= 2 && r.dead > 0) {
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
  }
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

bool ProbeRecorder::wants_update_norms(const IterationInfo& info) { return trace_.wants(info.iteration); }

void ProbeRecorder::before_update(const ExecutionGraph& graph, const IterationInfo&) {
  if (!current_) return;
  auto& params = const_cast<ExecutionGraph&>(graph).params();
  for (size_t k = 0; k < params.size() && k < weight_probe_.size(); ++k)
    current_[weight_probe_[k] + 1] = reduce_stats(*params[k].grad, nullptr, nullptr);
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
    // The change of this update, measured by the optimizer while it wrote the weights.
    an::TensorStats u;
    u.count = static_cast<uint32_t>(std::min<int64_t>(w.numel(), UINT32_MAX));
    if (info.update_norms && k < info.update_norms->size()) {
      const double dw2 = (*info.update_norms)[k].squared;
      u.l2 = float(std::sqrt(dw2));
      const double wn = current_[weight_probe_[k]].l2;
      u.mean = float(wn > 0 ? std::sqrt(dw2) / wn : (dw2 > 0 ? INFINITY : 0.0));
      u.nan = static_cast<uint32_t>((*info.update_norms)[k].nonfinite);
    }
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
