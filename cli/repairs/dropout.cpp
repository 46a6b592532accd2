// Repair kind dropout (analysis/repair_list.def): the drop rate of the layer's Dropout
// steps set to `factor`, the proportion DROPPED (0 turns them into the identity while
// training). From opset 12 the rate is an input: a new scalar initializer of its own, so
// that a constant shared with other nodes keeps its value; before 12, the attribute.
#include <algorithm>

#include "cli/repairs/repair.h"
#include "converter/errors.h"

namespace dl::cli::repairs {

RepairChange apply_repair_dropout(RepairedCase& r, const an::FixAction& a, const RepairInputs& in) {
  const an::LayerInfo& l = layer_of(in.trace, a.layer);
  if (!(a.factor >= 0 && a.factor < 1))
    throw ConfigError("dropout repair of " + layer_name(l) + ": rate " + short_number(a.factor) + " is not in [0, 1)");
  const auto in_layer = [&](const ir::Node& n) {
    return n.op_type == "Dropout" && n.domain.empty() && std::find(l.nodes.begin(), l.nodes.end(), n.name) != l.nodes.end();
  };
  const ir::Model& shared = *r.model;
  if (std::none_of(shared.graph.nodes.begin(), shared.graph.nodes.end(), in_layer))
    throw ModelError(layer_name(l) + " has no Dropout node to change");
  ir::Model& m = edit_model(r);
  const float rate = static_cast<float>(a.factor);
  int changed = 0;
  for (ir::Node& n : m.graph.nodes) {
    if (!in_layer(n)) continue;
    ++changed;
    if (n.since_version != 0 && n.since_version < 12) {
      ir::Attribute& ratio = n.attrs["ratio"];
      ratio.kind = ir::Attribute::Kind::kFloat;
      ratio.f = rate;
      continue;
    }
    std::string name = n.name + "_repaired_ratio";
    while (m.graph.initializers.count(name)) name += "_";
    ir::TensorData t;
    t.name = name;
    t.dtype = ir::DType::kFloat32;
    t.floats = {rate};  // a scalar: no dims
    m.graph.initializers[name] = std::move(t);
    if (n.inputs.size() < 2) n.inputs.resize(2);
    n.inputs[1] = name;
  }
  return layer_change(l, "dropout rate -> " + short_number(a.factor) +
                             (changed > 1 ? " (" + std::to_string(changed) + " Dropout steps)" : ""));
}

}  // namespace dl::cli::repairs
