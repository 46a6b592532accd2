// Repair kind batch_size (analysis/repair_list.def): another number of rows per step. A
// batch of one row makes BatchNormalization over dense features output its shift alone
// (each unit's batch variance is 0) and every step as noisy as one sample.
#include "cli/repairs/repair.h"
#include "converter/errors.h"

namespace dl::cli::repairs {

RepairChange apply_repair_batch_size(RepairedCase& r, const an::FixAction& a, const RepairInputs&) {
  if (a.count < 1) throw ConfigError("batch size repair to " + std::to_string(a.count) + " rows (at least 1)");
  const int64_t before = r.config.batch_size;
  r.config.batch_size = a.count;
  return {-1, "", "batch size " + std::to_string(before) + " -> " + std::to_string(a.count)};
}

}  // namespace dl::cli::repairs
