// Human-readable views of an imported model: the `inspect` summary and the
// imperative program printed by `convert`.
#pragma once

#include <ostream>
#include <string>

#include "converter/ir.h"

namespace dl::cli {

// Writes inputs/outputs with shapes, layers with their nodes and parameter counts, and
// the training configuration found in the metadata.
void print_inspect(const ir::Model& model, std::ostream& out);
// Writes the instrumented program: one line per step with its inputs, op, attributes
// and outputs with shapes (N = batch size), probe points marked.
void print_program(const ir::Model& model, std::ostream& out);

}  // namespace dl::cli
