// Ops that run two ONNX nodes as one step, made by the planner (runtime/graph_fuse.cpp),
// never by the registry: a model cannot name them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/op.h"

namespace dl::rt {

// What a MatMul step runs besides the product (runtime/ops/mat_mul.cpp), each by its
// node's name (empty: not fused):
// - bias_add: the Add of a bias C (N values, one per output column), the MatMul node's
//   input 2: MatMul(A, B) + C;
// - transpose_a, transpose_b: the Transpose (perm_a, perm_b) whose input the MatMul node
//   reads as input 0 (1): MatMul(Transpose(X), B), read in place;
// - transpose_y: the Transpose (perm_y, keeping the last axis last) of the product, whose
//   output the MatMul node writes in place.
struct MatMulFusion {
  std::string bias_add, transpose_a, transpose_b, transpose_y;
  std::vector<int64_t> perm_a, perm_b, perm_y;
};
std::unique_ptr<Op> make_mat_mul_fused(const ir::Node& node, const MatMulFusion& fused);

}  // namespace dl::rt
