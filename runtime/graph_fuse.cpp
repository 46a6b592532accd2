// Fusing steps after planning (ExecutionGraph::fuse_linear_steps), around a MatMul:
// - the Transpose (perm [1, 0]) of a trainable matrix W that only this MatMul reads as B
//   (torch's nn.Linear on a 3-D input exported in training mode: MatMul(x, Transpose(W))):
//   the MatMul reads W itself as B = W^T and writes dW (runtime/ops/mat_mul.cpp). The
//   copy of W^T and of its gradient each step, and their probes, go away; the layer is
//   probed as a Gemm layer with transB is (its weight's probes are W's anyway).
// - the Add of a trainable bias that alone reads the MatMul's output (torch's nn.Linear
//   on a 3-D input, tf2onnx's Dense: MatMul then Add(bias)): the MatMul starts each
//   product from the bias rows, as Gemm does with its C. The Add's pass over the output,
//   its backward pass and the probe of the value before the bias go away: the layer's
//   linear map is probed once, after its bias, as a Gemm layer's is.
// The layer still lists every node (Step::merged_before, Step::merged), the Transpose
// before the MatMul and the Add right after it (steps between them, which read none of
// their values, stay where they were).
#include "converter/errors.h"
#include "runtime/attrs.h"
#include "runtime/graph.h"
#include "runtime/ops/fused.h"

namespace dl::rt {
namespace {

// Whether a Transpose node's perm is [1, 0] on a matrix (the default, reversed axes, or
// given).
bool swaps_matrix(const ir::Node& node, const Tensor& in) {
  if (in.rank() != 2) return false;
  Attrs attrs(node);
  const std::vector<int64_t> perm = attrs.ints("perm", {1, 0});
  return perm == std::vector<int64_t>{1, 0};
}

}  // namespace

void ExecutionGraph::fuse_linear_steps(const std::vector<bool>& is_param_source, bool training) {
  std::vector<int> reads(slot_ptr_.size(), 0), reader(slot_ptr_.size(), -1), writer(slot_ptr_.size(), -1);
  for (size_t k = 0; k < steps_.size(); ++k) {
    for (int s : steps_[k].inputs)
      if (s >= 0) ++reads[size_t(s)], reader[size_t(s)] = int(k);
    for (int s : steps_[k].outputs)
      if (s >= 0) writer[size_t(s)] = int(k);
  }
  for (const ir::ValueInfo& out : model_->graph.outputs)
    if (auto it = slots_.find(out.name); it != slots_.end()) reads[size_t(it->second)] += 2;  // read outside
  std::vector<bool> dropped(steps_.size(), false);
  // A value no step computes any more: its buffer goes back (a fresh tensor of its shape,
  // no storage: plan() alone would keep the vector's capacity).
  const auto release = [&](int slot) {
    Tensor& t = *slot_ptr_[size_t(slot)];
    const int64_t bytes = t.numel() * int64_t(sizeof(float));
    Tensor unused;
    unused.plan(t.dtype(), Shape(t.shape()));
    t = std::move(unused);
    budget_->release(bytes);
    planned_bytes_ -= bytes;
    reads[size_t(slot)] = 0;
  };
  // Replaces mm's op by a fused MatMul on `node` (a copy of its node with the fused inputs
  // and outputs) reading `inputs`, writing `out`.
  const auto refit = [&](Step& mm, ir::Node& node, const std::vector<int>& inputs, Tensor& out) {
    std::unique_ptr<Op> op = make_mat_mul_fused(node, mm.merged ? mm.merged->name : std::string(),
                                                mm.merged_before ? mm.merged_before->name : std::string());
    InferCtx ic;
    ic.training = training;
    for (int s : inputs) {
      ic.in.push_back(slot_ptr_[size_t(s)]);
      ic.known.push_back(false);
      ic.param.push_back(is_param_source[size_t(s)]);
    }
    ic.out = {&out};
    ic.out_known = {false};
    op->infer(ic);  // the output's shape again (checked by the callers)
    out.allocate();
    mm.op = std::move(op);
    mm.node = &node;
    mm.inputs = inputs;
  };
  for (size_t k = 0; k < steps_.size(); ++k) {
    Step& mm = steps_[k];
    if (mm.op->type() != "MatMul" || mm.merged || mm.merged_before || mm.inputs.size() != 2 ||
        mm.outputs.size() != 1 || mm.inputs[0] < 0 || mm.inputs[1] < 0 || mm.outputs[0] < 0)
      continue;
    // The weight's Transpose.
    const int wt = mm.inputs[1];
    const int tk = writer[size_t(wt)];
    if (tk >= 0 && !dropped[size_t(tk)] && reads[size_t(wt)] == 1 && wt != mm.inputs[0]) {
      const Step& tr = steps_[size_t(tk)];
      const int w = tr.inputs.empty() ? -1 : tr.inputs[0];
      if (tr.op->type() == "Transpose" && tr.inputs.size() == 1 && tr.outputs.size() == 1 && w >= 0 &&
          is_param_source[size_t(w)] && slot_ptr_[size_t(w)]->dtype() == DType::kFloat32 &&
          swaps_matrix(*tr.node, *slot_ptr_[size_t(w)])) {
        ir::Node& node = fused_nodes_.emplace_back(*mm.node);
        node.inputs[1] = tr.node->inputs[0];
        mm.merged_before = tr.node;
        refit(mm, node, {mm.inputs[0], w}, *slot_ptr_[size_t(mm.outputs[0])]);
        dropped[size_t(tk)] = true;
        release(wt);
      }
    }
    // The bias's Add.
    const int y = mm.outputs[0];
    if (reads[size_t(y)] != 1) continue;
    Step& add = steps_[size_t(reader[size_t(y)])];
    // (An Add before opset 7 may broadcast along another axis: left alone.)
    if (add.op->type() != "Add" || add.node->since_version < 7 || add.inputs.size() != 2 || add.outputs.size() != 1 ||
        add.outputs[0] < 0)
      continue;
    const size_t ci = add.inputs[0] == y ? 1 : 0;
    const int c = add.inputs[ci];
    if (c < 0 || c == y || !is_param_source[size_t(c)]) continue;
    const Tensor& pre = *slot_ptr_[size_t(y)];
    const Tensor& bias = *slot_ptr_[size_t(c)];
    Tensor& out = *slot_ptr_[size_t(add.outputs[0])];
    if (pre.rank() < 2 || slot_ptr_[size_t(mm.inputs[1])]->rank() < 2 || bias.dtype() != DType::kFloat32 ||
        bias.shape() != Shape{pre.dim(-1)} || out.shape() != pre.shape())
      continue;
    ir::Node& node = fused_nodes_.emplace_back(*mm.node);
    node.inputs.push_back(add.node->inputs[ci]);
    node.outputs = add.node->outputs;
    mm.merged = add.node;
    refit(mm, node, {mm.inputs[0], mm.inputs[1], c}, out);
    mm.outputs = add.outputs;
    dropped[size_t(reader[size_t(y)])] = true;
    release(y);
  }
  size_t kept = 0;
  for (size_t k = 0; k < steps_.size(); ++k) {
    if (dropped[k]) continue;
    if (kept != k) steps_[kept] = std::move(steps_[k]);  // (not onto itself: that empties its vectors)
    ++kept;
  }
  steps_.erase(steps_.begin() + std::ptrdiff_t(kept), steps_.end());
}

}  // namespace dl::rt
