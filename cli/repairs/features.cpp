// Repair kind features (analysis/repair_list.def): input features scaled, the scaling
// fitted on the training split only (the validation split sees the same map).
#include "cli/repairs/repair.h"

namespace dl::cli::repairs {

RepairChange apply_repair_features(RepairedCase& r, const an::FixAction& a, const RepairInputs& in) {
  const bool minmax = a.value == "minmax";
  r.preprocessing.fit_features(in.data.train,
                               minmax ? rt::Preprocessing::Features::kMinMax : rt::Preprocessing::Features::kStandardize);
  return {-1, "", minmax ? "min-max scale the input features to [0, 1]" : "standardise the input features"};
}

}  // namespace dl::cli::repairs
