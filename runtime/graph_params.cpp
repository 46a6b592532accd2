// The graph's parameters and layers: initializers as runtime tensors, which of them are
// trainable (as Keras counts them), the ParamStore shared between graphs of one model,
// and the grouping of steps into user-level layers (ExecutionGraph::build_layers).
#include <algorithm>

#include "converter/errors.h"
#include "runtime/graph.h"
#include "runtime/graph_impl.h"

namespace dl::rt {
namespace graph_detail {

DType runtime_dtype(ir::DType t, const std::string& what) {
  switch (t) {
    case ir::DType::kFloat32:
    case ir::DType::kFloat64:
      return DType::kFloat32;
    case ir::DType::kInt64:
    case ir::DType::kInt32:
    case ir::DType::kBool:
      return DType::kInt64;
    default:
      throw ModelError(what + ": element type " + ir::dtype_name(t) + " is not supported");
  }
}

Tensor tensor_from(const ir::TensorData& d) {
  DType t = runtime_dtype(d.dtype, "initializer '" + d.name + "'");
  return t == DType::kFloat32 ? Tensor::floats(d.dims, d.floats) : Tensor::ints(d.dims, d.ints);
}

std::set<std::string> trainable_initializers(const ir::Graph& g, const std::vector<std::unique_ptr<Op>>& ops) {
  std::set<std::string> out;
  std::map<std::string, size_t> producer;
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (const std::string& o : g.nodes[k].outputs) producer[o] = k;
  // The float initializer a value is (or is a reshaped/transposed view of: exporters
  // sometimes put a Transpose or Reshape between a weight and its MatMul).
  std::map<std::string, std::string> source;
  for (const auto& [name, data] : g.initializers)
    if (data.dtype == ir::DType::kFloat32 || data.dtype == ir::DType::kFloat64) source[name] = name;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const ir::Node& n = g.nodes[k];
    if (ops[k]->traits().role != OpTraits::Role::kShape || n.inputs.empty()) continue;
    auto it = source.find(n.inputs[0]);
    if (it != source.end())
      for (const std::string& o : n.outputs) source[o] = it->second;
  }
  auto init_of = [&](const std::string& value) -> const std::string* {
    auto it = source.find(value);
    return it == source.end() ? nullptr : &it->second;
  };
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const ir::Node& n = g.nodes[k];
    const OpTraits t = ops[k]->traits();
    if (t.role == OpTraits::Role::kParameterized) {
      for (size_t i = 0; i < n.inputs.size(); ++i)
        if (const std::string* init = init_of(n.inputs[i]))
          if (ops[k]->differentiable_input(i)) out.insert(*init);
    } else if (t.role == OpTraits::Role::kElementwise && t.linear) {
      bool after_parameterized = false;
      for (const std::string& in : n.inputs) {
        auto p = producer.find(in);
        if (p != producer.end() && ops[p->second]->traits().role == OpTraits::Role::kParameterized)
          after_parameterized = true;
      }
      if (after_parameterized)
        for (const std::string& in : n.inputs)
          if (const std::string* init = init_of(in)) out.insert(*init);
    }
  }
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
