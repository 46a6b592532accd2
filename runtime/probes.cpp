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
// makes the sums (or min/max) non-finite, and only then is the chunk reduced again on
// the exact scalar path that counts them. So the common, finite case costs a few vector
// instructions per 16 values and no branches.
typedef float F16 __attribute__((vector_size(64)));
typedef int32_t I16 __attribute__((vector_size(64)));

inline F16 load16(const float* p) {
  F16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
#if defined(__clang__)
inline F16 vmin(F16 a, F16 b) {
  const I16 m = a < b;
  return (F16)(((I16)a & m) | ((I16)b & ~m));
}
inline F16 vmax(F16 a, F16 b) {
  const I16 m = a > b;
  return (F16)(((I16)a & m) | ((I16)b & ~m));
}
#else
inline F16 vmin(F16 a, F16 b) { return a < b ? a : b; }
inline F16 vmax(F16 a, F16 b) { return a > b ? a : b; }
#endif
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

// Which bands to count: the op's dead zone (values <= dead_at) and saturation bands.
struct Bands {
  bool dead = false, sat = false;
  float dead_at = 0, sat_lo = 0, sat_hi = 0;
};

// Running sums over chunks of one tensor.
struct Sums {
  double sum = 0, sumsq = 0, sumabs = 0;
  float mn = INFINITY, mx = -INFINITY;
  int64_t zeros = 0, dead = 0, sat = 0;
  uint32_t nan = 0, inf = 0;

  void merge(const Sums& o) {
    sum += o.sum, sumsq += o.sumsq, sumabs += o.sumabs;
    mn = std::min(mn, o.mn), mx = std::max(mx, o.mx);
    zeros += o.zeros, dead += o.dead, sat += o.sat;
    nan += o.nan, inf += o.inf;
  }
  bool finite() const {
    return std::isfinite(sum) && std::isfinite(sumsq) && std::isfinite(sumabs) && std::isfinite(mn) &&
           std::isfinite(mx);
  }
};

template <bool kDead, bool kSat>
Sums fast_sums(const float* x, int64_t n, const Bands& b) {
  constexpr int64_t kBlock = 4096;
  const I16 abs_mask = I16{} + 0x7fffffff;
  const F16 zero = F16{}, dead_v = F16{} + b.dead_at, lo_v = F16{} + b.sat_lo, hi_v = F16{} + b.sat_hi;
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
      mn0 = vmin(u, mn0), mn1 = vmin(v, mn1);
      mx0 = vmax(u, mx0), mx1 = vmax(v, mx1);
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
  const F16 mn = vmin(mn0, mn1), mx = vmax(mx0, mx1);
  for (int j = 0; j < 16; ++j) out.mn = std::min(out.mn, mn[j]), out.mx = std::max(out.mx, mx[j]);
  for (; k < n; ++k) {
    const float v = x[k];
    out.sum += v;
    out.sumsq += double(v) * v;
    out.sumabs += std::fabs(v);
    out.mn = v < out.mn ? v : out.mn;
    out.mx = v > out.mx ? v : out.mx;
    out.zeros += v == 0.0f;
    if (kDead) out.dead += v <= b.dead_at;
    if (kSat) out.sat += (v <= b.sat_lo) | (v >= b.sat_hi);
  }
  return out;
}

// Exact path: counts NaN/Inf and reduces the finite values in double.
Sums exact_sums(const float* x, int64_t n, const Bands& b) {
  Sums r;
  for (int64_t k = 0; k < n; ++k) {
    const float v = x[k];
    if (std::isnan(v)) { ++r.nan; continue; }
    if (std::isinf(v)) { ++r.inf; continue; }
    r.mn = v < r.mn ? v : r.mn;
    r.mx = v > r.mx ? v : r.mx;
    r.sum += v;
    r.sumsq += double(v) * v;
    r.sumabs += std::fabs(v);
    r.zeros += v == 0.0f;
    if (b.dead) r.dead += v <= b.dead_at;
    if (b.sat) r.sat += (v <= b.sat_lo) | (v >= b.sat_hi);
  }
  return r;
}

// Adds n values to `total`: the fast path, or the exact one when the chunk is not finite
// (or a float lane sum overflowed).
void add_values(const float* x, int64_t n, const Bands& b, Sums& total) {
  Sums part = b.dead ? (b.sat ? fast_sums<true, true>(x, n, b) : fast_sums<true, false>(x, n, b))
                     : (b.sat ? fast_sums<false, true>(x, n, b) : fast_sums<false, false>(x, n, b));
  if (!part.finite()) part = exact_sums(x, n, b);
  total.merge(part);
}

an::TensorStats finish(const Sums& r, int64_t n) {
  an::TensorStats s;
  s.count = static_cast<uint32_t>(std::min<int64_t>(n, UINT32_MAX));
  if (n == 0) return s;
  const int64_t finite = n - r.nan - r.inf;
  s.nan = r.nan;
  s.inf = r.inf;
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
  return s;
}

// Fraction of units (axis 1) in the dead zone for every sample and position. `alive` is
// scratch of `units` bytes.
float dead_unit_fraction(const float* x, int64_t batch, int64_t units, int64_t inner, float dead_at,
                         std::vector<uint8_t>& alive) {
  alive.assign(static_cast<size_t>(units), 0);
  uint8_t* a = alive.data();
  if (inner == 1) {  // dense: branch-free over the units of each sample
    for (int64_t b = 0; b < batch; ++b) {
      const float* row = x + b * units;
      for (int64_t u = 0; u < units; ++u) a[u] |= row[u] > dead_at;
    }
  } else {
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t u = 0; u < units; ++u) {
        if (a[u]) continue;
        const float* p = x + (b * units + u) * inner;
        uint8_t any = 0;
        for (int64_t i = 0; i < inner; ++i) any |= p[i] > dead_at;
        a[u] = any;
      }
  }
  int64_t dead = 0;
  for (int64_t u = 0; u < units; ++u) dead += !a[u];
  return float(double(dead) / double(units));
}

}  // namespace

