// Widening a dense layer (the `width` repair, analysis/repair_list.def): a hidden layer too
// narrow to carry what the next layer needs (a one-unit bottleneck) gets more units.
// An edit of the imported model, like the activation edits of transform.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "converter/ir.h"

namespace dl::conv {

struct WidenEdit {
  std::string node;           // the layer's dense node (Gemm or MatMul) that got wider
  std::string consumer;       // the next layer's dense node, whose input width grew
  int64_t old_units = 0, new_units = 0;
  std::vector<std::string> layer_params;  // the widened layer's weight and bias (to re-draw)
  std::string consumer_weight;            // the consumer's weight (to re-draw: its fan-in grew)
  std::vector<std::string> per_unit;      // per-unit parameters and statistics between them
                                          // (BatchNormalization, Add biases), padded with
                                          // their identity values
};

// Gives the dense layer made of `layer_nodes` `units` output units and the dense layer
// made of `consumer_nodes` (the only reader of its values: LayerInfo::feeds) as many
// inputs. The new weight rows and columns are zero: the caller re-draws the weights listed
// in the result (rt::reinitialize_params), since both layers' fans change. Between the two
// dense nodes only element-wise steps may stand: activations, Dropout, Identity,
// BatchNormalization and per-unit Add/Sub/Mul/Div constants (padded with 0 for Add/Sub
// and biases, 1 for Mul/Div and scales, as BatchNormalization's running mean 0 and
// variance 1). Stale declared shapes of the values in between are dropped.
// Throws ModelError naming the layer or node when the model does not hold that shape:
// no Gemm/MatMul with a 2-D initializer weight, a weight shared with another node, a
// step in between that is not element-wise, `units` not above the current width; the
// model may then be partly edited (the repairs edit a copy).
WidenEdit widen_dense_layer(ir::Model& model, const std::vector<std::string>& layer_nodes,
                            const std::vector<std::string>& consumer_nodes, int64_t units);

}  // namespace dl::conv
