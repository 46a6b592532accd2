// The graph's parameters and layers: initializers as runtime tensors, which of them are
// trainable (as Keras counts them), the ParamStore shared between graphs of one model,
// and the grouping of steps into user-level layers (ExecutionGraph::build_layers).
#include <algorithm>
#include <map>

#include "converter/errors.h"
#include "runtime/graph.h"
#include "runtime/graph_impl.h"
#include "runtime/param_roles.h"

namespace dl::rt {
namespace graph_detail {

DType runtime_dtype(ir::DType t, const std::string& what) {
  switch (t) {
    case ir::DType::kFloat32:
    case ir::DType::kFloat64:
      return DType::kFloat32;
    case ir::DType::kInt64:
    case ir::DType::kInt32:
      return DType::kInt64;
    case ir::DType::kBool:
      return DType::kBool;
    default:
      throw ModelError(what + ": element type " + ir::dtype_name(t) + " is not supported");
  }
}

Tensor tensor_from(const ir::TensorData& d) {
  DType t = runtime_dtype(d.dtype, "initializer '" + d.name + "'");
  if (t == DType::kFloat32) return Tensor::floats(d.dims, d.floats);
  return t == DType::kBool ? Tensor::bools(d.dims, d.ints) : Tensor::ints(d.dims, d.ints);
}

std::set<std::string> trainable_initializers(const ir::Graph& g, const std::vector<std::unique_ptr<Op>>& ops) {
  std::set<std::string> out;
  for (const auto& [name, p] : model_params(g, ops))
    if (p.trainable()) out.insert(name);
  return out;
}

}  // namespace graph_detail

std::shared_ptr<ParamStore> ParamStore::from_model(const ir::Model& model) {
  auto store = std::make_shared<ParamStore>();
  for (const auto& [name, data] : model.graph.initializers)
    if (data.dtype == ir::DType::kFloat32 || data.dtype == ir::DType::kFloat64)
      store->values.emplace(name, graph_detail::tensor_from(data));
  return store;
}

int64_t ParamStore::bytes() const {
  int64_t b = 0;
  for (const auto& [name, t] : values) b += t.numel() * int64_t(sizeof(float));
  return b;
}

int64_t initializer_bytes(const ir::Model& model) {
  int64_t b = 0;
  for (const auto& [name, d] : model.graph.initializers)
    b += int64_t(d.floats.size() * sizeof(float) + d.ints.size() * sizeof(int64_t));
  return b;
}

int layer_of_param(const std::vector<Layer>& layers, const std::string& name) {
  for (const Layer& l : layers)
    if (std::find(l.params.begin(), l.params.end(), name) != l.params.end()) return l.index;
  return -1;
}

void ExecutionGraph::build_layers() {
  layers_.clear();
  // The parameter a slot holds, directly or through a view of it: torch exports nn.Linear
  // on 3-D inputs as MatMul(x, Transpose(W)), so the Transpose is part of the layer that
  // multiplies by W, and that MatMul is the layer's parameterised node.
  // (and torch's LSTM export as Unsqueeze(Concat(Slice(W_ih), ...)) likewise).
  std::map<int, std::vector<const std::string*>> param_at;
  for (const Param& p : params_)
    for (size_t s = 0; s < slot_ptr_.size(); ++s)
      if (slot_ptr_[s] == p.value) param_at[static_cast<int>(s)] = {&p.name};
  auto params_of = [&](int slot) -> const std::vector<const std::string*>* {
    auto it = param_at.find(slot);
    return it == param_at.end() ? nullptr : &it->second;
  };
  auto param_of = [&](int slot) -> const std::string* {
    const auto* names = params_of(slot);
    return names ? names->front() : nullptr;
  };
  std::vector<bool> is_view(steps_.size(), false);
  for (size_t k = 0; k < steps_.size(); ++k) {
    const Step& st = steps_[k];
    const OpTraits t = st.op->traits();
    if (t.role != OpTraits::Role::kShape && !t.rearranges) continue;
    // A view: every differentiable input holds parameters.
    std::vector<const std::string*> names;
    bool all = true;
    for (size_t i = 0; i < st.inputs.size() && all; ++i) {
      if (st.inputs[i] < 0 || !st.op->differentiable_input(i)) continue;
      const auto* of = params_of(st.inputs[i]);
      all = of != nullptr;
      if (all)
        for (const std::string* n : *of)
          if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
    }
    if (!all || names.empty()) continue;
    is_view[k] = true;
    for (int o : st.outputs)
      if (o >= 0) param_at[o] = names;
  }
  // Steps outside the views, grouped: a parameterised step reading a parameter starts a
  // layer; steps before the first one join its layer.
  std::vector<int> layer_of(steps_.size(), -1);
  bool seen_anchor = false;
  for (size_t k = 0; k < steps_.size(); ++k) {
    if (is_view[k]) continue;
    const Step& st = steps_[k];
    bool anchor = false;
    if (st.op->traits().role == OpTraits::Role::kParameterized)
      for (int s : st.inputs) anchor = anchor || param_of(s) != nullptr;
    if (layers_.empty() || (anchor && seen_anchor)) {
      Layer l;
      l.index = static_cast<int>(layers_.size());
      l.anchor_step = k;
      layers_.push_back(l);
    } else if (anchor) {
      layers_.back().anchor_step = k;
    }
    seen_anchor = seen_anchor || anchor;
    layer_of[k] = layers_.back().index;
  }
  // A view joins the layer of the first step that reads it (views of views resolved
  // backwards, consumers come later in program order); one nobody reads stays put.
  for (size_t k = steps_.size(); k-- > 0;) {
    if (!is_view[k]) continue;
    for (size_t j = k + 1; j < steps_.size() && layer_of[k] < 0; ++j)
      for (int s : steps_[j].inputs)
        if (s >= 0 && std::find(steps_[k].outputs.begin(), steps_[k].outputs.end(), s) != steps_[k].outputs.end())
          layer_of[k] = layer_of[j];
  }
  std::map<size_t, std::vector<std::pair<size_t, const ir::Node*>>> placed;  // per layer: its nodes, by place
  for (size_t k = 0; k < steps_.size(); ++k) {
    if (layers_.empty()) {  // a program of views only
      Layer l;
      layers_.push_back(l);
    }
    if (layer_of[k] < 0) layer_of[k] = k ? layer_of[k - 1] : 0;
    Layer& l = layers_[static_cast<size_t>(layer_of[k])];
    steps_[k].layer = l.index;
    l.steps.push_back(k);
    // The nodes the step runs (a fused step's are the model's own: their index is their place).
    std::vector<std::pair<size_t, const ir::Node*>>& mine = placed[size_t(l.index)];
    const ir::Node* base = model_->graph.nodes.data();
    for (const ir::Node* n : steps_[k].merged_before) mine.push_back({size_t(n - base), n});
    mine.push_back({steps_[k].order, steps_[k].node});
    if (steps_[k].merged) mine.push_back({size_t(steps_[k].merged - base), steps_[k].merged});
    l.output_step = std::max(l.output_step, k);
    for (int s : steps_[k].inputs)
      if (const auto* names = params_of(s))
        for (const std::string* name : *names)
          if (std::find(l.params.begin(), l.params.end(), *name) == l.params.end()) l.params.push_back(*name);
  }
  // In program order (a Transpose folded into a later MatMul keeps its place).
  for (auto& [index, nodes] : placed) {
    std::stable_sort(nodes.begin(), nodes.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    Layer& l = layers_[index];
    for (const auto& [place, n] : nodes) l.nodes.push_back(n->name), l.op_types.push_back(n->op_type);
  }
}

}  // namespace dl::rt
