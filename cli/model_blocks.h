// Blocks of layers that users think of as one unit, found from the program's structure
// (op traits and data flow, never node names), for the inspect and convert views.
#pragma once

#include <string>
#include <vector>

#include "runtime/graph.h"

namespace dl::cli {

// Self-attention: softmax(f(A B)) C, a normalising step between two products of
// activations (not of a weight), together with the projections that feed it and the
// one that reads its result.
struct AttentionBlock {
  int first_layer = 0, last_layer = 0;
  size_t softmax_step = 0;
  int64_t positions = 0;  // length of the normalised axis (the keys)
  int64_t heads = 1;      // score matrices per sample
};

// Attention blocks in program order; planned at batch size 1.
std::vector<AttentionBlock> find_attention_blocks(const rt::ExecutionGraph& g);

}  // namespace dl::cli
