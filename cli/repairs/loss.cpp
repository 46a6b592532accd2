// Repair kind loss (analysis/repair_list.def): another loss function. The model's output
// stays as it is, so the new loss reads probabilities (from_logits false); the trial's
// loss is then not comparable with the faulty run's (judged on the metric).
#include "cli/repairs/repair.h"

namespace dl::cli::repairs {

RepairChange apply_repair_loss(RepairedCase& r, const an::FixAction& a, const RepairInputs&) {
  RepairChange c{-1, "", "loss " + r.config.loss + (r.config.from_logits ? " (from logits)" : "") + " -> " + a.value};
  r.config.loss = a.value;
  r.config.from_logits = false;
  r.loss_changed = true;
  return c;
}

}  // namespace dl::cli::repairs
