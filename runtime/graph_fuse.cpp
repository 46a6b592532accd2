// Fusing steps after planning (ExecutionGraph::fuse_bias_adds): a MatMul whose output only
// an Add of a trainable bias reads (torch's nn.Linear on a 3-D input, tf2onnx's Dense:
// MatMul then Add(bias)) runs as one step, the MatMul starting each product from the bias
// rows (runtime/ops/mat_mul.cpp), as Gemm does with its C. The Add's pass over the output,
// its backward pass and the probe of the value before the bias go away: the layer's linear
// map is probed once, after its bias, as a Gemm layer's is. The layer still lists both
// nodes (Step::merged), the Add right after the MatMul (steps between them, which read
// neither, stay where they were).
#include "converter/errors.h"
#include "runtime/graph.h"
#include "runtime/ops/fused.h"

namespace dl::rt {

void ExecutionGraph::fuse_bias_adds(const std::vector<bool>& is_param_source, bool training) {
  std::vector<int> reads(slot_ptr_.size(), 0), reader(slot_ptr_.size(), -1);
  for (size_t k = 0; k < steps_.size(); ++k)
    for (int s : steps_[k].inputs)
      if (s >= 0) ++reads[size_t(s)], reader[size_t(s)] = int(k);
  for (const ir::ValueInfo& out : model_->graph.outputs)
    if (auto it = slots_.find(out.name); it != slots_.end()) reads[size_t(it->second)] += 2;  // read outside
  std::vector<bool> dropped(steps_.size(), false);
  for (size_t k = 0; k < steps_.size(); ++k) {
    Step& mm = steps_[k];
    if (mm.op->type() != "MatMul" || mm.merged || mm.inputs.size() != 2 || mm.outputs.size() != 1) continue;
    const int y = mm.outputs[0];
    if (y < 0 || reads[size_t(y)] != 1 || mm.inputs[0] < 0 || mm.inputs[1] < 0) continue;
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
    std::unique_ptr<Op> op = make_mat_mul_with_bias(node, add.node->name);
    InferCtx ic;
    ic.training = training;
    for (int s : {mm.inputs[0], mm.inputs[1], c}) {
      ic.in.push_back(slot_ptr_[size_t(s)]);
      ic.known.push_back(false);
      ic.param.push_back(is_param_source[size_t(s)]);
    }
    ic.out = {&out};
    ic.out_known = {false};
    op->infer(ic);  // the Add's output shape again (checked above)
    out.allocate();
    // The value before the bias is no step's any more: its buffer goes back (a fresh
    // tensor of its shape, no storage: plan() alone would keep the vector's capacity).
    const int64_t bytes = pre.numel() * int64_t(sizeof(float));
    Tensor unused;
    unused.plan(pre.dtype(), Shape(pre.shape()));
    *slot_ptr_[size_t(y)] = std::move(unused);
    budget_->release(bytes);
    planned_bytes_ -= bytes;
    mm.op = std::move(op);
    mm.node = &node;
    mm.merged = add.node;
    mm.inputs.push_back(c);
    mm.outputs = add.outputs;
    dropped[size_t(reader[size_t(y)])] = true;
    reads[size_t(y)] = 0;
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
