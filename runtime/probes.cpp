#include "runtime/probes.h"
#include "runtime/probes_params.h"

#include "runtime/parallel.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace dl::rt {

// Parameter values cost about half as much per value as step outputs (no bands, no
// per-unit pass): measured on MLP 784-256-128-10, batch 64, full parameter statistics
// every iteration cost ~7% of a step and the step statistics ~2% for 7x more values.
// So parameters are reduced every k-th iteration, k the smallest power of two (up to
// kFullEvery) that keeps them under a quarter of the cost of the step statistics, and
// at every iteration when they total under kAlwaysFull values (~10 us or less).
int64_t ProbeRecorder::full_every_for(int64_t step_values, int64_t param_values) {
  if (param_values <= kAlwaysFull) return 1;
  const double want = 2.0 * double(param_values) / double(std::max<int64_t>(step_values, 1));
  int64_t k = 1;
  while (k < kFullEvery && double(k) < want) k *= 2;
  return k;
}

ProbeRecorder::ProbeRecorder(const ExecutionGraph& graph, an::Trace& trace) : trace_(trace) {
  auto& probes = trace_.header.probes;
  const auto& steps = graph.steps();
  forward_probe_.assign(steps.size(), -1);
  gradient_probe_.assign(steps.size(), -1);
  size_t widest_units = 0;  // of a forward probe with a dead zone
  int64_t step_values = 0, param_values = 0;
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
    step_probes_.push_back(forward_probe_[k]);
    step_values += out.numel();
    probes.push_back(p);
    if (p.op.has_dead_zone && out.rank() >= 2) widest_units = std::max(widest_units, size_t(out.dim(1)));
    if (st.bwd.dout.size() > 0 && st.bwd.dout[0]) {
      p.kind = an::ProbeKind::kGradient;
      gradient_probe_[k] = static_cast<int>(probes.size());
      step_probes_.push_back(gradient_probe_[k]);
      step_values += out.numel();
      probes.push_back(p);
    }
  }
  declare_features(graph);
  auto& params = const_cast<ExecutionGraph&>(graph).params();
  for (const Param& prm : params) {
    const int layer = layer_of_param(graph.layers(), prm.name);
    weight_probe_.push_back(static_cast<int>(probes.size()));
    param_numel_.push_back(prm.value->numel());
    param_values += 3 * prm.value->numel();  // weight, gradient, update
    for (an::ProbeKind kind : {an::ProbeKind::kWeight, an::ProbeKind::kParamGrad, an::ProbeKind::kUpdate}) {
      an::Probe p;
      p.kind = kind;
      p.layer = layer;
      p.node = prm.name;
      probes.push_back(p);
    }
  }
  declare_inner_probes(graph);
  // A step whose op reports its input (Op::reports_input: an activation with vector
  // loops, a binary op, Softmax, Dropout) reduces, at
  // light iterations, the output of the step right before it when it reads that (in[0])
  // in its own loop, unless that step reports its output itself (Op::reports_output).
  in_probe_.assign(steps.size(), -1);
  deferred_.assign(steps.size(), 0);
  for (size_t k = 0; k < steps.size(); ++k) {
    const Step& st = steps[k];
    const size_t in = st.op->reported_input();
    if (forward_probe_[k] < 0 || st.view || !st.op->reports_input() || st.inputs.size() <= in || st.inputs[in] < 0) continue;
    const size_t j = k - 1;  // only the step right before: nothing is reduced in between
    if (k > 0 && forward_probe_[j] >= 0 && steps[j].outputs[0] == st.inputs[in] && !steps[j].op->reports_output()) {
      in_probe_[k] = forward_probe_[j];
      deferred_[j] = 1;
    }
  }
  probe_bands_.resize(probes.size());
  for (size_t i = 0; i < probes.size(); ++i) probe_bands_[i] = stats::Bands::of(&probes[i].op);
  declare_masked(graph);
  step_rms_.assign(step_probes_.size(), 0.0f);
  step_slot_.assign(probes.size(), -1);
  for (size_t i = 0; i < step_probes_.size(); ++i) step_slot_[size_t(step_probes_[i])] = int(i);
  declare_plain(graph);
  step_last_.assign(step_probes_.size(), an::TensorStats{});
  step_full_rms_.assign(step_probes_.size(), 0.0f);
  step_has_full_.assign(step_probes_.size(), 0);
  own_passes_.assign(step_probes_.size(), 0);
  declare_copies(graph);
  declare_waits(graph);
  din_step_.assign(steps.size(), -1);
  din_done_.assign(steps.size(), std::numeric_limits<int64_t>::min());
  for (size_t j = 0; j < steps.size(); ++j) {
    const int k = grad_copy_[j];  // the step that alone reads j's output
    if (k >= 0 && grad_copy_in_[j] == 0 && steps[size_t(k)].op->reports_input_gradient() &&
        !steps[j].op->sums_output_gradient())  // (else the producer's backward sums it at less cost)
      din_step_[size_t(k)] = int(j);
  }
  grad_wait_.assign(steps.size(), -1);
  for (size_t p = 0; p < steps.size(); ++p) {
    const int v = grad_copy_[p];  // the step that alone reads p's output
    if (v >= 0 && grad_copy_in_[p] == 0 && steps[size_t(v)].grad_view && steps[p].needs_backward &&
        grad_copy_op_[p]->passes_gradient(0))
      grad_wait_[size_t(v)] = int(p);
  }
  step_values_ = step_values;
  step_full_every_ = step_values <= kAlwaysFull ? 1 : kStepFullEvery;
  full_every_ = param_values <= kAlwaysFull ? 1 : std::max(full_every_for(step_values, param_values), step_full_every_);
  unit_flags_.reserve(widest_units);
  params_.reset(new ParamState[params.size() + 1]);
  param_last_.assign(3 * (params.size() + 1), an::TensorStats{});
}

