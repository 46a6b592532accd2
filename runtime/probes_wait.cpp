// Waits: a step output that no op reported as it ran and that only later steps read
// whole, by copying it (Op::copies_input: Reshape, Transpose, ...), or in parts that
// partition it (Op::selects_box: attention's in-projection read by the Slices of its
// queries, keys and values), is recorded from those steps' sums once they are reduced:
// the same values (up to the grouping of the sums), so the same moments and extremes,
// without a pass of the probe's own over it. Backward, the gradient of an output Slices
// partition holds their output gradients' values: its record takes their sums
// (parts_grad_sums, through copy_grad_sums), and its op reports no dY (the in-projection's
// bias gradient loop). Part of ProbeRecorder (runtime/probes.h).
//
// No step value is overwritten within an iteration (each has a buffer of its own, or is a
// view of one, runtime/graph_views.cpp, written once per pass by its producer), so an
// output that waits is still in memory when its wait ends: if a reader's sums do not
// serve (a Dropout that dropped values is no copy; NaN/Inf; the iteration turned full
// since the output began to wait), or the forward pass ends first, it is reduced by a
// pass of its own then, as it would have been before. Its drift test runs then too: the
// steps in between have been reduced light (each with a drift test of its own).
#include <limits>
#include <unordered_map>

#include "runtime/probes.h"

