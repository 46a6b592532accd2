// Ops that run two ONNX nodes as one step, made by the planner (runtime/graph_fuse.cpp),
// never by the registry: a model cannot name them.
#pragma once

#include <memory>
#include <string>

#include "runtime/op.h"

namespace dl::rt {

// A MatMul with the nodes around it as one step (runtime/ops/mat_mul.cpp), `node` a
// MatMul node:
// - add_name not empty: node's input 2 is the bias C (N values, one per output column)
//   that the Add named add_name added: MatMul(A, B) + C;
// - transpose_name not empty: node's input 1 is the matrix W [N, K] the Transpose named
//   transpose_name transposed (perm [1, 0]): MatMul(A, W^T).
std::unique_ptr<Op> make_mat_mul_fused(const ir::Node& node, const std::string& add_name,
                                       const std::string& transpose_name);

}  // namespace dl::rt
