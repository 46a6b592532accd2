// Repair kind optimizer (analysis/repair_list.def): another optimizer with its own
// defaults; gradient clipping is the user's choice and stays.
#include "cli/repairs/repair.h"

namespace dl::cli::repairs {

RepairChange apply_repair_optimizer(RepairedCase& r, const an::FixAction& a, const RepairInputs&) {
  const std::string before = r.config.optimizer.name;
  rt::OptimizerConfig o;
  o.name = a.value;
  o.clipnorm = r.config.optimizer.clipnorm, o.clipvalue = r.config.optimizer.clipvalue;
  r.config.optimizer = o;
  return {-1, "", "optimizer " + before + " -> " + a.value + " (learning rate " + short_number(effective_lr(o)) + ")"};
}

}  // namespace dl::cli::repairs
