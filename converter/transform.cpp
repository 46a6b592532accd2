// Repairs as edits of the imported model: a layer's activation, re-initialised weights.
#include "converter/transform.h"

#include <onnx/defs/schema.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "converter/errors.h"

namespace dl::conv {
namespace {

// Settable activations without "Identity", which stands for "no activation".
const std::set<std::string>& activation_ops() {
  static const std::set<std::string> ops = {"Relu",     "LeakyRelu", "Elu",      "Selu",    "Sigmoid",   "HardSigmoid",
                                            "Tanh",     "Softplus",  "Softsign", "Softmax", "LogSoftmax"};
  return ops;
}

bool is_activation(const ir::Node& n) {
  return (n.domain.empty() || n.domain == "ai.onnx") && activation_ops().count(n.op_type) > 0;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

std::string source(const ir::Model& model) { return model.path.empty() ? "model" : model.path; }

// The schema version a new default-domain node resolves to, as the importer would set it:
// the runtime picks its implementation (and refuses unknown versions) by it.
int since_version(const ir::Model& model, const std::string& op, const std::string& label) {
  const auto* schema = onnx::OpSchemaRegistry::Schema(op, static_cast<int>(model.opset), "");
  if (!schema) {
    throw ModelError(label + ": ONNX has no " + op + " operator at the model's opset " +
                     std::to_string(model.opset));
  }
  return schema->SinceVersion();
}

ir::Attribute float_attr(float v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kFloat;
  a.f = v;
  return a;
}

std::map<std::string, ir::Attribute> activation_attrs(const std::string& op, float alpha) {
  std::map<std::string, ir::Attribute> attrs;
  if (op == "Softmax" || op == "LogSoftmax") {
    // -1 is the last axis under both the opset-13 (per axis) and the older (flatten from
    // axis) semantics, so the node means the same at any opset.
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kInt;
    a.i = -1;
    attrs["axis"] = a;
  } else if (op == "LeakyRelu") {
    attrs["alpha"] = float_attr(std::isnan(alpha) ? 0.01f : alpha);
  } else if (op == "Elu") {
    attrs["alpha"] = float_attr(std::isnan(alpha) ? 1.0f : alpha);
  }
  return attrs;
}

bool same_attrs(const std::map<std::string, ir::Attribute>& a, const std::map<std::string, ir::Attribute>& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [name, x] : a) {
    auto it = b.find(name);
    if (it == b.end() || it->second.kind != x.kind || it->second.f != x.f || it->second.i != x.i) return false;
  }
  return true;
}

bool is_graph_output(const ir::Graph& g, const std::string& value) {
  return std::any_of(g.outputs.begin(), g.outputs.end(), [&](const ir::ValueInfo& v) { return v.name == value; });
}

// Every node and value name of the graph, so that new names clash with none of them.
std::set<std::string> taken_names(const ir::Graph& g) {
  std::set<std::string> taken;
  for (const auto& n : g.nodes) {
    taken.insert(n.name);
    taken.insert(n.inputs.begin(), n.inputs.end());
    taken.insert(n.outputs.begin(), n.outputs.end());
  }
  for (const auto& v : g.inputs) taken.insert(v.name);
  for (const auto& v : g.outputs) taken.insert(v.name);
  for (const auto& [name, v] : g.value_info) taken.insert(name);
  for (const auto& [name, t] : g.initializers) taken.insert(name);
  return taken;
}

std::string unique_name(const std::string& base, std::set<std::string>& taken) {
  std::string name = base;
  for (int k = 1; taken.count(name); ++k) name = base + "_" + std::to_string(k);
  taken.insert(name);
  return name;
}

void rename_inputs(ir::Graph& g, const std::string& from, const std::string& to, size_t skip) {
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (k != skip)
      for (auto& in : g.nodes[k].inputs)
        if (in == from) in = to;
}

// Copies the declared type and shape of `from` (a value or graph output) to `to`: an
// activation keeps its input's shape and dtype.
void copy_value_info(ir::Graph& g, const std::string& from, const std::string& to) {
  const ir::ValueInfo* info = nullptr;
  auto it = g.value_info.find(from);
  if (it != g.value_info.end()) info = &it->second;
  for (const auto& v : g.outputs)
    if (v.name == from) info = &v;
  if (!info) return;
  ir::ValueInfo copy = *info;
  copy.name = to;
  g.value_info[to] = copy;
}

// Inserts a node of `op` after node `last`, returns its name.
std::string insert_activation(ir::Model& model, size_t last, const std::string& op, float alpha,
                              const std::string& label) {
  ir::Graph& g = model.graph;
  const ir::Node& producer = g.nodes[last];
  if (producer.outputs.empty() || producer.outputs[0].empty()) {
    throw ModelError(label + ": node '" + producer.name + "' has no output to apply " + op + " to");
  }
  std::set<std::string> taken = taken_names(g);
  ir::Node act;
  act.name = unique_name(producer.name + "_" + op, taken);
  act.op_type = op;
  act.since_version = since_version(model, op, label);
  act.attrs = activation_attrs(op, alpha);
  const std::string value = producer.outputs[0];
  const bool output = is_graph_output(g, value);
  const std::string fresh = unique_name((output ? producer.name : act.name) + "_output_0", taken);
  if (output) {
    // The new node takes over the graph output's name; the other readers of the value
    // then see the activated value too, as they would after a Keras activation.
    g.nodes[last].outputs[0] = fresh;
    act.inputs = {fresh};
    act.outputs = {value};
  } else {
    rename_inputs(g, value, fresh, last);
    act.inputs = {value};
    act.outputs = {fresh};
  }
  copy_value_info(g, value, fresh);
  const std::string name = act.name;
  g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(last) + 1, std::move(act));
  return name;
}

void remove_activation(ir::Model& model, size_t index, const std::string& label) {
  ir::Graph& g = model.graph;
  ir::Node& n = g.nodes[index];
  if (n.inputs.empty() || n.inputs[0].empty() || n.outputs.empty() || n.outputs[0].empty()) {
    throw ModelError(label + ": activation node '" + n.name + "' has no input or output");
  }
  if (is_graph_output(g, n.outputs[0])) {  // the output name must stay: pass the value through
    n.op_type = "Identity";
    n.attrs.clear();
    n.since_version = since_version(model, "Identity", label);
    return;
  }
  const std::string input = n.inputs[0], output = n.outputs[0];
  g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(index));
  rename_inputs(g, output, input, g.nodes.size());
  g.value_info.erase(output);
}

}  // namespace

