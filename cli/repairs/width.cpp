// Repair kind width (analysis/repair_list.def): a dense hidden layer widened to `count`
// units by the converter's graph edit (converter/widen.h); both its weights and those of
// the layer it feeds change shape, so both are drawn again by their new fans (Glorot
// uniform, Keras' default), seeded per layer like the reinitialize repair.
#include "converter/errors.h"
#include "converter/widen.h"
#include "cli/repairs/repair.h"
#include "runtime/param_roles.h"

namespace dl::cli::repairs {

RepairChange apply_repair_width(RepairedCase& r, const an::FixAction& a, const RepairInputs& in) {
  const an::LayerInfo& l = layer_of(in.trace, a.layer);
  if (l.feeds < 0)
    throw ModelError(layer_name(l) + " does not feed a single next layer, so its width cannot change alone");
  const an::LayerInfo& next = layer_of(in.trace, l.feeds);
  ir::Model& m = edit_model(r);
  const conv::WidenEdit e = conv::widen_dense_layer(m, l.nodes, next.nodes, a.count);
  std::vector<std::string> redraw = e.layer_params;
  redraw.push_back(e.consumer_weight);
  rt::reinitialize_params(m, redraw, "glorot_uniform", r.config.seed + 1 + static_cast<uint64_t>(a.layer));
  return layer_change(l, "width " + std::to_string(e.old_units) + " -> " + std::to_string(e.new_units) +
                             " units (weights of " + layer_name(l) + " and " + layer_name(next) + " drawn again)");
}

}  // namespace dl::cli::repairs
