// LayerNorm as torch.onnx.export writes it below opset 17, fused back into one node.
//
// Below opset 17 ONNX has no LayerNormalization, and torch decomposes nn.LayerNorm into
//   mean = ReduceMean(X, axes)          d = Sub(X, mean)
//   var  = ReduceMean(Pow(d, 2), axes)  Y = Div(d, Sqrt(Add(var, eps)))
//   out  = Add(Mul(Y, weight), bias)    (bias optional; either operand order)
// Trained as plain arithmetic, weight and bias are constants (no op reads them as a
// parameter) and would silently stay frozen. The fused node is LayerNormalization
// (since_version 17, axis -k for the k normalised trailing axes, epsilon eps), whose
// traits make weight its scale and bias its bias.
//
// A chain is fused only on an exact structural match: both ReduceMeans over the same
// trailing axes with keepdims 1 (attribute form), one X feeding both the mean and the
// centring, Pow's exponent and eps float constants of one element (2 and > 0), weight and
// bias float initializers whose shapes (leading 1s aside, no higher rank than X) equal
// X's normalised dimensions where shape inference knows them (else: one dimension per
// normalised axis, the bias shaped as the weight, checked against X when the graph is
// planned), and every intermediate value read only inside the chain (never a graph
// output). X must be known to be float32. Anything else is left as it is.
//
// A model saved at an opset below 17 gets the decomposition back (decompose_layer_norm).
#pragma once

#include <string>
#include <vector>

#include "converter/ir.h"

namespace dl::conv {

// Fuses every matching chain of `g` in place (topological order is kept: the fused node
// takes the place of the chain's last node). Returns one note per fused node, e.g.
// "'/1/LayerNormalization': the decomposed LayerNorm of torch.onnx.export below opset 17
// (nodes '/1/ReduceMean' ... '/1/Add_1') was fused into one LayerNormalization (axis -1,
// epsilon 1e-05), so its scale '1.weight' and bias '1.bias' are trained".
std::vector<std::string> fuse_layer_norms(ir::Graph& g);

// The node sequence torch writes for a LayerNormalization below opset 17 (Constant nodes
// for 2 and epsilon included), named after `ln` ("/1/LayerNormalization" ->
// "/1/LayerNormalization_ReduceMean", ...), so that importing it fuses it back under the
// same name. Throws ModelError naming the node for what the decomposition cannot express:
// a non-negative axis (the rank is not known here), the Mean or InvStdDev outputs.
std::vector<ir::Node> decompose_layer_norm(const ir::Node& ln);

}  // namespace dl::conv
