// Repair kind learning_rate (analysis/repair_list.def): the effective learning rate
// (the optimizer's default when the model sets none) times `factor`.
#include "cli/repairs/repair.h"

namespace dl::cli::repairs {

RepairChange apply_repair_learning_rate(RepairedCase& r, const an::FixAction& a, const RepairInputs&) {
  const double before = effective_lr(r.config.optimizer);
  r.config.optimizer.learning_rate = before * a.factor;
  return {-1, "", "learning rate " + short_number(before) + " -> " + short_number(before * a.factor)};
}

}  // namespace dl::cli::repairs