namespace dl::rt {
namespace {

// Whether the boxes [begin, end) partition a tensor of shape `shape`: pairwise disjoint
// (two boxes are disjoint when their ranges on some axis are) and together as many
// elements as it has (each box lies within the tensor: a Slice clamps its ranges).
bool partition(const std::vector<Shape>& begin, const std::vector<Shape>& end, const Shape& shape) {
  int64_t total = 0;
  for (size_t a = 0; a < begin.size(); ++a) {
    int64_t volume = 1;
    for (size_t d = 0; d < shape.size(); ++d) volume *= end[a][d] - begin[a][d];
    if (volume == 0) return false;  // (an empty piece: nothing to wait for)
    total += volume;
    for (size_t b = 0; b < a; ++b) {
      bool apart = false;
      for (size_t d = 0; d < shape.size() && !apart; ++d)
        apart = end[a][d] <= begin[b][d] || end[b][d] <= begin[a][d];
      if (!apart) return false;
    }
  }
  return total == shape_numel(shape);
}

}  // namespace

void ProbeRecorder::declare_waits(const ExecutionGraph& graph) {
  const auto& steps = graph.steps();
  std::unordered_map<int, std::vector<size_t>> readers;  // value slot -> the steps reading it (once per input)
  std::unordered_map<int, int> outputs;                   // value slot -> times it is a model output
  for (const std::string& name : graph.output_names()) ++outputs[graph.slot_of(name)];
  for (size_t k = 0; k < steps.size(); ++k)
    for (int v : steps[k].inputs)
      if (v >= 0) readers[v].push_back(k);
  wait_on_.assign(steps.size(), {});
  grad_parts_.assign(steps.size(), {});
  wait_copy_op_.assign(steps.size(), nullptr);
  planned_steps_ = &steps;
  waiting_.assign(steps.size(), std::numeric_limits<int64_t>::min());
  wait_left_.assign(steps.size(), 0);
  wait_tensor_.assign(steps.size(), nullptr);
  waiter_.assign(trace_.header.probes.size(), -1);
  for (size_t j = 0; j < steps.size(); ++j) {
    if (forward_probe_[j] < 0) continue;
    const int v = steps[j].outputs[0];
    const auto it = readers.find(v);
    if (outputs.count(v) || it == readers.end()) continue;
    const std::vector<size_t>& by = it->second;
    // Every reader reads it once, as its data input (in[0]), and has a forward probe.
    bool ok = true;
    for (size_t r = 0; r < by.size() && ok; ++r)
      ok = by[r] > j && forward_probe_[by[r]] >= 0 && steps[by[r]].inputs[0] == v && (r == 0 || by[r] != by[r - 1]);
    if (!ok) continue;
    const Shape& shape = graph.value(v).shape();
    std::vector<Shape> begin(by.size()), end(by.size());
    bool boxes = true;
    for (size_t r = 0; r < by.size() && boxes; ++r) boxes = steps[by[r]].op->selects_box(begin[r], end[r]);
    if (boxes && partition(begin, end, shape)) {
      for (size_t k : by) wait_on_[j].push_back(forward_probe_[k]);
      // Backward, each adds its dY into its box of this output's gradient (zeroed first:
      // no Slice assigns it), which so holds their values.
      bool grads = gradient_probe_[j] >= 0;
      for (size_t k : by) grads = grads && gradient_probe_[k] >= 0;
      if (grads)
        for (size_t k : by) grad_parts_[j].push_back(gradient_probe_[k]);
    } else if (by.size() == 1 && steps[by[0]].op->copies_input() &&
               graph.value(steps[by[0]].outputs[0]).numel() == graph.value(v).numel()) {
      // (A copy as planned; whether it copied is asked again once it ran: a Dropout.)
      wait_on_[j].push_back(forward_probe_[by[0]]);
      wait_copy_op_[j] = steps[by[0]].op.get();
    } else {
      continue;
    }
    for (int p : wait_on_[j]) waiter_[size_t(p)] = int(j);
  }
}

// On the step's forward pass, when no op reported its output whole: waits for its
// readers' records when it may (its sums are then theirs), at iterations that reduce it
// to moments and extremes only, in the graph the waits were planned for (a last, smaller
// batch runs another graph, where Slices clamped to other ranges need not partition and
// the readers' ops, asked here and in resolve(), are others).
bool ProbeRecorder::wait(size_t step_index, const Step& step) {
  const int probe = forward_probe_[step_index];
  if (!fused_ || wait_on_[step_index].empty() || !moments_only(probe) || &step != &(*planned_steps_)[step_index] ||
      step.fwd.out[0]->dtype() != DType::kFloat32)
    return false;
  // (A copy as planned that did not copy last time, a Dropout in training, will not now:
  // waiting would only make the pass of its own later, the tensor out of cache.)
  if (wait_copy_op_[step_index] && !wait_copy_op_[step_index]->copies_input()) return false;
  waiting_[step_index] = iteration_;
  wait_left_[step_index] = int(wait_on_[step_index].size());
  wait_tensor_[step_index] = step.fwd.out[0];
  waits_.push_back(step_index);
  return true;
}

// After `probe`'s reduction (its sums kept for this iteration): ends the wait of the step
// waiting on it, when it was the last of its readers.
void ProbeRecorder::resolve(int probe) {
  const int w = waiter_[size_t(probe)];
  if (w < 0 || waiting_[size_t(w)] != iteration_ || --wait_left_[size_t(w)] > 0) return;
  const size_t j = size_t(w);
  waiting_[j] = std::numeric_limits<int64_t>::min();
  const int mine = forward_probe_[j];
  const Tensor* t = wait_tensor_[j];
  // The readers' sums, merged in program order, when each serves and they cover it.
  stats::Sums total;
  int64_t count = 0;
  bool serve = !wait_copy_op_[j] || wait_copy_op_[j]->copies_input();
  for (size_t r = 0; r < wait_on_[j].size() && serve; ++r) {
    const size_t slot = size_t(step_slot_[size_t(wait_on_[j][r])]);
    const stats::Sums* s = kept_sums(wait_on_[j][r], mine, true, slot_count_[slot]);
    serve = s != nullptr;
    if (serve) total.merge(*s), count += slot_count_[slot];
  }
  reduce_sums(mine, t, true, serve && count == t->numel() ? &total : nullptr);
}

// The outputs still waiting when the forward pass ended (a reader reduced in no way that
// ends the wait): a pass of their own each.
void ProbeRecorder::flush_waits() {
  for (size_t j : waits_)
    if (waiting_[j] == iteration_) {
      waiting_[j] = std::numeric_limits<int64_t>::min();
      reduce_sums(forward_probe_[j], wait_tensor_[j], true, nullptr);
    }
  waits_.clear();
}

// The output gradient of a step whose output Slices partition: their output gradients'
// sums, merged in program order, when each was recorded this iteration with sums that
// serve and they cover it (in the graph the partition was planned for), else null.
const stats::Sums* ProbeRecorder::parts_grad_sums(size_t step_index, const Tensor& grad) const {
  const std::vector<int>& parts = grad_parts_[step_index];
  if (parts.empty() || !fused_ || &grad != (*planned_steps_)[step_index].bwd.dout[0]) return nullptr;
  stats::Sums total;
  int64_t count = 0;
  for (int p : parts) {
    const size_t slot = size_t(step_slot_[size_t(p)]);
    const stats::Sums* s = kept_sums(p, gradient_probe_[step_index], false, slot_count_[slot]);
    if (!s) return nullptr;
    total.merge(*s);
    count += slot_count_[slot];
  }
  if (count != grad.numel()) return nullptr;
  grad_merged_ = total;
  return &grad_merged_;
}

}  // namespace dl::rt
