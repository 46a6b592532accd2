// The parameter side of ProbeRecorder (runtime/probes.h): which iterations reduce the
// parameters in full, their statistics from the rules' loops (chunk_sums) or the
// optimizer's chunks (on_chunk), the records merged in part order or carried
// (after_update), and the previous record's parameters reduced after the fact when a
// forward value turns NaN/Inf.
#include <cmath>

#include "runtime/probes.h"
#include "runtime/probes_params.h"

namespace dl::rt {

namespace {
an::TensorStats carry(an::TensorStats s) {
  s.flags |= an::TensorStats::kCarried;
  return s;
}
// A parameter's weight or gradient record: no mean |x| or zeros (stats::add_param_chunk;
// the exact path of a chunk holding NaN/Inf, or a pass of reduce_stats, took them).
an::TensorStats moments(an::TensorStats s) {
  s.mean_abs = s.zero_frac = 0;
  s.flags |= an::TensorStats::kNoMagnitudes;
  return s;
}
}  // namespace

// A forward value of this iteration turned non-finite: if the parameters the previous
// iteration left (its new weights; its gradients, until this iteration's backward pass)
// hold NaN/Inf, they replace what that iteration's record carried. Only when that record
// is the previous iteration. (A rare path: reduced twice rather than buffered.)
void ProbeRecorder::reduce_previous_params() {
  const size_t r = trace_.records.size();
  if (!last_carried_ || !last_graph_ || last_recorded_ != iteration_ - 1 || r < 2 ||
      trace_.records[r - 2].iteration != last_recorded_)
    return;
  last_carried_ = false;
  auto& params = last_graph_->params();
  const size_t n = std::min(params.size(), weight_probe_.size());
  bool broken = false;
  for (size_t k = 0; k < n && !broken; ++k)
    broken = !reduce_stats(*params[k].value, nullptr, nullptr).finite() ||
             !reduce_stats(*params[k].grad, nullptr, nullptr).finite();
  if (!broken) return;
  for (size_t k = 0; k < n; ++k) {
    const size_t w = size_t(weight_probe_[k]);
    an::TensorStats& weight = trace_.at(r - 2, w);
    weight = moments(reduce_stats(*params[k].value, nullptr, nullptr));
    trace_.at(r - 2, w + 1) = moments(reduce_stats(*params[k].grad, nullptr, nullptr));
    if (weight.finite()) continue;  // its update stays carried: finite, size unknown
    // The weights were finite before that update (they gave finite outputs): the
    // change is non-finite exactly where the new weights are.
    an::TensorStats u;
    u.count = weight.count;
    u.nan = weight.nan;
    u.inf = weight.inf;
    u.l2 = u.mean = NAN;
    trace_.at(r - 2, w + 2) = u;
  }
}

bool ProbeRecorder::full_iteration(const IterationInfo& info) const {
  const int64_t period = period_;
  if (full_every_ == 1 || !have_full_ || info.iteration < kFirstFull * period ||
      info.iteration % (full_every_ * period) == 0 ||
      (info.batches > 0 && info.batch + 1 == info.batches) || !std::isfinite(info.loss) || nonfinite_)
    return true;
  for (size_t i = 0; i < step_probes_.size(); ++i) {
    if (moved(rms(current_[step_probes_[i]]), step_rms_[i])) return true;
  }
  return false;
}

// Decided here (every listener gets before_update), after the backward pass: this
// iteration's loss and step statistics are known.
void ProbeRecorder::before_update(const ExecutionGraph&, const IterationInfo& info) {
  reduce_pending();
  flush_waits();
  if (!grad_waiting_.empty()) resolve_grad_waits(0, true);
  full_ = current_ && full_iteration(info);
  // (after_update clears the parts it merges: only an update that never finished, an
  // optimizer error, leaves some behind.)
  if (full_ && parts_dirty_)
    for (size_t k = 0; k < weight_probe_.size(); ++k)
      for (ParamState::Part& part : params_[k].parts) part = ParamState::Part{};
  parts_dirty_ = full_;
}

Optimizer::UpdateObserver* ProbeRecorder::update_observer(const IterationInfo&) { return full_ ? this : nullptr; }

// Runs on an optimizer thread right after it updated the chunk, which is in L1.
void ProbeRecorder::on_chunk(size_t param, int64_t part, int64_t offset, const float* grad, const float* before,
                             const float* after, int64_t n) {
  if (param >= weight_probe_.size()) return;
  ParamState::Part& p = params_[param].parts[part];
  p.seen = true;
  stats::add_param_chunk(grad, before, after, n, p.sums);
  RowState& rows = rows_[param];
  if (rows.probe < 0) return;
  for (int64_t k = 0; k < n; ++k)
    if (!(before[k] == after[k])) {  // NaN counts as a change
      const size_t row = size_t((offset + k) / rows.width);
      rows.changed[row] = rows.ever[row] = 1;
    }
}

// The statistics alone, taken by the rule: not for an embedding table, whose changed
// rows on_chunk marks from the old and new values.
stats::ParamSums* ProbeRecorder::chunk_sums(size_t param, int64_t part) {
  if (param >= weight_probe_.size() || rows_[param].probe >= 0) return nullptr;
  ParamState::Part& p = params_[param].parts[part];
  p.seen = true;
  return &p.sums;
}

// An embedding table's changed rows are marked from every part: its parts in turn.
bool ProbeRecorder::concurrent_parts(size_t param) const { return param >= rows_.size() || rows_[param].probe < 0; }

void ProbeRecorder::after_update(const ExecutionGraph& graph, const IterationInfo& info) {
  trace_.add_loss(info.iteration, float(info.loss), float(info.metric));
  if (!current_) return;
  trace_.records.back().loss = float(info.loss);
  trace_.records.back().metric = float(info.metric);
  auto& params = const_cast<ExecutionGraph&>(graph).params();
  last_graph_ = &const_cast<ExecutionGraph&>(graph);
  last_recorded_ = info.iteration;
  last_carried_ = !full_;
  for (size_t k = 0; k < params.size() && k < weight_probe_.size(); ++k) {
    an::TensorStats* out = current_ + weight_probe_[k];  // weight, param_grad, update
    an::TensorStats* last = &param_last_[3 * k];
    if (!full_) {  // (no observer saw this update: its parts were not touched)
      record_rows(k, false);
      for (int j = 0; j < 3; ++j) out[j] = carry(last[j]);
      continue;
    }
    ParamState& p = params_[k];
    stats::Sums weight, grad;
    stats::UpdateSums update;
    bool seen = false;
    const int64_t parts = elementwise_parts(param_numel_[k]);  // (the optimizer's parts)
    for (int64_t j = 0; j < parts; ++j) {  // in part order: the same sums for any thread count
      ParamState::Part& part = p.parts[j];
      if (!part.seen) continue;
      seen = true;
      weight.merge(part.sums.weight);
      grad.merge(part.sums.grad);
      update.sq += part.sums.update.sq;
      update.nonfinite += part.sums.update.nonfinite;
      part = ParamState::Part{};
    }
    record_rows(k, seen);
    const int64_t n = param_numel_[k];
    an::TensorStats u;
    u.count = static_cast<uint32_t>(std::min<int64_t>(n, UINT32_MAX));
    if (seen) {
      out[0] = moments(stats::finish(weight, n));
      out[1] = moments(stats::finish(grad, n));
      const double sq = update.sq, wn = out[0].l2;
      u.l2 = float(std::sqrt(sq));
      u.mean = float(wn > 0 ? std::sqrt(sq) / wn : (sq > 0 ? INFINITY : 0.0));
      u.nan = update.nonfinite;
    } else {
      // The optimizer showed the update to another observer: the gradient (unchanged
      // by the update) and the new weights are still here; the change is not.
      out[0] = moments(reduce_stats(*params[k].value, nullptr, nullptr));
      out[1] = moments(reduce_stats(*params[k].grad, nullptr, nullptr));
    }
    out[2] = u;
    for (int j = 0; j < 3; ++j) last[j] = out[j];
  }
  parts_dirty_ = false;
  if (full_) {
    have_full_ = true;
    for (size_t i = 0; i < step_probes_.size(); ++i) step_rms_[i] = float(rms(current_[step_probes_[i]]));
  }
}

}  // namespace dl::rt
