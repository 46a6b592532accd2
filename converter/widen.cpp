// The `width` repair's graph edit (converter/widen.h).
#include "converter/widen.h"

#include <algorithm>
#include <set>

#include "converter/errors.h"

namespace dl::conv {
namespace {

// Element-wise steps a dense layer's units pass through unchanged in number.
bool is_unitwise(const std::string& op) {
  static const std::set<std::string> ops = {"Relu",    "LeakyRelu", "Elu",     "Selu",    "Sigmoid", "HardSigmoid",
                                            "Tanh",    "Softplus",  "Softsign", "Gelu",   "Erf",     "HardSwish",
                                            "Dropout", "Identity",  "Clip",     "Abs",    "Neg",     "Exp"};
  return ops.count(op) > 0;
}

int64_t int_attr(const ir::Node& n, const std::string& name, int64_t fallback) {
  auto it = n.attrs.find(name);
  return it == n.attrs.end() ? fallback : it->second.i;
}

// `t` with axis `axis` grown to `size`, the new entries `fill`.
void grow_axis(ir::TensorData& t, size_t axis, int64_t size, float fill) {
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= t.dims[d];
  for (size_t d = axis + 1; d < t.dims.size(); ++d) inner *= t.dims[d];
  const int64_t old = t.dims[axis];
  std::vector<float> out(static_cast<size_t>(outer * size * inner), fill);
  for (int64_t o = 0; o < outer; ++o)
    std::copy_n(t.floats.begin() + o * old * inner, old * inner, out.begin() + o * size * inner);
  t.floats = std::move(out);
  t.dims[axis] = size;
}

class Widener {
 public:
  Widener(ir::Model& m, const std::vector<std::string>& layer, int64_t units)
      : g_(m.graph), units_(units), label_((m.path.empty() ? "model" : m.path) + ": widen layer '" +
                                                     (layer.empty() ? std::string("?") : layer.front()) + "'") {}

  WidenEdit run(const std::vector<std::string>& layer, const std::vector<std::string>& consumer) {
    WidenEdit e;
    const size_t dense = dense_node(layer, "the layer");
    const ir::Node& d = g_.nodes[dense];
    e.node = d.name;
    const bool gemm = d.op_type == "Gemm";
    const size_t out_axis = gemm && int_attr(d, "transB", 0) ? 0 : 1;
    ir::TensorData& w = weight(d);
    e.old_units = w.dims[out_axis];
    if (units_ <= e.old_units)
      throw ModelError(label_ + ": asked for " + std::to_string(units_) + " units, but it has " +
                       std::to_string(e.old_units) + " already");
    e.new_units = units_;
    grow_axis(w, out_axis, units_, 0.0f);
    e.layer_params.push_back(d.inputs[1]);
    if (gemm && d.inputs.size() > 2 && !d.inputs[2].empty()) pad_per_unit(d.inputs[2], 0.0f, e, true);

    // Follow the values to the consumer's dense node.
    std::string value = d.outputs.at(0);
    for (size_t steps = 0;; ++steps) {
      g_.value_info.erase(value);
      const size_t r = only_reader(value);
      ir::Node& n = g_.nodes[r];
      if (std::find(consumer.begin(), consumer.end(), n.name) != consumer.end() &&
          (n.op_type == "Gemm" || n.op_type == "MatMul")) {
        widen_consumer(n, value, e);
        return e;
      }
      if (steps > g_.nodes.size())
        throw InternalError(label_ + ": the walk to the next layer does not end");
      step(n, value, e, steps == 0 && !gemm);
      value = n.outputs.at(0);
    }
  }

 private:
  size_t index_of(const std::string& name) const {
    for (size_t k = 0; k < g_.nodes.size(); ++k)
      if (g_.nodes[k].name == name) return k;
    throw ModelError(label_ + ": the model has no node named '" + name + "'");
  }

  size_t dense_node(const std::vector<std::string>& nodes, const std::string& what) const {
    for (const std::string& name : nodes) {
      const size_t k = index_of(name);
      const ir::Node& n = g_.nodes[k];
      if ((n.op_type == "Gemm" || n.op_type == "MatMul") && n.domain.empty() && n.inputs.size() > 1) return k;
    }
    throw ModelError(label_ + ": " + what + " has no dense node (Gemm or MatMul) to change the width of");
  }

  // How many node inputs read `value`.
  size_t reads(const std::string& value) const {
    size_t n = 0;
    for (const ir::Node& node : g_.nodes) n += static_cast<size_t>(std::count(node.inputs.begin(), node.inputs.end(), value));
    return n;
  }

  size_t only_reader(const std::string& value) const {
    for (const ir::ValueInfo& o : g_.outputs)
      if (o.name == value) throw ModelError(label_ + ": its values '" + value + "' are a graph output");
    std::vector<size_t> readers;
    for (size_t k = 0; k < g_.nodes.size(); ++k)
      if (std::count(g_.nodes[k].inputs.begin(), g_.nodes[k].inputs.end(), value)) readers.push_back(k);
    if (readers.size() != 1)
      throw ModelError(label_ + ": value '" + value + "' has " + std::to_string(readers.size()) +
                       " readers; only a plain chain to the next layer can be widened");
    return readers.front();
  }

