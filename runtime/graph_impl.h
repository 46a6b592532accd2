// Internal to graph*.cpp: the initializer conversions and the choice of trainable
// parameters that planning (graph_plan.cpp) shares with graph_params.cpp. Not part of the
// runtime's interface.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "converter/ir.h"
#include "runtime/op.h"
#include "runtime/tensor.h"

namespace dl::rt::graph_detail {

// The runtime type holding an ONNX element type: float32 for floats, int64 for integers
// and bools. Throws ModelError naming `what` for any other type.
DType runtime_dtype(ir::DType t, const std::string& what);
// An initializer as a runtime tensor (float64 narrowed to float32, int32/bool widened).
Tensor tensor_from(const ir::TensorData& d);

// Trainable parameters, as the ops that read them say (runtime/param_roles.h): weights,
// embeddings, biases and scales, and biases added right after a node with one.
// `ops` holds one op per node of `g`, in the same order.
std::set<std::string> trainable_initializers(const ir::Graph& g, const std::vector<std::unique_ptr<Op>>& ops);

}  // namespace dl::rt::graph_detail