ProbeRecorder::~ProbeRecorder() = default;

void ProbeRecorder::on_batch_begin(const IterationInfo& info) {
  current_ = nullptr;
  din_sink_probe_ = -1;
  grad_waiting_.clear();
  waits_.clear();
  full_ = false;
  nonfinite_ = false;
  iteration_ = info.iteration;
  if (!trace_.wants(info.iteration)) return;
  // The recording period this iteration was admitted under (begin_record may decimate
  // and double the stride).
  period_ = trace_.stride() * trace_.probe_every();
  an::IterationRecord r;
  r.iteration = info.iteration;
  r.epoch = info.epoch;
  current_ = trace_.begin_record(r);
  step_full_ = step_full_every_ == 1 || info.iteration < kFirstFull * period_ ||
               info.iteration % (step_full_every_ * period_) == 0 || (info.batches > 0 && info.batch + 1 == info.batches);
}

// Plain step probes: neither a dead zone nor saturation bands to count (a gradient probe
// never has them), no mask, and not of the output layer (whose output gradient's exact
// zeros the analysis reads: loss_activation_mismatch) nor writing a model output.
void ProbeRecorder::declare_plain(const ExecutionGraph& graph) {
  const auto& steps = graph.steps();
  const int output_layer = static_cast<int>(graph.layers().size()) - 1;
  std::vector<uint8_t> writes_output(steps.size(), 0);
  for (const std::string& name : graph.output_names()) {
    const int slot = graph.slot_of(name);
    for (size_t k = 0; k < steps.size(); ++k)
      if (!steps[k].outputs.empty() && steps[k].outputs[0] == slot) writes_output[k] = 1;
  }
  plain_.assign(step_probes_.size(), 0);
  for (size_t k = 0; k < steps.size(); ++k) {
    if (steps[k].layer == output_layer || writes_output[k]) continue;
    if (forward_probe_[k] >= 0) {
      const stats::Bands& b = probe_bands_[size_t(forward_probe_[k])];
      plain_[size_t(step_slot_[size_t(forward_probe_[k])])] = !b.dead && !b.sat && !b.masked;
    }
    if (gradient_probe_[k] >= 0) plain_[size_t(step_slot_[size_t(gradient_probe_[k])])] = 1;
  }
}

