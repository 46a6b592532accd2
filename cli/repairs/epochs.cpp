// Repair kind epochs (analysis/repair_list.def): a longer run, `factor` times the epochs
// and at least `count` (a run of 1 epoch times 3 is still too short to judge a trend).
#include <algorithm>
#include <cmath>

#include "cli/repairs/repair.h"

namespace dl::cli::repairs {

RepairChange apply_repair_epochs(RepairedCase& r, const an::FixAction& a, const RepairInputs&) {
  const int64_t before = r.config.epochs;
  r.config.epochs = std::max<int64_t>(a.count, static_cast<int64_t>(std::llround(double(before) * a.factor)));
  return {-1, "", "epochs " + std::to_string(before) + " -> " + std::to_string(r.config.epochs)};
}

}  // namespace dl::cli::repairs