an::TensorStats reduce_stats(const Tensor& t, const an::OpDescription* desc, std::vector<uint8_t>* unit_flags) {
  const int64_t n = t.numel();
  if (n == 0 || t.dtype() != DType::kFloat32) {
    an::TensorStats s;
    s.count = static_cast<uint32_t>(std::min<int64_t>(n, UINT32_MAX));
    return s;
  }
  Bands b;
  b.dead = desc && desc->has_dead_zone;
  b.sat = desc && desc->saturates && std::isfinite(desc->out_lo) && std::isfinite(desc->out_hi);
  if (b.sat) {
    b.sat_lo = float(desc->out_lo + 1e-3 * (desc->out_hi - desc->out_lo));
    b.sat_hi = float(desc->out_hi - 1e-3 * (desc->out_hi - desc->out_lo));
  }
  if (b.dead) b.dead_at = float(desc->out_lo);
  Sums r;
  add_values(t.f(), n, b, r);
  an::TensorStats s = finish(r, n);
  if (b.dead && unit_flags && t.rank() >= 2 && r.dead > 0) {
    const int64_t batch = t.dim(0), units = t.dim(1), inner = n / std::max<int64_t>(batch * units, 1);
    s.dead_units = dead_unit_fraction(t.f(), batch, units, inner, b.dead_at, *unit_flags);
  }
  return s;
}

// Parameters are reduced in pieces of kPiece values (a whole number of optimizer chunks),
// one background task each; a parameter's pieces are merged in order.
constexpr int64_t kPiece = 8 * int64_t(Optimizer::kChunk);

// One probe's reduction: the tensor, its bands and per-unit scratch (sized for the probe
// at construction, so concurrent jobs never share scratch and never allocate).
struct ProbeRecorder::TensorJob {
  const Tensor* tensor = nullptr;
  const an::OpDescription* desc = nullptr;
  std::vector<uint8_t> unit_flags;
  an::TensorStats* out = nullptr;
};

// One piece of a parameter: its gradient and updated values.
struct ProbeRecorder::ParamJob {
  const float* grad = nullptr;
  const float* weight = nullptr;
  int64_t n = 0;
  Sums grad_sums, weight_sums;
};

// Statistics of one parameter's update, gathered chunk by chunk by the optimizer.
struct ProbeRecorder::ParamSums {
  double update_sq = 0;
  uint32_t update_nonfinite = 0;
  bool seen = false;
};