ValueSink* ProbeRecorder::forward_sink(size_t step_index) {
  if (!fused_ || !current_ || forward_probe_[step_index] < 0) return nullptr;
  if (join_sums(step_index, nullptr)) return nullptr;  // its inputs' sums make its record (on_forward)
  if (deferred_[step_index] && moments_only(forward_probe_[step_index])) return nullptr;  // the next step reports it
  sink_probe_ = forward_probe_[step_index];
  sink_.reset(bands(sink_probe_, true));
  return &sink_;
}

ValueSink* ProbeRecorder::forward_in_sink(size_t step_index) {
  if (!fused_ || !current_ || in_probe_[step_index] < 0 || in_probe_[step_index] != pending_probe_) return nullptr;
  in_sink_probe_ = pending_probe_;
  in_sink_.reset(bands(in_sink_probe_, true));
  return &in_sink_;
}

ValueSink* ProbeRecorder::backward_in_sink(size_t step_index) {
  const int j = din_step_[step_index];
  if (!fused_ || !current_ || j < 0 || !moments_only(gradient_probe_[size_t(j)])) return nullptr;
  din_sink_probe_ = gradient_probe_[size_t(j)];
  din_sink_step_ = step_index;
  din_sink_.reset(bands(din_sink_probe_, false));
  return &din_sink_;
}

ValueSink* ProbeRecorder::backward_sink(size_t step_index, const Step& step) {
  if (!fused_ || !current_ || gradient_probe_[step_index] < 0) return nullptr;
  if (din_recorded(step_index)) return nullptr;  // the step that read the output reported it
  if (step.grad_view) return nullptr;  // (its backward runs no op: grad_wait_)
  // A copy's reader that passed its gradient on (copy_grad_sums): on_backward takes that
  // reader's sums, so a report would be a pass for nothing (shufflenet_v2's channel
  // shuffles: Reshape and Transpose, bench/README.md run 51).
  if (!step.bwd.dout.empty() && step.bwd.dout[0] && copy_grad_sums(step_index, *step.bwd.dout[0])) return nullptr;
  sink_probe_ = gradient_probe_[step_index];
  sink_.reset(bands(sink_probe_, false));
  return &sink_;
}

const SinkSums* ProbeRecorder::take_sink(int probe) {
  const bool mine = sink_probe_ == probe;
  sink_probe_ = -1;
  return mine ? &sink_ : nullptr;
}

// A deferred output (the next step reports it) is reduced there, or before the update
// if that step never came.
void ProbeRecorder::reduce_pending() {
  if (pending_probe_ < 0) return;
  const int probe = pending_probe_;
  pending_probe_ = -1;
  const SinkSums* sink = in_sink_probe_ == probe ? &in_sink_ : nullptr;
  in_sink_probe_ = -1;
  reduce_tensor(probe, pending_tensor_, true, sink);
}

