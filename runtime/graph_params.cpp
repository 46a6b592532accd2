// The graph's parameters and layers: initializers as runtime tensors, which of them are
// trainable (as Keras counts them), the ParamStore shared between graphs of one model,
// and the grouping of steps into user-level layers (ExecutionGraph::build_layers).
#include <algorithm>

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
  auto param_name = [&](int slot) -> const std::string* {
    if (slot < 0) return nullptr;
    for (const Param& p : params_)
      if (p.value == slot_ptr_[static_cast<size_t>(slot)]) return &p.name;
    return nullptr;
  };
  bool seen_anchor = false;
  for (size_t k = 0; k < steps_.size(); ++k) {
    const Step& st = steps_[k];
    bool anchor = false;
    if (st.op->traits().role == OpTraits::Role::kParameterized)
      for (int s : st.inputs) anchor = anchor || param_name(s) != nullptr;
    if (layers_.empty() || (anchor && seen_anchor)) {
      Layer l;
      l.index = static_cast<int>(layers_.size());
      l.anchor_step = k;
      layers_.push_back(l);
    } else if (anchor) {
      layers_.back().anchor_step = k;  // steps before the first parameterised node join its layer
    }
    seen_anchor = seen_anchor || anchor;
    Layer& l = layers_.back();
    l.steps.push_back(k);
    l.nodes.push_back(st.node->name);
    l.output_step = k;
    for (int s : st.inputs)
      if (const std::string* name = param_name(s))
        if (std::find(l.params.begin(), l.params.end(), *name) == l.params.end()) l.params.push_back(*name);
  }
  for (Layer& l : layers_)
    for (size_t k : l.steps) steps_[k].layer = l.index;
}

}  // namespace dl::rt
