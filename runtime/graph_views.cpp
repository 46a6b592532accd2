// Views (ExecutionGraph::plan_views): a step whose output holds its input's values in the
// same order (Op::views_input: Reshape, Flatten, Squeeze, Unsqueeze, Identity, a Dropout
// of constant ratio 0) gets no buffer of its own. Its output reads and writes the input's
// storage (Tensor::view_of) and the executor skips its op, forward; where nothing else
// reads the input, the input's gradient is a view of the output's too, and backward skips
// it as well. Every value is written once per pass, by its one producer, so the view reads
// exactly what a copy would have held, the bits included; a viewed gradient holds the
// copy's values too, but its zeros keep their sign (the copy wrote 0 + dY: -0 became +0).
// Only values computed at run time are viewed: not a parameter (the store's storage, which
// fixes and other graphs share) nor a value known when planning (an initializer that
// BatchNormalization's running statistics may name: it writes those in place). The step
// stays: its layer, its probes and its records are as before (its probes take its input's
// sums, Op::copies_input, or make a pass of their own). A transformer's step spent 6% to
// 9% in these copies (bench/README.md, run 62).
#include "runtime/graph.h"

namespace dl::rt {
namespace {

// Gives back the storage of a value nothing writes or reads (a planned tensor of its shape
// without storage: plan() alone would keep the vector's capacity); its bytes.
int64_t release_unwritten(Tensor& t) {
  if (!t.allocated() || t.is_view()) return 0;
  const int64_t bytes = t.numel() * int64_t(t.dtype() == DType::kFloat32 ? sizeof(float) : sizeof(int64_t));
  Tensor unused;
  unused.plan(t.dtype(), Shape(t.shape()));
  t = std::move(unused);
  return bytes;
}

}  // namespace

void ExecutionGraph::plan_views(const std::vector<bool>& known_at_plan, const std::vector<bool>& is_param_source) {
  std::vector<int> reads(slot_ptr_.size(), 0);
  for (const Step& st : steps_)
    for (int s : st.inputs)
      if (s >= 0) ++reads[size_t(s)];
  std::vector<bool> is_output(slot_ptr_.size(), false);
  for (int s : output_slots_) is_output[size_t(s)] = true;
  grad_view_of_.assign(slot_ptr_.size(), -1);
  for (Step& st : steps_) {
    if (!st.op->views_input() || st.inputs.empty() || st.outputs.empty()) continue;
    const int in = st.inputs[0], out = st.outputs[0];
    if (in < 0 || out < 0 || known_at_plan[size_t(in)] || is_param_source[size_t(in)]) continue;
    // Skipping the op leaves its other outputs unwritten: only when nothing reads them.
    bool others_read = false;
    for (size_t k = 1; k < st.outputs.size(); ++k) {
      const int s = st.outputs[k];
      if (s >= 0 && (reads[size_t(s)] > 0 || is_output[size_t(s)])) others_read = true;
    }
    Tensor& x = *slot_ptr_[size_t(in)];
    Tensor& y = *slot_ptr_[size_t(out)];
    if (others_read || x.dtype() != DType::kFloat32 || y.dtype() != DType::kFloat32 || x.numel() != y.numel())
      continue;
    int64_t bytes = y.is_view() ? 0 : y.numel() * int64_t(sizeof(float));
    y.view_of(x);
    for (size_t k = 1; k < st.outputs.size(); ++k)  // (unread, never written: no buffer, no gradient)
      if (st.outputs[k] >= 0) {
        bytes += release_unwritten(*slot_ptr_[size_t(st.outputs[k])]);
        needs_grad_[size_t(st.outputs[k])] = false;
      }
    budget_->release(bytes);
    planned_bytes_ -= bytes;
    st.view = true;
    // The input's gradient is then all the output's: it may share its storage when this
    // step alone reads the input (no other step adds to that gradient, before or after).
    if (st.needs_backward && st.op->differentiable_input(0) && needs_grad_[size_t(in)] && needs_grad_[size_t(out)] &&
        reads[size_t(in)] == 1 && !is_output[size_t(in)]) {
      grad_view_of_[size_t(in)] = out;
      st.grad_view = true;
    }
  }
}

}  // namespace dl::rt