ProbeRecorder::ProbeRecorder(const ExecutionGraph& graph, an::Trace& trace) : trace_(trace) {
  auto& probes = trace_.header.probes;
  const auto& steps = graph.steps();
  forward_probe_.assign(steps.size(), -1);
  gradient_probe_.assign(steps.size(), -1);
  std::vector<int64_t> units;  // per probe: unit axis size of a forward probe with a dead zone
  for (size_t k = 0; k < steps.size(); ++k) {
    const Step& st = steps[k];
    if (st.outputs.empty() || st.outputs[0] < 0) continue;
    const Tensor& out = graph.value(st.outputs[0]);
    if (out.dtype() != DType::kFloat32) continue;
    an::Probe p;
    p.kind = an::ProbeKind::kForward;
    p.layer = st.layer;
    p.step = static_cast<int>(k);
    p.node = st.node->name;
    p.op_type = st.node->op_type;
    p.op = describe(st.op->traits(), out.shape());
    forward_probe_[k] = static_cast<int>(probes.size());
    probes.push_back(p);
    units.resize(probes.size(), 0);
    units.back() = p.op.has_dead_zone && out.rank() >= 2 ? out.dim(1) : 0;
    if (st.bwd.dout.size() > 0 && st.bwd.dout[0]) {
      p.kind = an::ProbeKind::kGradient;
      gradient_probe_[k] = static_cast<int>(probes.size());
      probes.push_back(p);
    }
  }
  auto& params = const_cast<ExecutionGraph&>(graph).params();
  int layer_of_param = -1;
  int64_t jobs = 0;
  for (const Param& prm : params) {
    for (const Layer& l : graph.layers())
      for (const std::string& name : l.params)
        if (name == prm.name) layer_of_param = l.index;
    weight_probe_.push_back(static_cast<int>(probes.size()));
    param_numel_.push_back(prm.value->numel());
    first_job_.push_back(jobs);
    jobs += (prm.value->numel() + kPiece - 1) / kPiece;
    for (an::ProbeKind kind : {an::ProbeKind::kWeight, an::ProbeKind::kParamGrad, an::ProbeKind::kUpdate}) {
      an::Probe p;
      p.kind = kind;
      p.layer = layer_of_param;
      p.node = prm.name;
      probes.push_back(p);
    }
  }
  tensor_jobs_.reset(new TensorJob[probes.size() + 1]);
  for (size_t p = 0; p < units.size(); ++p) tensor_jobs_[p].unit_flags.reserve(static_cast<size_t>(units[p]));
  param_jobs_.reset(new ParamJob[size_t(jobs) + 1]);
  param_sums_.reset(new ParamSums[params.size() + 1]);
}

ProbeRecorder::~ProbeRecorder() = default;

void ProbeRecorder::on_batch_begin(const IterationInfo& info) {
  current_ = nullptr;
  if (!trace_.wants(info.iteration)) return;
  an::IterationRecord r;
  r.iteration = info.iteration;
  r.epoch = info.epoch;
  current_ = trace_.begin_record(r);
}

void ProbeRecorder::run_tensor_job(void* self, int64_t probe) {
  TensorJob& j = static_cast<ProbeRecorder*>(self)->tensor_jobs_[size_t(probe)];
  *j.out = reduce_stats(*j.tensor, j.desc, j.desc ? &j.unit_flags : nullptr);
}

void ProbeRecorder::reduce_tensor(int probe, const Tensor* t, bool with_bands) {
  TensorJob& j = tensor_jobs_[size_t(probe)];
  j.tensor = t;
  j.desc = with_bands ? &trace_.header.probes[size_t(probe)].op : nullptr;
  j.out = &current_[probe];
  run_tensor_job(this, probe);
}

void ProbeRecorder::on_forward(size_t step_index, const Step& step) {
  if (!current_ || forward_probe_[step_index] < 0) return;
  reduce_tensor(forward_probe_[step_index], step.fwd.out[0], true);
}

void ProbeRecorder::on_backward(size_t step_index, const Step& step) {
  if (!current_ || gradient_probe_[step_index] < 0 || !step.bwd.dout[0]) return;
  reduce_tensor(gradient_probe_[step_index], step.bwd.dout[0], false);
}

