// Models as torch.onnx.export writes them by default (eval mode, a fixed batch of the
// example input), adapted for training, with one note per thing the user should know.
//
// What is changed:
//  - a fixed leading dimension of the graph inputs (and outputs) becomes the symbolic
//    batch: users export with a batch of 1 and no dynamic_axes and expect dimension 0 to
//    be the batch. A Reshape whose constant shape starts with that batch size (torch folds
//    `x.view(x.size(0), -1)` into [1, -1]) gets 0 (copy the batch) or -1 there instead.
//    The result is checked by planning the graph for another batch size; an op that still
//    bakes the batch in is a ModelError naming the node and the dynamic_axes export.
//  - Identity aliases of float initializers (an eval-mode export deduplicates identical
//    initializers into them) become initializers of their own, copies of the source: the
//    PyTorch model had separate parameters, so each trains separately ("untied").
// What is only reported (it cannot be undone, or is handled by the ops already):
//  - BatchNormalization in inference mode: trained with batch statistics, as PyTorch's
//    train mode (and Keras' fit) does, its running statistics updated;
//  - BatchNorm folded into Conv ('onnx::Conv_*' weights torch computed at export);
//  - no Dropout in an otherwise eval-mode export;
//  - float initializers that element-wise ops read but no op trains (constant_initializers).
#pragma once

#include <string>
#include <vector>

#include "converter/ir.h"

namespace dl::rt {

struct ExportAdaptation {
  std::vector<std::string> notes;     // one sentence each, for inspect, train's stderr and the report
  std::vector<std::string> rebatched;  // graph inputs whose fixed dimension 0 became the batch
  std::vector<std::string> untied;     // initializers made from Identity aliases
  std::vector<std::string> constants;  // float initializers trained as constants (rt::constant_initializers)
  bool eval_mode = false;              // some sign of an eval-mode export was found
};

// Adapts `model` in place (see above) and appends the notes to model.warnings too.
// Throws ModelError naming the node when a fixed batch cannot be re-planned, or naming a
// trainable initializer (a weight, bias or scale) that holds Inf.
ExportAdaptation adapt_export(ir::Model& model);

// How to export a model for training (the advice the notes and errors end with).
std::string training_export_advice(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs);

}  // namespace dl::rt
