// Repairs as edits of an imported model (verified fixes, issue 9): the candidate fixes
// are tried on a copy of the ir::Model, and the repaired model is written back as ONNX.
//
// Layers are named as the analysis names them (an::LayerInfo::nodes): the ONNX node names
// of a parameterised node and the element-wise and activation nodes that follow it. Every
// edit keeps the graph valid for the runtime (topological order, unique value names,
// graph output names unchanged) and throws ModelError naming the layer or initializer when
// the model does not hold what the edit expects.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "converter/ir.h"

namespace dl::conv {

// True for the op types a layer's activation may be set to: Relu, LeakyRelu, Elu, Selu,
// Sigmoid, HardSigmoid, Tanh, Softplus, Softsign, Softmax, LogSoftmax, and "Identity"
// (no activation).
bool is_settable_activation(const std::string& op_type);

// What set_layer_activation changed, as values (the repairs build their own text from it).
struct ActivationEdit {
  enum class Kind { kUnchanged, kReplaced, kInserted, kRemoved };
  Kind kind = Kind::kUnchanged;
  std::vector<std::string> layer_nodes;  // the layer, as given
  std::string old_op;                    // kReplaced, kRemoved: the activation it had
  std::string new_op;                    // kReplaced, kInserted: the one it has now
  std::string node;                      // the activation node replaced, inserted or removed
  std::string after;                     // kInserted: the node it follows
  float alpha = std::numeric_limits<float>::quiet_NaN();  // kReplaced: the new node's alpha, if it has one
};

// Sets the activation of the layer made of `layer_nodes`:
//  - the layer has activation nodes (the ops above): its last one becomes `op_type`, with
//    the new op's attributes (Softmax/LogSoftmax: axis -1; LeakyRelu: alpha; Elu: alpha);
//  - it has none: a node of `op_type` is inserted after the layer's last node;
//  - op_type "Identity" removes the activation node (its consumers read its input).
// A graph output keeps its name in all three cases (an inserted node takes it over; a
// removed activation that produced it becomes an Identity node). A replaced node keeps its
// name, so the layer's node names stay valid; an inserted one is named "<last node>_<op>".
// `alpha` applies to LeakyRelu (default 0.01, PyTorch's and ONNX's) and Elu (default 1.0);
// NaN means the default. New nodes get the since_version of `model.opset`.
// Returns what changed; kind kUnchanged when nothing would change (the layer already has
// that activation, or none to remove).
// Throws ConfigError for an op_type that is not settable, ModelError for a node name the
// model does not have.
ActivationEdit edit_layer_activation(ir::Model& model, const std::vector<std::string>& layer_nodes,
                                     const std::string& op_type,
                                     float alpha = std::numeric_limits<float>::quiet_NaN());

// The edit in words, e.g. "layer nodes /6/Gemm, /7/Softmax: Softmax -> Sigmoid",
// "layer nodes fc1: Relu inserted after fc1 (fc1_Relu)", "... Relu -> Identity (fc1_Relu)";
// "" for kUnchanged.
std::string to_string(const ActivationEdit& edit);

// edit_layer_activation, in words (to_string).
std::string set_layer_activation(ir::Model& model, const std::vector<std::string>& layer_nodes,
                                 const std::string& op_type,
                                 float alpha = std::numeric_limits<float>::quiet_NaN());

// A number as the edits print it (an attribute value: "0.01").
std::string attr_number(double v);

// Re-initialisation (weights by their fans, biases to zero) needs the ops' parameter
// roles: rt::reinitialize_params in runtime/param_roles.h.

// Writes `model` as an ONNX file (to a temporary name, then renamed): nodes with their
// attributes, initializers (float64 ones as float64), graph inputs and outputs with their
// types and shapes, value_info, the default-domain opset `model.opset`, producer and
// metadata_props. The file passes onnx.checker and imports back into the same ir::Model.
// Throws ConfigError when `out_path` cannot be written, ModelError for what ONNX cannot
// hold (an attribute of kind kOther, a tensor of dtype kOther).
void save_model(const ir::Model& model, const std::string& out_path);

}  // namespace dl::conv