  ir::TensorData& initializer(const std::string& name, const ir::Node& n) {
    auto it = g_.initializers.find(name);
    if (it == g_.initializers.end() || it->second.dtype != ir::DType::kFloat32)
      throw ModelError(label_ + ": node '" + n.name + "' reads '" + name + "', which is not a float initializer");
    if (reads(name) != 1)
      throw ModelError(label_ + ": '" + name + "' is shared with other nodes (a tied parameter)");
    return it->second;
  }

  ir::TensorData& weight(const ir::Node& n) {
    ir::TensorData& w = initializer(n.inputs[1], n);
    if (w.dims.size() != 2) throw ModelError(label_ + ": the weight '" + n.inputs[1] + "' of '" + n.name + "' is not 2-D");
    return w;
  }

  // A per-unit constant (bias, scale, statistic) of `old_units` entries grows to `units_`;
  // a single value (broadcast) stays.
  void pad_per_unit(const std::string& name, float fill, WidenEdit& e, bool layer_param) {
    auto it = g_.initializers.find(name);
    if (it == g_.initializers.end()) return;  // computed, not a constant: nothing to pad
    ir::TensorData& t = initializer(name, g_.nodes[index_of_reader(name)]);
    if (t.numel() == 1 && e.old_units != 1) return;
    if (t.numel() != e.old_units || t.dims.empty())
      throw ModelError(label_ + ": '" + name + "' has " + std::to_string(t.numel()) + " values, not one per unit (" +
                       std::to_string(e.old_units) + ")");
    grow_axis(t, t.dims.size() - 1, units_, fill);
    (layer_param ? e.layer_params : e.per_unit).push_back(name);
  }

  size_t index_of_reader(const std::string& value) const {
    for (size_t k = 0; k < g_.nodes.size(); ++k)
      if (std::count(g_.nodes[k].inputs.begin(), g_.nodes[k].inputs.end(), value)) return k;
    return 0;
  }

  // One element-wise step between the two dense nodes; `after_matmul`: it reads a MatMul's
  // product directly, so an Add of a constant there is the layer's bias (re-drawn with it).
  void step(const ir::Node& n, const std::string& value, WidenEdit& e, bool after_matmul) {
    const bool default_domain = n.domain.empty() || n.domain == "ai.onnx";
    if (!default_domain || n.outputs.empty() || n.outputs[0].empty())
      throw ModelError(label_ + ": node '" + n.name + "' (" + n.op_type + ") is not an element-wise step");
    if (is_unitwise(n.op_type)) {
      if (n.inputs.empty() || n.inputs[0] != value)
        throw ModelError(label_ + ": node '" + n.name + "' (" + n.op_type + ") reads the layer's values elsewhere");
      return;  // Clip's bounds and Dropout's ratio are scalars
    }
    if (n.op_type == "BatchNormalization" && n.inputs.size() >= 5 && n.inputs[0] == value) {
      const float fill[] = {1.0f, 0.0f, 0.0f, 1.0f};  // scale, bias, running mean, running variance
      for (size_t i = 1; i < 5; ++i) pad_per_unit(n.inputs[i], fill[i - 1], e, false);
      return;
    }
    const bool additive = n.op_type == "Add" || n.op_type == "Sub";
    if ((additive || n.op_type == "Mul" || n.op_type == "Div") && n.inputs.size() == 2) {
      const std::string& other = n.inputs[0] == value ? n.inputs[1] : n.inputs[0];
      if (g_.initializers.count(other)) {
        pad_per_unit(other, additive ? 0.0f : 1.0f, e, after_matmul && n.op_type == "Add");
        return;
      }
    }
    throw ModelError(label_ + ": node '" + n.name + "' (" + n.op_type + ") stands between it and the next layer, "
                     "and only element-wise steps can take more units");
  }

  void widen_consumer(ir::Node& n, const std::string& value, WidenEdit& e) {
    const bool gemm = n.op_type == "Gemm";
    if (n.inputs[0] != value || (gemm && int_attr(n, "transA", 0)))
      throw ModelError(label_ + ": the next layer's node '" + n.name + "' does not read its values as rows");
    const size_t in_axis = gemm && int_attr(n, "transB", 0) ? 1 : 0;
    ir::TensorData& w = weight(n);
    if (w.dims[in_axis] != e.old_units)
      throw ModelError(label_ + ": the next layer's weight '" + n.inputs[1] + "' takes " +
                       std::to_string(w.dims[in_axis]) + " inputs, not " + std::to_string(e.old_units));
    grow_axis(w, in_axis, units_, 0.0f);
    e.consumer = n.name;
    e.consumer_weight = n.inputs[1];
  }

  ir::Graph& g_;
  int64_t units_;
  std::string label_;
};

}  // namespace

WidenEdit widen_dense_layer(ir::Model& model, const std::vector<std::string>& layer_nodes,
                            const std::vector<std::string>& consumer_nodes, int64_t units) {
  if (layer_nodes.empty() || consumer_nodes.empty())
    throw ModelError((model.path.empty() ? "model" : model.path) + ": widen: a layer names no nodes");
  WidenEdit e = Widener(model, layer_nodes, units).run(layer_nodes, consumer_nodes);
  model.rewritten = true;
  return e;
}

}  // namespace dl::conv
