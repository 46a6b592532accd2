// `deeplocalize batch` and `deeplocalize merge`: many models, one summary (CI).
// A batch reads its cases from a manifest (or a directory of case folders), runs them
// (in parallel, each in its own process by default), prints one line per case in
// manifest order and a summary, scores them against their expected results and
// writes JSON / JUnit / Markdown summaries. `merge` combines the JSON summaries of
// sharded batches into the summary of one unsharded run.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

#include "cli/train_command.h"

namespace dl::cli {

struct BatchOptions {
  std::string input;  // manifest file, or a directory (its manifest.json, or its case sub-folders)
  std::string detector = "deeplocalize";
  int jobs = 0;              // 0: the number of cores
  int threads = 0;           // compute threads per case; 0: 1 when jobs > 1, else all cores
  std::string shard;         // "I/N", 0-based I
  int shard_count = 0;       // with the index from JOB_COMPLETION_INDEX / SLURM_ARRAY_TASK_ID / CI_NODE_INDEX
  double timeout_s = 0;      // per case; 0: none
  bool in_process = false;   // threads instead of one child process per case
  std::string json_file, junit_file, md_file, reports_dir;
  std::vector<std::string> settings;  // --set, for every case
  bool no_stop = false, quiet = false;
  bool verify_fixes = false;  // try the candidate repairs of every fault
  int64_t max_trials = 12;
  double trial_budget_s = 0;
  bool force = false;  // --force: an output may overwrite an input or another output
};

// What a batch ran with besides the detector, as its summary records it ("options"):
// {no_stop, verify_fixes, max_trials, trial_budget_s, timeout_s, set}. Shards must agree
// on it to be merged.
nlohmann::json batch_options_record(const BatchOptions& options);

struct MergeOptions {
  std::vector<std::string> inputs;
  std::string json_file, junit_file, md_file;
  bool quiet = false, force = false;
};

// One case of a batch, as read from the manifest or directory.
struct CaseSpec {
  size_t index = 0;  // position in the manifest (directory: sorted sub-folder order)
  std::string name, kind, source, pair;
  std::string split;  // "" or the benchmark split the case belongs to (e.g. dev, heldout)
  TrainOptions options;
  nlohmann::json expected;  // null, or {"fault": bool, "root_causes": [...], "nodes": [...], "notes": "..."}
  std::string load_error;   // an input error found while reading the case: it does not run
};

// What running one case produced.
struct CaseOutcome {
  std::string status = "ok";  // ok | input_error | crashed | timeout
  std::string error;          // the message when not ok
  nlohmann::json report;      // the contract's JSON report when ok
  double seconds = 0;         // wall time
};

// Reads the cases of a manifest file, of DIR/manifest.json, or of DIR's sub-folders
// that hold a model.onnx (sorted by name). Throws ConfigError when the manifest or the
// directory cannot be used at all; problems of one case go to its load_error.
std::vector<CaseSpec> load_cases(const std::string& input);

// Maps train options given as a JSON object (options.json, a manifest's "options") onto
// TrainOptions. Unknown keys and wrong types are ConfigErrors naming `where` and the key.
void apply_case_options(const nlohmann::json& options, const std::string& where, TrainOptions& o);

// The file name (NAME.json) of each case's report under --reports, one per case, in
// the cases' order (cli/batch_names.cpp): the case name when it is all letters, digits,
// '-', '_' and '.' (not leading) and at most 100 bytes; otherwise the name with every other
// byte as '_', cut to 100 bytes, and "-" plus 8 hex digits of a hash of the name. A name
// already taken (ignoring case) gets "-INDEX" appended. Computed over the whole manifest,
// so every shard gives a case the same name.
std::vector<std::string> report_file_names(const std::vector<CaseSpec>& cases);
// 16 hex digits identifying a manifest by its cases' names, kinds, sources, pairs and
// expectations (not paths, which differ between machines): shards of one batch agree.
std::string manifest_digest(const std::vector<CaseSpec>& cases);

struct Shard {
  int index = 0, count = 1;
};
// The shard to run: --shard I/N; else, with --shard-count N (or GitLab's CI_NODE_TOTAL),
// the index from JOB_COMPLETION_INDEX, SLURM_ARRAY_TASK_ID (minus SLURM_ARRAY_TASK_MIN)
// or CI_NODE_INDEX (1-based), first set wins; else unsharded. ConfigError when invalid.
Shard resolve_shard(const std::string& flag, int shard_count,
                    const std::function<const char*(const char*)>& getenv_fn);

// Runs the cases (jobs at a time) and calls `done(k, outcome)` for each in index order
// as soon as it and every case before it have finished. One forked child per case
// unless in_process; the timeout needs children. Each case computes on `threads`
// threads (case_threads()); 0 leaves the process' defaults.
using CaseDone = std::function<void(size_t, const CaseOutcome&)>;
std::vector<CaseOutcome> run_cases(const std::vector<CaseSpec>& cases, int jobs, int threads, double timeout_s,
                                   bool in_process, const CaseDone& done);

// The compute threads of each case of a batch: --threads when given, else 1 when
// several cases run at once (they would compete for the cores), else 0 (all cores).
int case_threads(int jobs, int threads);
// A warning when `jobs` cases of `threads` threads each need more threads than the
// machine's `cores` (they then compete for the cores); "" when they fit.
std::string oversubscription_warning(int jobs, int threads, int cores);

CLI::App* add_batch_command(CLI::App& app, BatchOptions& options);
CLI::App* add_merge_command(CLI::App& app, MergeOptions& options);
int run_batch(const BatchOptions& options);
int run_merge(const MergeOptions& options);

}  // namespace dl::cli
