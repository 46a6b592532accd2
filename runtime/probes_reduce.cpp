// The reduction of a step probe's tensor (light or full, from an op's sums or a pass of
// its own), and the probes of copies (Op::copies_input: Reshape, Flatten, Squeeze,
// Unsqueeze, Identity, Transpose, a Dropout that dropped nothing): their output holds
// their input's values, so its reduction takes the sums of the input's, taken in the
// same iteration under bands that serve it (same_sums), instead of a pass of its own.
// Part of ProbeRecorder (runtime/probes.h).
#include <cmath>
#include <unordered_map>

#include "runtime/probes.h"

namespace dl::rt {
namespace {
// Whether sums taken under bands a serve a reduction under bands b: a light one (the
// moments and extremes only; a NaN/Inf turns the iteration full) takes those of any sums
// with the same mask (a full pass's moments are the light pass's, bit for bit:
// stats::fast_sums; an op's reports, up to the rounding of their grouping), a full one
// needs the same dead zone and saturation bands; masked sums (Bands::masked) left -inf out.
bool same_sums(const stats::Bands& a, const stats::Bands& b) {
  if (a.masked != b.masked) return false;
  if (b.light) return true;  // a full reduction's moments and extremes are a light one's
  if (a.light) return false;
  return a.dead == b.dead && a.sat == b.sat && a.nonneg == b.nonneg && (!a.dead || a.dead_at == b.dead_at) &&
         (!a.sat || (a.sat_lo == b.sat_lo && a.sat_hi == b.sat_hi));
}
}  // namespace

// Between two probes of an iteration the ops' work evicts the probes' per-probe state
// (its slot's last statistics and sums, its bands, its entry of the record): each probe
// missed on a handful of lines (shufflenet_v2, ~300 step probes an iteration: ~50 us a
// step in reduce_sums alone, bench/README.md run 29). Each probe's lines are fetched
// while the step before it runs (on_forward and on_backward ask two steps ahead).
void ProbeRecorder::prefetch_probe(int probe) const {
  if (probe < 0 || !current_) return;
  const int slot = step_slot_[size_t(probe)];
  const auto ahead = [](const void* p, size_t bytes) {
    const char* c = static_cast<const char*>(p);
    __builtin_prefetch(c);
    __builtin_prefetch(c + bytes - 1);
  };
  ahead(&current_[probe], sizeof(an::TensorStats));
  ahead(&probe_bands_[size_t(probe)], sizeof(stats::Bands));
  if (slot < 0) return;
  const size_t k = size_t(slot);
  ahead(&step_last_[k], sizeof(an::TensorStats));
  ahead(&slot_sums_[k], sizeof(stats::Sums));
  __builtin_prefetch(&slot_count_[k]);
  ahead(&slot_bands_[k], sizeof(stats::Bands));
  __builtin_prefetch(&slot_iteration_[k]);
  __builtin_prefetch(&step_full_rms_[k]);
  __builtin_prefetch(&step_has_full_[k]);
}

void ProbeRecorder::reduce_tensor(int probe, const Tensor* t, bool with_bands, const SinkSums* sink) {
  // An op reduced the whole tensor as it ran (ValueSink), or nothing of it; moments do
  // not do for a full reduction (the iteration turned full since the sink was set).
  const int64_t n = t->numel();
  if (sink_serves(sink, n, probe)) {
    const stats::Sums r = sink->total();
    reduce_sums(probe, t, with_bands, &r);
  } else {
    reduce_sums(probe, t, with_bands, nullptr);
  }
}

// Then ends the wait of a step output waiting on this record (runtime/probes_wait.cpp).
void ProbeRecorder::reduce_sums(int probe, const Tensor* t, bool with_bands, const stats::Sums* given) {
  reduce_sums_once(probe, t, with_bands, given);
  if (with_bands) resolve(probe);
}

void ProbeRecorder::reduce_sums_once(int probe, const Tensor* t, bool with_bands, const stats::Sums* given) {
  const an::OpDescription* desc = with_bands ? &trace_.header.probes[size_t(probe)].op : nullptr;
  an::TensorStats& out = current_[probe];
  const int64_t n = t->numel();
  bool reported = given != nullptr;
  const size_t slot = size_t(step_slot_[size_t(probe)]);
  const bool floats = n > 0 && t->dtype() == DType::kFloat32;
  const bool plain = plain_[slot] != 0;
  // Records what was reduced at this iteration for copies (copy_sums).
  const auto keep = [&](const stats::Sums& r) {
    slot_sums_[slot] = r;
    slot_count_[slot] = n;
    slot_bands_[slot] = bands(probe, with_bands);
    slot_iteration_[slot] = iteration_;
  };
  // This probe's last full reduction, the reference of its drift test and of what a light
  // record carries.
  const auto last_full = [&](const an::TensorStats& s) {
    step_last_[slot] = s;
    step_full_rms_[slot] = float(rms(s));
    step_has_full_[slot] = 1;
  };
  if (moments_only(probe) && floats) {
    stats::Sums r;
    if (reported) r = *given;
    else stats::add_values_parallel(t->f(), n, bands(probe, with_bands), r), ++own_passes_[slot];
    // Masked logits whose -inf an op's own sums could not leave out (ValueSink::add_sums
    // counts none): a pass of the probe's own that does.
    if (reported && with_bands && probe_bands_[size_t(probe)].masked && !stats::sums_finite(r)) {
      r = stats::Sums{};
      stats::add_values_parallel(t->f(), n, bands(probe, with_bands), r);
      ++own_passes_[slot];
    }
    // (Sums kept from a full reduction of a copy's input count more: not taken here.)
    r.sumabs = 0;
    r.zeros = r.dead = r.sat = 0;
    an::TensorStats s = stats::finish(r, n);
    // (Sums an op reported with add_sums count no NaN/Inf: they only make the sums non-finite.)
    const bool finite = s.finite() && std::isfinite(r.sum) && std::isfinite(r.sumsq);
    if (finite && plain) {  // complete: at a full iteration, or one its drift turns full
      s.flags |= an::TensorStats::kNoMagnitudes;
      if (!light(probe) || moved(rms(s), step_full_rms_[slot])) {
        step_full_ = true;
        last_full(s);
      }
      out = s;
      keep(r);
      return;
    }
    if (finite && !moved(rms(s), step_full_rms_[slot])) {
      const an::TensorStats& last = step_last_[slot];
      s.mean_abs = last.mean_abs;
      s.zero_frac = last.zero_frac;
      s.dead_frac = last.dead_frac;
      s.sat_frac = last.sat_frac;
      s.dead_units = last.dead_units;
      s.flags |= an::TensorStats::kFractionsCarried;
      out = s;
      keep(r);
      return;
    }
    // NaN/Inf, or a change of norm: this tensor again in full, and the rest of the iteration.
    step_full_ = true;
    reported = false;
  }
  if (floats) {
    stats::Sums r;
    if (reported) r = *given;
    else stats::add_values_parallel(t->f(), n, bands(probe, with_bands), r), ++own_passes_[slot];
    out = stats_of(*t, r, bands(probe, with_bands), desc ? &unit_flags_ : nullptr);
    if (plain) {  // (the exact path took them for chunks holding NaN/Inf only)
      out.mean_abs = out.zero_frac = 0;
      out.flags |= an::TensorStats::kNoMagnitudes;
    }
    keep(r);
  } else {
    out = reduce_stats(*t, desc, desc ? &unit_flags_ : nullptr);
  }
  last_full(out);
  if (!out.finite() && !nonfinite_) {
    nonfinite_ = true;
    if (with_bands) reduce_previous_params();
  }
}

void ProbeRecorder::declare_copies(const ExecutionGraph& graph) {
  const auto& steps = graph.steps();
  std::unordered_map<int, int> producer;  // value slot -> the step writing it, with a forward probe
  std::unordered_map<int, int> readers;   // value slot -> how many times steps and the outputs read it
  for (const std::string& name : graph.output_names()) ++readers[graph.slot_of(name)];
  for (const Step& st : steps)
    for (int v : st.inputs)
      if (v >= 0) ++readers[v];
  copy_source_.assign(steps.size(), -1);
  join_sources_.assign(steps.size(), {});
  grad_copy_.assign(steps.size(), -1);
  grad_copy_in_.assign(steps.size(), 0);
  grad_copy_op_.assign(steps.size(), nullptr);
  for (size_t k = 0; k < steps.size(); ++k) {
    const Step& st = steps[k];
    for (size_t i = 0; i < st.inputs.size(); ++i) {
      const auto it = st.inputs[i] >= 0 ? producer.find(st.inputs[i]) : producer.end();
      if (it == producer.end()) continue;
      const size_t j = size_t(it->second);
      if (i == 0 && forward_probe_[k] >= 0) copy_source_[k] = int(j);
      // j's output gradient is all from k's backward when k is its one reader.
      if (gradient_probe_[k] >= 0 && gradient_probe_[j] >= 0 && readers[st.inputs[i]] == 1) {
        grad_copy_[j] = int(k);
        grad_copy_in_[j] = i;
        grad_copy_op_[j] = st.op.get();
      }
    }
    if (forward_probe_[k] >= 0 && st.op->joins_inputs() && !st.inputs.empty()) {
      std::vector<int>& from = join_sources_[k];
      for (int v : st.inputs) {
        const auto it = v >= 0 ? producer.find(v) : producer.end();
        if (it == producer.end()) break;
        from.push_back(it->second);
      }
      if (from.size() != st.inputs.size()) from.clear();
    }
    if (forward_probe_[k] >= 0) producer[st.outputs[0]] = int(k);
  }
  slot_sums_.assign(step_probes_.size(), stats::Sums{});
  slot_count_.assign(step_probes_.size(), -1);
  slot_bands_.assign(step_probes_.size(), stats::Bands{});
  slot_iteration_.assign(step_probes_.size(), -1);
}

const stats::Sums* ProbeRecorder::kept_sums(int from, int probe, bool with_bands, int64_t count) const {
  const size_t slot = size_t(step_slot_[size_t(from)]);
  if (slot_iteration_[slot] != iteration_ || slot_count_[slot] != count ||
      !same_sums(slot_bands_[slot], bands(probe, with_bands)))
    return nullptr;
  return &slot_sums_[slot];
}

const stats::Sums* ProbeRecorder::copy_sums(size_t step_index, const Step& step) const {
  const int src = copy_source_[step_index];
  if (src < 0 || !fused_ || !step.op->copies_input()) return nullptr;
  const Tensor* in = step.fwd.in.empty() ? nullptr : step.fwd.in[0];
  if (!in || in->numel() != step.fwd.out[0]->numel() || in->dtype() != DType::kFloat32) return nullptr;
  return kept_sums(forward_probe_[size_t(src)], forward_probe_[step_index], true, in->numel());
}

const stats::Sums* ProbeRecorder::join_sums(size_t step_index, const Step* step) {
  const std::vector<int>& from = join_sources_[step_index];
  if (from.empty() || !fused_) return nullptr;
  const int probe = forward_probe_[step_index];
  stats::Sums merged;
  int64_t count = 0;
  for (size_t i = 0; i < from.size(); ++i) {
    const int src = forward_probe_[size_t(from[i])];
    // Before the op runs, whatever the source counted; after, exactly the input read.
    const Tensor* in = step ? step->fwd.in[i] : nullptr;
    if (in && in->dtype() != DType::kFloat32) return nullptr;
    const int64_t n = in ? in->numel() : slot_count_[size_t(step_slot_[size_t(src)])];
    const stats::Sums* s = kept_sums(src, probe, true, n);
    if (!s) return nullptr;
    merged.merge(*s);
    count += n;
  }
  if (step && (step->fwd.out[0]->dtype() != DType::kFloat32 || count != step->fwd.out[0]->numel())) return nullptr;
  join_merged_ = merged;
  return &join_merged_;
}

// The input gradient an op passed on unchanged (Op::passes_gradient) holds its dY's
// values (added once onto zeros: a -0 turns +0, which no statistic tells apart).
// The sums must cover as many values (the op asked is the main graph's: a last, smaller
// batch runs another graph, where an input could broadcast that does not here).
// Or, read by Slices that partition the output, their gradients' (parts_grad_sums).
const stats::Sums* ProbeRecorder::copy_grad_sums(size_t step_index, const Tensor& grad) const {
  const int k = grad_copy_[step_index];
  if (k < 0) return parts_grad_sums(step_index, grad);
  if (!fused_ || !grad_copy_op_[step_index]->passes_gradient(grad_copy_in_[step_index])) return nullptr;
  return kept_sums(gradient_probe_[size_t(k)], gradient_probe_[step_index], false, grad.numel());
}

}  // namespace dl::rt
