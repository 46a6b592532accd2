// Verified fixes (issue 9), the running side: candidate repairs (analysis/fixes.h) applied
// to the loaded case, retrained and judged, the best one exported.
//
// Each trial starts from the faulty run's state: the same imported model (initial
// weights), the same data split already in memory and the same seed, with the repair
// applied; it trains the configured length (epochs x batches: the length the faulty run
// would have had without stopping at its fault; more for the "more epochs" repair) with
// probes on, and stops at its own first conclusive fault. Trials run in parallel, one
// per core (single-threaded kernels each), within a wall-clock budget: by default 20x
// the faulty run's training time, at least 60 s (--trial-budget). A first round tries the
// candidates of the faulty diagnosis; when its best verified fix still leaves findings, a
// second round stacks the candidates of what remains on top of it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "analysis/fixes.h"
#include "cli/train_command.h"
#include "converter/ir.h"
#include "runtime/data/preprocess.h"
#include "runtime/train_config.h"

namespace dl::cli {

// One change a repair made, as values (describe() makes the text of a whole repair).
struct RepairChange {
  int layer = -1;          // the layer it edits; -1: the training configuration or the data
  std::string layer_node;  // that layer's first node, to name it
  std::string what;        // what changed there: "learning rate 1 -> 0.01", "add Softmax"
};

// A repaired case: model, configuration and preprocessing with some fix applied.
struct RepairedCase {
  std::shared_ptr<const ir::Model> model;  // the case's own until a repair edits it (then a copy)
  rt::TrainConfig config;
  rt::Preprocessing preprocessing;  // fitted on the case's training split (applied to copies)
  std::vector<an::FixAction> actions;
  std::vector<RepairChange> changes;  // one per action
  an::RootCause root_cause = an::RootCause::kUnknown;
  bool loss_changed = false;
};

// Applies `actions` on top of `base` (layers indexed as in `trace`, the run of `base`).
// Throws dl::Error when an action cannot apply to this model (the trial is then reported
// as not applicable).
RepairedCase apply_fix(const RepairedCase& base, const std::vector<an::FixAction>& actions, const an::Trace& trace,
                       const LoadedCase& data);

// One line for all the changes of a repair.
std::string describe(const RepairedCase& r);

// The faulty case as a RepairedCase without changes.
RepairedCase unrepaired(const LoadedCase& c);

// Writes the repaired model's metadata: the full training configuration and the
// preprocessing (`already_applied`, the original model's, followed by the repair's).
void record_in_metadata(RepairedCase& r, const rt::Preprocessing& already_applied);

// Tries the candidate repairs for `faulty` (a run of `c`), attaches the ranked outcomes to
// the primary finding (faulty.diagnosis.findings[0].fixes), lets a verified fix of another
// root cause correct the finding's root cause, writes --export-fixed, and refreshes
// faulty.report. Does nothing for a healthy run.
void verify_fixes(const LoadedCase& c, const TrainOptions& options, const CaseRunOptions& run, CaseResult& faulty);

}  // namespace dl::cli
