// Repair kind targets (analysis/repair_list.def): regression targets standardised on the
// training split; the trial's metrics are converted back to the original units.
#include "cli/repairs/repair.h"

namespace dl::cli::repairs {

RepairChange apply_repair_targets(RepairedCase& r, const an::FixAction&, const RepairInputs& in) {
  r.preprocessing.fit_targets(in.data.train);
  return {-1, "", "standardise the regression targets"};
}

}  // namespace dl::cli::repairs
