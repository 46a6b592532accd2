// Fusing steps after planning (ExecutionGraph::fuse_linear_steps), around a MatMul
// (runtime/ops/mat_mul.cpp):
// - a Transpose that only the MatMul reads, as A or B, whose permutation keeps one of the
//   matrix's axes its input's last (torch's nn.Linear on a 3-D input exported in training
//   mode, MatMul(x, Transpose(W)); attention's keys, Transpose [1, 2, 0], and values,
//   [1, 0, 2]): the MatMul reads the Transpose's input in place and writes its gradient
//   at the same strides;
// - a Transpose that alone reads the product and keeps its last axis last (attention's
//   heads merged back, [1, 0, 2]): the MatMul writes its output in place;
// - else the Add of a trainable bias that alone reads the product (torch's nn.Linear on
//   a 3-D input, tf2onnx's Dense: MatMul then Add(bias)): the MatMul starts each product
//   from the bias rows, as Gemm does with its C.
// The copies (or the Add's pass over the output), their backward passes and their probes
// go away: a Transpose's output holds its input's values and a weight has its own probes;
// the layer's linear map is probed once, after its bias, as a Gemm layer's is. The layer
// still lists every node, in program order (Step::merged_before, Step::merged).
#include "converter/errors.h"
#include "runtime/attrs.h"
#include "runtime/graph.h"
#include "runtime/ops/fused.h"
#include "runtime/ops/mat_mul_layout.h"

