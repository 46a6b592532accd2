// Applying repairs, one file per repair kind: cli/repairs/<stem>.cpp defines
// apply_repair_<stem> for each DL_REPAIR line of analysis/repair_list.def; apply_fix
// (cli/fix_apply.cpp) looks the kind up here and never switches on it.
#pragma once

#include <string>

#include "analysis/trace.h"
#include "cli/fix_trials.h"
#include "runtime/optimizer.h"

namespace dl::cli::repairs {

// What a repair may read besides the case it edits: the trace of the run it repairs
// (its layers) and the loaded case (its training split, to fit preprocessing on).
struct RepairInputs {
  const an::Trace& trace;
  const LoadedCase& data;
};

// Applies one action to `r` (a repair of the run `in.trace`) and says what changed.
// Throws dl::Error when the action cannot apply to this model or data.
using ApplyFn = RepairChange (*)(RepairedCase& r, const an::FixAction& a, const RepairInputs& in);

#define DL_REPAIR(stem, Name, fields, scope, doc) \
  RepairChange apply_repair_##stem(RepairedCase& r, const an::FixAction& a, const RepairInputs& in);
#include "analysis/repair_list.def"
#undef DL_REPAIR

ApplyFn apply_fn(an::FixAction::Kind k);

// Helpers the kinds share.
// The layer `layer` of the trace; ModelError when the model has no such layer.
const an::LayerInfo& layer_of(const an::Trace& trace, int layer);
// The repair's own copy of the model, to edit: the case's model is shared by every trial
// that does not change it (a learning-rate or data repair trains the case's model).
ir::Model& edit_model(RepairedCase& r);
// A change of layer `l` (its index and first node name for the report).
RepairChange layer_change(const an::LayerInfo& l, std::string what);
std::string layer_name(const an::LayerInfo& l);  // "layer 2 (/4/Gemm)"
std::string short_number(double v);  // "%.3g"
double effective_lr(const rt::OptimizerConfig& c);  // the optimizer's default when unset

}  // namespace dl::cli::repairs