void ProbeRecorder::on_forward(size_t step_index, const Step& step) {
  // (Two steps ahead: the next step's sinks are set up before its op runs.)
  if (step_index + 2 < forward_probe_.size()) prefetch_probe(forward_probe_[step_index + 2]);
  if (current_) reduce_feature(step_index);
  record_inner(step_index);
  if (!current_ || forward_probe_[step_index] < 0) return;
  const int probe = forward_probe_[step_index];
  if (in_probe_[step_index] >= 0 && in_probe_[step_index] == pending_probe_) {
    // The op reported the input its own graph chose (Op::reported_input): a smaller last
    // batch runs another graph, where a broadcast input can have the output's size too
    // (an Add of a [1, S, D] constant and a [1, S, D] batch reports the constant). Its
    // sums count only when that input is the pending tensor.
    const size_t in = step.op->reported_input();
    if (in_sink_probe_ == pending_probe_ && (in >= step.fwd.in.size() || step.fwd.in[in] != pending_tensor_))
      in_sink_probe_ = -1;
    reduce_pending();
  }
  if (const stats::Sums* r = join_sums(step_index, &step)) {
    sink_probe_ = -1;
    reduce_sums(probe, step.fwd.out[0], true, r);
    return;
  }
  if (deferred_[step_index] && moments_only(probe)) {
    reduce_pending();
    pending_probe_ = probe;
    pending_tensor_ = step.fwd.out[0];
    sink_probe_ = -1;
    return;
  }
  if (const stats::Sums* r = copy_sums(step_index, step)) {
    sink_probe_ = -1;
    reduce_sums(probe, step.fwd.out[0], true, r);
    return;
  }
  // An output no op reported may wait for its readers' records (runtime/probes_wait.cpp).
  const SinkSums* sink = take_sink(probe);
  if (!sink_serves(sink, step.fwd.out[0]->numel(), probe) && wait(step_index, step)) return;
  reduce_tensor(probe, step.fwd.out[0], true, sink);
}

void ProbeRecorder::on_backward(size_t step_index, const Step& step) {
  if (step_index > 1) prefetch_probe(gradient_probe_[step_index - 2]);
  reduce_pending();
  flush_waits();
  if (!grad_waiting_.empty()) resolve_grad_waits(step_index + 1, false);  // (steps that did not come)
  reduce_gradient(step_index, step);
  if (!grad_waiting_.empty()) resolve_grad_waits(step_index, false);
}

void ProbeRecorder::resolve_grad_waits(size_t from, bool all) {
  size_t kept = 0;
  for (const GradWait& w : grad_waiting_) {
    if (!all && w.for_step < from) {
      grad_waiting_[kept++] = w;
      continue;
    }
    // (A step passed without its record: no sums kept this iteration, a pass of its own.)
    const int source = gradient_probe_[w.for_step];
    reduce_sums(w.probe, w.tensor, false, fused_ ? kept_sums(source, w.probe, false, w.tensor->numel()) : nullptr);
  }
  grad_waiting_.resize(kept);
}

void ProbeRecorder::reduce_gradient(size_t step_index, const Step& step) {
  // What this step reported of its input gradient, when it is all of it, is the record
  // of its producer's output gradient: final now (this step alone reads that output).
  if (din_sink_probe_ >= 0 && din_sink_step_ == step_index) {
    const int probe = din_sink_probe_;
    din_sink_probe_ = -1;
    const Tensor* din = step.bwd.din.empty() ? nullptr : step.bwd.din[0];
    if (din && din_sink_.reported() == din->numel() && din_sink_.light() == moments_only(probe)) {
      reduce_tensor(probe, din, false, &din_sink_);
      din_done_[size_t(din_step_[step_index])] = iteration_;
    }
  }
  if (!current_ || gradient_probe_[step_index] < 0 || !step.bwd.dout[0]) return;
  const int probe = gradient_probe_[step_index];
  if (din_recorded(step_index)) {
    sink_probe_ = -1;
    return;
  }
  if (const stats::Sums* r = copy_grad_sums(step_index, *step.bwd.dout[0])) {
    sink_probe_ = -1;
    reduce_sums(probe, step.bwd.dout[0], false, r);
    return;
  }
  if (grad_wait_[step_index] >= 0 && step.grad_view && fused_) {
    // Waits for its producer's record (grad_wait_), and so do the records waiting for this one.
    const size_t p = size_t(grad_wait_[step_index]);
    for (GradWait& w : grad_waiting_)
      if (w.for_step == step_index) w.for_step = p;
    grad_waiting_.push_back({probe, step.bwd.dout[0], p});
    sink_probe_ = -1;
    return;
  }
  reduce_tensor(probe, step.bwd.dout[0], false, take_sink(probe));
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