Optimizer::UpdateObserver* ProbeRecorder::update_observer(const IterationInfo&) {
  if (!current_) return nullptr;
  for (size_t k = 0; k < weight_probe_.size(); ++k) param_sums_[k] = ParamSums{};
  return this;
}

void ProbeRecorder::run_param_job(void* self, int64_t job) {
  ParamJob& j = static_cast<ProbeRecorder*>(self)->param_jobs_[size_t(job)];
  const Bands none;
  j.grad_sums = Sums{};
  j.weight_sums = Sums{};
  add_values(j.grad, j.n, none, j.grad_sums);
  add_values(j.weight, j.n, none, j.weight_sums);
}

// The change d = after - before is summed here, on the optimizer's thread, while the
// chunk's old values are at hand (float lanes; a chunk whose sum is not finite is redone
// in double, counting the non-finite differences). Gradient and weight statistics go to
// a background job per piece, once the piece's last chunk is updated.
void ProbeRecorder::on_chunk(size_t param, int64_t offset, const float* grad, const float* before, const float* after,
                             int64_t n) {
  if (param >= weight_probe_.size()) return;
  ParamSums& ps = param_sums_[param];
  ps.seen = true;
  F16 acc0 = F16{}, acc1 = F16{};
  int64_t k = 0;
  for (; k + 32 <= n; k += 32) {
    const F16 d0 = load16(after + k) - load16(before + k), d1 = load16(after + k + 16) - load16(before + k + 16);
    acc0 += d0 * d0, acc1 += d1 * d1;
  }
  double sq = lane_sum(acc0 + acc1);
  for (; k < n; ++k) {
    const float d = after[k] - before[k];
    sq += double(d) * d;
  }
  if (std::isfinite(sq)) {
    ps.update_sq += sq;
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const double d = double(after[i]) - double(before[i]);
      if (std::isfinite(d)) ps.update_sq += d * d;
      else ++ps.update_nonfinite;
    }
  }
  const int64_t end = offset + n, numel = param_numel_[param];
  if (end % kPiece != 0 && end != numel) return;
  const int64_t start = (end - 1) / kPiece * kPiece;
  const int64_t job = first_job_[param] + start / kPiece;
  ParamJob& j = param_jobs_[size_t(job)];
  j.grad = grad - (offset - start);
  j.weight = after - (offset - start);
  j.n = end - start;
  run_param_job(this, job);
}

void ProbeRecorder::after_update(const ExecutionGraph& graph, const IterationInfo& info) {
  trace_.add_loss(info.iteration, float(info.loss), float(info.metric));
  if (!current_) return;
  trace_.records.back().loss = float(info.loss);
  trace_.records.back().metric = float(info.metric);
  auto& params = const_cast<ExecutionGraph&>(graph).params();
  for (size_t k = 0; k < params.size() && k < weight_probe_.size(); ++k) {
    const ParamSums& ps = param_sums_[k];
    const int64_t n = param_numel_[k];
    an::TensorStats u;
    u.count = static_cast<uint32_t>(std::min<int64_t>(n, UINT32_MAX));
    if (ps.seen) {
      Sums weight, grad;
      const int64_t pieces = (n + kPiece - 1) / kPiece;
      for (int64_t j = 0; j < pieces; ++j) {
        weight.merge(param_jobs_[size_t(first_job_[k] + j)].weight_sums);
        grad.merge(param_jobs_[size_t(first_job_[k] + j)].grad_sums);
      }
      current_[weight_probe_[k]] = finish(weight, n);
      current_[weight_probe_[k] + 1] = finish(grad, n);
      u.l2 = float(std::sqrt(ps.update_sq));
      const double wn = current_[weight_probe_[k]].l2;
      u.mean = float(wn > 0 ? std::sqrt(ps.update_sq) / wn : (ps.update_sq > 0 ? INFINITY : 0.0));
      u.nan = ps.update_nonfinite;
    } else {
      // The optimizer showed the update to another observer: the gradient (unchanged
      // by the update) and the new weights are still here; the change is not.
      current_[weight_probe_[k]] = reduce_stats(*params[k].value, nullptr, nullptr);
      current_[weight_probe_[k] + 1] = reduce_stats(*params[k].grad, nullptr, nullptr);
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