namespace dl::rt {
namespace {

// A Transpose step's permutation of its float input (perm, or the default: axes reversed).
bool transpose_of(const Step& st, const std::vector<Tensor*>& slots, std::vector<int64_t>& perm) {
  if (st.op->type() != "Transpose" || st.inputs.size() != 1 || st.outputs.size() != 1 || st.inputs[0] < 0 ||
      st.outputs[0] < 0)
    return false;
  const Tensor& x = *slots[size_t(st.inputs[0])];
  if (x.dtype() != DType::kFloat32) return false;
  std::vector<int64_t> reversed(size_t(x.rank()));
  for (int64_t d = 0; d < x.rank(); ++d) reversed[size_t(d)] = x.rank() - 1 - d;
  Attrs attrs(*st.node);
  perm = attrs.ints("perm", reversed);
  for (int64_t& p : perm) p = p < 0 ? p + x.rank() : p;
  return int64_t(perm.size()) == x.rank();
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
  std::vector<int64_t> perm;
  for (size_t k = 0; k < steps_.size(); ++k) {
    Step& mm = steps_[k];
    if (mm.op->type() != "MatMul" || mm.node->inputs.size() != 2 || mm.inputs.size() != 2 ||
        mm.outputs.size() != 1 || mm.inputs[0] < 0 || mm.inputs[1] < 0 || mm.outputs[0] < 0)
      continue;
    ir::Node node = *mm.node;
    MatMulFusion f;
    std::vector<int> inputs = mm.inputs;
    const Step* folded[2] = {nullptr, nullptr};
    // A's and Y's Transposes only where the products have batches of B: else the MatMul
    // runs one product over all of A's rows, which a strided A or Y would cut into one per
    // batch, slower than the copy they save. B's batches are the batch's unless B is a
    // parameter (or a Transpose of one): decided from ranks and parameters, never from
    // sizes, so that the graphs of a run's batch sizes have the same steps (the probes
    // index them).
    const int wb = writer[size_t(mm.inputs[1])];
    const int b_source = wb >= 0 && steps_[size_t(wb)].op->type() == "Transpose" ? steps_[size_t(wb)].inputs[0] : mm.inputs[1];
    const bool batched = slot_ptr_[size_t(mm.inputs[1])]->rank() >= 3 && b_source >= 0 && !is_param_source[size_t(b_source)];
    for (size_t i : {size_t(1), size_t(0)}) {
      const int s = mm.inputs[i];
      if (i == 0 && !batched) break;
      const int tk = writer[size_t(s)];
      if (tk < 0 || dropped[size_t(tk)] || reads[size_t(s)] != 1 || mm.inputs[1 - i] == s) continue;
      const Step& tr = steps_[size_t(tk)];
      if (!transpose_of(tr, slot_ptr_, perm) || !mat_mul_detail::foldable(perm, int64_t(perm.size()))) continue;
      // Not when the other operand is the same tensor (X^T X): dA and dB, computed on
      // different threads, would add into one gradient.
      if (tr.inputs[0] == inputs[1 - i]) continue;
      (i == 0 ? f.perm_a : f.perm_b) = perm;
      (i == 0 ? f.transpose_a : f.transpose_b) = tr.node->name;
      node.inputs[i] = tr.node->inputs[0];
      inputs[i] = tr.inputs[0];
      folded[i] = &tr;
    }
    const int y = mm.outputs[0];
    int drop_after = -1;
    std::vector<int> outputs = mm.outputs;
    const Step* after = nullptr;
    const int64_t ra = slot_ptr_[size_t(inputs[0])]->rank(), rb = slot_ptr_[size_t(inputs[1])]->rank();
    if (reads[size_t(y)] == 1) {
      Step& next = steps_[size_t(reader[size_t(y)])];
      const int64_t ry = slot_ptr_[size_t(y)]->rank();
      if (batched && ra >= 2 && rb >= 2 && transpose_of(next, slot_ptr_, perm) && ry >= 2 && perm.back() == ry - 1) {
        // The product's Transpose, written in place.
        f.perm_y = perm;
        f.transpose_y = next.node->name;
        node.outputs = next.node->outputs;
        outputs = next.outputs;
        after = &next;
        drop_after = reader[size_t(y)];
      } else if (next.op->type() == "Add" && next.node->since_version >= 7 && next.inputs.size() == 2 &&
                 next.outputs.size() == 1 && next.outputs[0] >= 0) {
        // (An Add before opset 7 may broadcast along another axis: left alone.)
        const size_t ci = next.inputs[0] == y ? 1 : 0;
        const int c = next.inputs[ci];
        const Tensor& pre = *slot_ptr_[size_t(y)];
        if (c >= 0 && c != y && is_param_source[size_t(c)] && pre.rank() >= 2 && rb >= 2 &&
            slot_ptr_[size_t(c)]->dtype() == DType::kFloat32 && slot_ptr_[size_t(c)]->shape() == Shape{pre.dim(-1)} &&
            slot_ptr_[size_t(next.outputs[0])]->shape() == pre.shape()) {
          f.bias_add = next.node->name;
          node.inputs.push_back(next.node->inputs[ci]);
          node.outputs = next.node->outputs;
          inputs.push_back(c);
          outputs = next.outputs;
          after = &next;
          drop_after = reader[size_t(y)];
        }
      }
    }
    if (!folded[0] && !folded[1] && !after) continue;
    ir::Node& kept = fused_nodes_.emplace_back(std::move(node));
    std::unique_ptr<Op> op = make_mat_mul_fused(kept, f);
    InferCtx ic;
    ic.training = training;
    ic.max_bytes = budget_->remaining();
    ic.charge_buffer = [this, &kept](int64_t bytes, const std::string& what) {
      budget_->charge(bytes, "node '" + kept.name + "' (MatMul): " + what);
      planned_bytes_ += bytes;
    };
    for (int s : inputs) {
      ic.in.push_back(slot_ptr_[size_t(s)]);
      ic.known.push_back(false);
      ic.param.push_back(is_param_source[size_t(s)]);
    }
    Tensor& out = *slot_ptr_[size_t(outputs[0])];
    const Shape want = out.shape();
    ic.out = {&out};
    ic.out_known = {false};
    op->infer(ic);
    if (out.shape() != want)
      throw InternalError("node '" + mm.node->name + "': fused, its output " + shape_str(out.shape()) +
                          " is not the planned " + shape_str(want));
    out.allocate();
    for (size_t i = 0; i < 2; ++i)
      if (folded[i]) {
        mm.merged_before.push_back(folded[i]->node);
        const int t = mm.inputs[i];
        dropped[size_t(writer[size_t(t)])] = true;
        release(t);
      }
    if (mm.merged_before.size() == 2 && mm.merged_before[1] < mm.merged_before[0])
      std::swap(mm.merged_before[0], mm.merged_before[1]);
    if (after) {
      mm.merged = after->node;
      dropped[size_t(drop_after)] = true;
      release(y);
    }
    mm.op = std::move(op);
    mm.node = &kept;
    mm.inputs = inputs;
    mm.outputs = outputs;
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
