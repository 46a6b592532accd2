// Planning an execution graph (ExecutionGraph::plan): one slot per value, input shapes
// resolved, shapes inferred node by node with every buffer allocated once under the
// memory cap, nodes computable from shapes and constants folded away, and the values
// that need gradients marked.
#include <limits>
#include <set>

#include "converter/errors.h"
#include "runtime/graph.h"
#include "runtime/graph_impl.h"
#include "runtime/registry.h"

namespace dl::rt {
namespace {

using graph_detail::runtime_dtype;
using graph_detail::tensor_from;
using graph_detail::trainable_initializers;

// Saturates: an output of 2^62 elements is a shape the budget refuses, not an overflow.
int64_t value_bytes(const Tensor& t) {
  int64_t bytes = 0;
  if (__builtin_mul_overflow(t.numel(), int64_t(t.dtype() == DType::kFloat32 ? 4 : 8), &bytes))
    return std::numeric_limits<int64_t>::max();
  return bytes;
}

// One error that lists every unsupported node, grouped by op type, with the opset.
void check_supported(const ir::Model& model) {
  std::map<std::string, std::vector<std::string>> bad;
  std::map<std::string, std::string> why;
  for (const ir::Node& n : model.graph.nodes) {
    std::string reason = unsupported_reason(n);
    if (reason.empty()) continue;
    bad[n.op_type].push_back(n.name);
    why[n.op_type] = reason;
  }
  if (bad.empty()) return;
  std::string msg = model.path + ": unsupported operators (model opset " + std::to_string(model.opset) + "):";
  for (const auto& [type, names] : bad) {
    msg += "\n  " + type + " (" + why[type] + "): ";
    for (size_t k = 0; k < names.size(); ++k) msg += (k ? ", '" : "'") + names[k] + "'";
  }
  throw ModelError(msg);
}

// An error that an op's infer() raised through a shared helper (shape_numel, a broadcast)
// without naming the node gets the node's name, as the op's own errors have it.
template <class E>
[[noreturn]] void at_node(const E& e, const ir::Node& node) {
  const std::string at = "node '" + node.name + "' (" + node.op_type + ")";
  if (std::string(e.what()).find(at) != std::string::npos) throw e;
  throw E(at + ": " + e.what());
}

}  // namespace

void ExecutionGraph::plan(const GraphOptions& options) {
  const ir::Graph& g = model_->graph;
  check_supported(*model_);
  // Every buffer is charged to the run's budget before it is allocated; planned_bytes_
  // is what this graph holds (given back by the destructor).
  auto charge = [&](const Tensor& t, const std::string& what) {
    const int64_t bytes = value_bytes(t);
    budget_->charge(bytes, what);
    planned_bytes_ += bytes;
  };

  // Slots are numbered in order of appearance; storage is reserved up front so that
  // pointers into values_ stay valid.
  size_t max_slots = g.initializers.size() + g.inputs.size();
  for (const ir::Node& n : g.nodes) max_slots += n.outputs.size();
  values_.reserve(max_slots);
  std::vector<bool> known;
  std::vector<bool> is_param_source;  // float initializer (trainable if read differentiably)

  auto new_slot = [&](const std::string& name, Tensor* external, bool is_known, bool param) {
    int slot = static_cast<int>(slot_ptr_.size());
    values_.emplace_back();
    slot_ptr_.push_back(external ? external : &values_.back());
    value_names_.push_back(name);
    slots_[name] = slot;
    known.push_back(is_known);
    is_param_source.push_back(param);
    return slot;
  };

  std::vector<std::unique_ptr<Op>> ops;
  ops.reserve(g.nodes.size());
  for (const ir::Node& node : g.nodes) ops.push_back(make_op(node));
  const std::set<std::string> trainable = trainable_initializers(g, ops);

  for (const auto& [name, data] : g.initializers) {
    auto it = store_->values.find(name);
    if (it != store_->values.end()) {
      // Float constants that are not weights or biases (scales, exponents, epsilons
      // stored as initializers by tf2onnx) are plan-time constants, not parameters.
      const bool param = trainable.count(name) != 0;
      new_slot(name, &it->second, !param, param);
    } else {
      new_slot(name, nullptr, true, false);
      values_.back() = tensor_from(data);
      charge(values_.back(), "initializer '" + name + "'");
    }
  }

  for (const ir::ValueInfo& in : g.inputs) {
    if (slots_.count(in.name)) continue;  // an initializer also listed as input
    auto kv = options.known_inputs.find(in.name);
    if (kv != options.known_inputs.end()) {
      new_slot(in.name, nullptr, true, false);
      values_.back() = kv->second;
      continue;
    }
    Shape shape;
    auto given = options.input_shapes.find(in.name);
    if (given != options.input_shapes.end()) {
      shape = given->second;
    } else {
      if (!in.has_shape) throw ShapeError("graph input '" + in.name + "' has no declared shape");
      for (size_t k = 0; k < in.dims.size(); ++k) {
        if (in.dims[k].known()) {
          shape.push_back(in.dims[k].value);
        } else if (k == 0) {
          shape.push_back(options.batch_size);
        } else {
          throw ShapeError("graph input '" + in.name + "': dimension " + std::to_string(k) +
                           (in.dims[k].param.empty() ? "" : " ('" + in.dims[k].param + "')") +
                           " is unknown; only the batch (first) dimension may be symbolic");
        }
      }
    }
    for (size_t k = 0; k < shape.size(); ++k)
      if (shape[k] < 0 || (shape[k] == 0 && !options.allow_empty_inputs))
        throw ShapeError("graph input '" + in.name + "' has shape " + shape_str(shape) + ": dimension " +
                         std::to_string(k) + " is " + std::to_string(shape[k]) + " (every dimension must be positive)");
    int s = new_slot(in.name, nullptr, false, false);
    Tensor& t = values_.back();
    t.plan(runtime_dtype(in.dtype, "graph input '" + in.name + "'"), shape);
    charge(t, "graph input '" + in.name + "' of shape " + shape_str(shape));
    t.allocate();
    input_slots_.push_back(s);
    input_names_.push_back(in.name);
  }

  for (size_t node_index = 0; node_index < g.nodes.size(); ++node_index) {
    const ir::Node& node = g.nodes[node_index];
    Step step;
    step.node = &node;
    step.order = node_index;
    step.op = std::move(ops[node_index]);
    InferCtx ic;
    ic.training = options.training;
    ic.max_bytes = budget_->remaining();
    ic.charge_buffer = [this, &node](int64_t bytes, const std::string& what) {
      budget_->charge(bytes, "node '" + node.name + "' (" + node.op_type + "): " + what);
      planned_bytes_ += bytes;
    };
    bool all_known = true;
    for (const std::string& name : node.inputs) {
      if (name.empty()) {
        step.inputs.push_back(-1);
        ic.in.push_back(nullptr);
        ic.known.push_back(true);
        ic.param.push_back(false);
        continue;
      }
      auto it = slots_.find(name);
      if (it == slots_.end())
        throw ModelError("node '" + node.name + "' (" + node.op_type + ") reads '" + name + "', which no node produces");
      step.inputs.push_back(it->second);
      ic.in.push_back(slot_ptr_[it->second]);
      ic.known.push_back(known[it->second]);
      ic.param.push_back(is_param_source[it->second]);
      all_known = all_known && known[it->second];
    }
    for (const std::string& name : node.outputs) {
      if (name.empty()) {
        step.outputs.push_back(-1);
        ic.out.push_back(nullptr);
        continue;
      }
      int s = new_slot(name, nullptr, false, false);
      step.outputs.push_back(s);
      ic.out.push_back(slot_ptr_[s]);
    }
    ic.out_known.assign(ic.out.size(), false);
    try {
      step.op->infer(ic);
    } catch (const ShapeError& e) {
      at_node(e, node);
    } catch (const ResourceError& e) {
      at_node(e, node);
    }

    for (size_t k = 0; k < step.outputs.size(); ++k) {
      if (step.outputs[k] < 0) continue;
      Tensor& t = *slot_ptr_[step.outputs[k]];
      charge(t, "node '" + node.name + "' (" + node.op_type + "): output '" + node.outputs[k] + "' of shape " +
                    shape_str(t.shape()));
      if (!t.allocated()) t.allocate();
    }

    bool outputs_known = !ic.out_known.empty();
    for (size_t k = 0; k < ic.out_known.size(); ++k)
      if (step.outputs[k] >= 0 && !ic.out_known[k]) outputs_known = false;
    const bool fold = outputs_known || (all_known && !step.op->stochastic());
    if (fold) {
      if (!outputs_known) {
        FwdCtx fc;
        fc.in = std::vector<const Tensor*>(ic.in.begin(), ic.in.end());
        fc.out = ic.out;
        fc.training = options.training;
        fc.rng = &rng_;
        step.op->forward(fc);
      }
      for (int s : step.outputs)
        if (s >= 0) known[static_cast<size_t>(s)] = true;
      continue;
    }
    steps_.push_back(std::move(step));
  }
  if (options.fuse) fuse_linear_steps(is_param_source, options.training);

  for (const ir::ValueInfo& out : g.outputs) {
    auto it = slots_.find(out.name);
    if (it == slots_.end()) throw ModelError("graph output '" + out.name + "' is not produced by any node");
    output_slots_.push_back(it->second);
    output_names_.push_back(out.name);
  }

  // Which values lead to a trainable parameter: those need gradients.
  needs_grad_.assign(slot_ptr_.size(), false);
  std::set<int> param_slots;
  for (const Step& st : steps_)
    for (size_t i = 0; i < st.inputs.size(); ++i) {
      int s = st.inputs[i];
      if (s >= 0 && is_param_source[static_cast<size_t>(s)] && st.op->differentiable_input(i)) param_slots.insert(s);
    }
  for (int s : param_slots) needs_grad_[static_cast<size_t>(s)] = true;
  for (Step& st : steps_) {
    bool any = false;
    for (size_t i = 0; i < st.inputs.size(); ++i)
      if (st.inputs[i] >= 0 && needs_grad_[static_cast<size_t>(st.inputs[i])] && st.op->differentiable_input(i))
        any = true;
    st.needs_backward = any;
    st.recurrent = st.op->traits().recurrent;
    if (any)
      for (int s : st.outputs)
        if (s >= 0 && slot_ptr_[static_cast<size_t>(s)]->dtype() == DType::kFloat32)
          needs_grad_[static_cast<size_t>(s)] = true;
  }
  for (int s : output_slots_)
    if (slot_ptr_[static_cast<size_t>(s)]->dtype() == DType::kFloat32) needs_grad_[static_cast<size_t>(s)] = true;
  if (options.views) plan_views(known, is_param_source);
  else grad_view_of_.assign(slot_ptr_.size(), -1);
  grads_.resize(slot_ptr_.size());
  if (options.training) allocate_grads();
  for (int s : param_slots) params_.push_back({value_names_[static_cast<size_t>(s)], slot_ptr_[static_cast<size_t>(s)],
                                               &grads_[static_cast<size_t>(s)]});
  wire_contexts();
  build_layers();
}

}  // namespace dl::rt
