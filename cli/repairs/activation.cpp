// Repair kind activation (analysis/repair_list.def): the layer's activation set to the op
// type `value` by the converter's graph edit, described from the edit's fields.
#include "cli/repairs/repair.h"

#include <cmath>

#include "converter/errors.h"
#include "converter/transform.h"

namespace dl::cli::repairs {

RepairChange apply_repair_activation(RepairedCase& r, const an::FixAction& a, const RepairInputs& in) {
  using Edit = conv::ActivationEdit::Kind;
  const an::LayerInfo& l = layer_of(in.trace, a.layer);
  const conv::ActivationEdit e = conv::edit_layer_activation(edit_model(r), l.nodes, a.value);
  switch (e.kind) {
    case Edit::kUnchanged: break;
    case Edit::kInserted: return layer_change(l, "add " + e.new_op);
    case Edit::kRemoved: return layer_change(l, "remove " + e.old_op);
    case Edit::kReplaced:
      return layer_change(l, e.old_op + " -> " + e.new_op +
                                 (std::isnan(e.alpha) ? "" : " (alpha " + conv::attr_number(e.alpha) + ")"));
  }
  // Not a repair: the proposer offers only activations the layer lacks.
  throw ModelError(layer_name(l) + " already has activation " + a.value);
}

}  // namespace dl::cli::repairs