bool is_settable_activation(const std::string& op_type) {
  return op_type == "Identity" || activation_ops().count(op_type) > 0;
}

ActivationEdit edit_layer_activation(ir::Model& model, const std::vector<std::string>& layer_nodes,
                                     const std::string& op_type, float alpha) {
  const std::string label = source(model) + ": layer nodes " + join(layer_nodes);
  if (!is_settable_activation(op_type)) {
    throw ConfigError(label + ": '" + op_type + "' is not an activation that can be set (settable: Identity, " +
                      join(std::vector<std::string>(activation_ops().begin(), activation_ops().end())) + ")");
  }
  if (layer_nodes.empty()) throw ModelError(source(model) + ": set activation: the layer names no nodes");
  ir::Graph& g = model.graph;
  size_t last = 0;
  int act = -1;  // the layer's last activation node
  for (const auto& name : layer_nodes) {
    auto it = std::find_if(g.nodes.begin(), g.nodes.end(), [&](const ir::Node& n) { return n.name == name; });
    if (it == g.nodes.end()) throw ModelError(label + ": the model has no node named '" + name + "'");
    const size_t k = static_cast<size_t>(it - g.nodes.begin());
    last = std::max(last, k);
    if (is_activation(*it) && static_cast<int>(k) > act) act = static_cast<int>(k);
  }
  ActivationEdit e;
  e.layer_nodes = layer_nodes;
  if (op_type == "Identity") {
    if (act < 0) return e;
    e.old_op = g.nodes[static_cast<size_t>(act)].op_type;
    e.node = g.nodes[static_cast<size_t>(act)].name;
    remove_activation(model, static_cast<size_t>(act), label);
    e.kind = ActivationEdit::Kind::kRemoved;
    return e;
  }
  if (act < 0) {
    e.after = g.nodes[last].name;
    e.node = insert_activation(model, last, op_type, alpha, label);
    e.new_op = op_type;
    e.kind = ActivationEdit::Kind::kInserted;
    return e;
  }
  ir::Node& n = g.nodes[static_cast<size_t>(act)];
  auto attrs = activation_attrs(op_type, alpha);
  if (n.op_type == op_type && same_attrs(n.attrs, attrs)) return e;
  e.old_op = n.op_type;
  e.new_op = op_type;
  e.node = n.name;
  n.since_version = since_version(model, op_type, label);
  n.op_type = op_type;
  n.attrs = std::move(attrs);
  if (n.attrs.count("alpha")) e.alpha = n.attrs["alpha"].f;
  e.kind = ActivationEdit::Kind::kReplaced;
  return e;
}

std::string to_string(const ActivationEdit& e) {
  const std::string prefix = "layer nodes " + join(e.layer_nodes) + ": ";
  switch (e.kind) {
    case ActivationEdit::Kind::kUnchanged: return "";
    case ActivationEdit::Kind::kRemoved: return prefix + e.old_op + " -> Identity (" + e.node + ")";
    case ActivationEdit::Kind::kInserted: return prefix + e.new_op + " inserted after " + e.after + " (" + e.node + ")";
    case ActivationEdit::Kind::kReplaced: {
      std::string change = prefix + e.old_op + " -> " + e.new_op;
      if (!std::isnan(e.alpha)) change += " (alpha " + attr_number(e.alpha) + ")";
      return change;
    }
  }
  return "";
}

std::string set_layer_activation(ir::Model& model, const std::vector<std::string>& layer_nodes,
                                 const std::string& op_type, float alpha) {
  return to_string(edit_layer_activation(model, layer_nodes, op_type, alpha));
}

std::string attr_number(double v) { return number(v); }

}  // namespace dl::conv
