// Repair kind reinitialize (analysis/repair_list.def): the layer's weights drawn again by
// their fans (the ops' parameter roles), biases zero; seeded per layer so that trials are
// deterministic and two layers do not get the same draw.
#include "cli/repairs/repair.h"
#include "runtime/param_roles.h"

namespace dl::cli::repairs {

RepairChange apply_repair_reinitialize(RepairedCase& r, const an::FixAction& a, const RepairInputs& in) {
  const an::LayerInfo& l = layer_of(in.trace, a.layer);
  rt::reinitialize_params(edit_model(r), l.params, a.value, r.config.seed + 1 + static_cast<uint64_t>(a.layer));
  return layer_change(l, "re-initialise (" + a.value + " weights, zero biases)");
}

}  // namespace dl::cli::repairs
