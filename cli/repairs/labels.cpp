// Repair kind labels (analysis/repair_list.def): class ids mapped onto 0..C-1 in sorted
// order (ids 1..C become 0..C-1); not applicable when there are more ids than classes.
#include <algorithm>

#include "cli/repairs/repair.h"
#include "converter/errors.h"

namespace dl::cli::repairs {

RepairChange apply_repair_labels(RepairedCase& r, const an::FixAction&, const RepairInputs& in) {
  const rt::Dataset& train = in.data.train;
  if (!r.preprocessing.fit_labels(train))
    throw DataError(train.source + ": the class ids cannot be mapped onto 0.." +
                    std::to_string(std::max<int64_t>(train.num_classes - 1, 0)));
  return {-1, "", "map the class ids onto 0.." + std::to_string(train.num_classes - 1)};
}

}  // namespace dl::cli::repairs
