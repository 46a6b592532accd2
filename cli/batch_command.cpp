#include "cli/batch_command.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <thread>

#include "analysis/baselines.h"
#include "analysis/rule.h"
#include "cli/batch_outputs.h"
#include "cli/batch_scoring.h"
#include "cli/json_input.h"
#include "cli/option_bindings.h"
#include "cli/output.h"
#include "cli/output_guard.h"
#include "converter/errors.h"
#include "runtime/train_config.h"

namespace dl::cli {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string dump(const json& j) { return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n"; }

// Writes the summary files that were asked for.
void write_outputs(const json& summary, const std::string& json_file, const std::string& junit_file,
                   const std::string& md_file) {
  if (!json_file.empty()) write_text_output(json_file, dump(summary));
  if (!junit_file.empty()) write_text_output(junit_file, junit_xml(summary));
  if (!md_file.empty()) write_text_output(md_file, summary_markdown(summary));
}

std::vector<OutputPath> summary_outputs(const std::string& json_file, const std::string& junit_file,
                                        const std::string& md_file) {
  return {{"--json", json_file, true}, {"--junit", junit_file, true}, {"--summary-md", md_file, true}};
}

// --reports DIR: an existing directory, or one that can be made now (not at the first
// report, after cases have run).
void prepare_reports_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (st.type() == fs::file_type::not_found) {
    if (fs::is_symlink(fs::symlink_status(dir, ec)))
      throw ConfigError("--reports " + dir + ": a symbolic link to '" + fs::read_symlink(dir, ec).string() +
                        "', which does not exist");
    fs::create_directories(dir, ec);
    if (ec) throw ConfigError("--reports " + dir + ": cannot create the directory: " + ec.message());
  } else if (ec) {
    throw ConfigError("--reports " + dir + ": " + ec.message());
  } else if (!fs::is_directory(st)) {
    throw ConfigError("--reports " + dir + ": exists and is not a directory");
  }
}

// Every file a batch reads and writes, checked before any case runs (cli/output_guard.h).
// `report_names` are the cases' report file names (report_file_names), in `cases` order.
void check_batch_outputs(const BatchOptions& o, const std::vector<CaseSpec>& cases,
                         const std::vector<std::string>& report_names) {
  std::vector<InputPath> inputs{{"the manifest", o.input}};
  std::error_code ec;
  if (std::filesystem::is_directory(o.input, ec)) inputs.push_back({"the manifest", o.input + "/manifest.json"});
  for (const CaseSpec& c : cases) {
    inputs.push_back({"the model of case '" + c.name + "'", c.options.model});
    inputs.push_back({"the data of case '" + c.name + "'", c.options.data});
  }
  std::vector<OutputPath> outputs = summary_outputs(o.json_file, o.junit_file, o.md_file);
  if (!o.reports_dir.empty())
    for (size_t k = 0; k < cases.size(); ++k)
      outputs.push_back({"--reports (case '" + cases[k].name + "')",
                         (std::filesystem::path(o.reports_dir) / report_names[k]).string()});
  check_outputs(inputs, outputs, o.force);
}

bool stdout_color() { return isatty(1) && !std::getenv("NO_COLOR"); }

// A shard index or count: 0..kMaxShards (--shard-count's range in runtime/option_list.def),
// checked before it is narrowed to int.
constexpr int64_t kMaxShards = 100000;
int shard_number(const std::string& value, const std::string& what) {
  const int64_t v = rt::parse_integer(value, what);
  if (v < 0 || v > kMaxShards)
    throw ConfigError(what + ": " + std::to_string(v) + " is not in 0.." + std::to_string(kMaxShards));
  return static_cast<int>(v);
}
int parse_index(const char* value, const char* name) {
  return shard_number(value, std::string("environment variable ") + name);
}

}  // namespace

json batch_options_record(const BatchOptions& o) {
  return {{"no_stop", o.no_stop},   {"verify_fixes", o.verify_fixes}, {"max_trials", o.max_trials},
          {"trial_budget_s", o.trial_budget_s}, {"timeout_s", o.timeout_s}, {"set", o.settings}};
}

Shard resolve_shard(const std::string& flag, int shard_count, const std::function<const char*(const char*)>& env) {
  Shard s;
  if (!flag.empty()) {
    const size_t slash = flag.find('/');
    if (slash == std::string::npos) throw ConfigError("--shard: '" + flag + "' is not I/N (e.g. 0/4)");
    s.index = shard_number(flag.substr(0, slash), "--shard index");
    s.count = shard_number(flag.substr(slash + 1), "--shard count");
  } else {
    const char* gitlab_total = env("CI_NODE_TOTAL");
    if (shard_count > 0) s.count = shard_count;
    else if (gitlab_total && env("CI_NODE_INDEX")) s.count = parse_index(gitlab_total, "CI_NODE_TOTAL");
    else return s;
    if (const char* k = env("JOB_COMPLETION_INDEX")) {
      s.index = parse_index(k, "JOB_COMPLETION_INDEX");
    } else if (const char* k2 = env("SLURM_ARRAY_TASK_ID")) {
      s.index = parse_index(k2, "SLURM_ARRAY_TASK_ID");
      if (const char* lo = env("SLURM_ARRAY_TASK_MIN")) s.index -= parse_index(lo, "SLURM_ARRAY_TASK_MIN");
    } else if (const char* k3 = env("CI_NODE_INDEX")) {
      s.index = parse_index(k3, "CI_NODE_INDEX") - 1;  // GitLab counts from 1
    } else {
      throw ConfigError("--shard-count: no shard index: set JOB_COMPLETION_INDEX, SLURM_ARRAY_TASK_ID or "
                        "CI_NODE_INDEX, or give --shard I/N");
    }
  }
  if (s.count < 1 || s.index < 0 || s.index >= s.count)
    throw ConfigError("shard " + std::to_string(s.index) + "/" + std::to_string(s.count) +
                      ": the index must be in 0.." + std::to_string(s.count - 1) + " (and the count at least 1)");
  return s;
}

CLI::App* add_batch_command(CLI::App& app, BatchOptions& o) {
  CLI::App* c = app.add_subcommand("batch", "Diagnose many models (a manifest or a directory of cases) into one summary");
  c->add_option("input", o.input, "manifest.json, or a directory: its manifest.json, or sub-folders with model.onnx, "
                                  "data.csv|npz|npy, optional options.json and expected.json")->required();
  c->add_option("--detector", o.detector, "deeplocalize (default) or a Keras baseline: keras-terminate-on-nan, "
                                          "keras-early-stopping-loss, keras-early-stopping-accuracy, keras-union")
      ->check(CLI::IsMember(an::detector_names()));
  bind_option(c, rt::option("jobs"), o.jobs);
  bind_option(c, rt::option("threads"), o.threads);
  c->add_option("--shard", o.shard, "Run shard I of N (0-based): the cases whose manifest index is I modulo N");
  bind_option(c, rt::option("shard_count"), o.shard_count);
  bind_option(c, rt::option("timeout_s"), o.timeout_s);
  c->add_flag("--in-process", o.in_process, "Run cases in threads of this process instead of one child process each "
                                             "(a crash then ends the batch; no --timeout)");
  c->add_option("--json", o.json_file, "Write the JSON summary (every case, scores, totals) to FILE");
  c->add_option("--junit", o.junit_file, "Write JUnit XML (one test case per model) to FILE");
  c->add_option("--summary-md", o.md_file, "Write a Markdown summary (for $GITHUB_STEP_SUMMARY) to FILE");
  c->add_option("--reports", o.reports_dir, "Write each case's JSON report to DIR/NAME.json");
  c->add_option("--set", o.settings, "Override a rule threshold for every case: rule.key=value (repeatable)");
  bind_option(c, rt::option("no_stop"), o.no_stop);
  c->add_flag("--verify-fixes", o.verify_fixes, "Try the candidate repairs of every fault and score the verified ones");
  bind_option(c, rt::option("max_trials"), o.max_trials);
  bind_option(c, rt::option("trial_budget_s"), o.trial_budget_s);
  c->add_flag("-q,--quiet", o.quiet, "Print only the summary, not one line per case");
  c->add_flag("--force", o.force, "Allow an output to overwrite an input (manifest, model, data) or another output");
  return c;
}

CLI::App* add_merge_command(CLI::App& app, MergeOptions& o) {
  CLI::App* c = app.add_subcommand("merge", "Combine the JSON summaries of sharded batches into one");
  c->add_option("summaries", o.inputs, "Summaries written by batch --json")->required();
  c->add_option("--json", o.json_file, "Write the merged JSON summary to FILE");
  c->add_option("--junit", o.junit_file, "Write JUnit XML of the merged summary to FILE");
  c->add_option("--summary-md", o.md_file, "Write a Markdown summary of the merged summary to FILE");
  c->add_flag("-q,--quiet", o.quiet, "Print nothing");
  c->add_flag("--force", o.force, "Allow an output to overwrite one of the summaries read or another output");
  return c;
}

int run_batch(const BatchOptions& o) {
  const auto t0 = Clock::now();
  an::detector_from(o.detector);
  an::Settings checked;  // a bad --set is an error of the batch, not of every case
  for (const std::string& setting : o.settings) checked.set(setting);
  if (o.verify_fixes && o.detector != "deeplocalize")
    throw ConfigError("--verify-fixes needs deeplocalize's own analysis, not the baseline --detector " + o.detector);
  const Shard shard = resolve_shard(o.shard, o.shard_count, [](const char* name) { return std::getenv(name); });
  const std::vector<CaseSpec> all = load_cases(o.input);
  std::vector<CaseSpec> cases;
  for (const CaseSpec& c : all)
    if (static_cast<int>(c.index % static_cast<size_t>(shard.count)) == shard.index) cases.push_back(c);
  for (CaseSpec& c : cases) {
    c.options.detector = o.detector;
    c.options.quiet = true;
    c.options.no_stop = c.options.no_stop || o.no_stop;
    c.options.verify_fixes = c.options.verify_fixes || o.verify_fixes;
    c.options.max_trials = o.max_trials;
    if (o.trial_budget_s > 0) c.options.trial_budget_s = o.trial_budget_s;
    c.options.settings.insert(c.options.settings.end(), o.settings.begin(), o.settings.end());
  }
  if (!o.reports_dir.empty()) prepare_reports_dir(o.reports_dir);
  const std::vector<std::string> all_report_names = report_file_names(all);
  std::vector<std::string> report_names;
  for (const CaseSpec& c : cases) report_names.push_back(all_report_names[c.index]);
  check_batch_outputs(o, cases, report_names);
  const int jobs = o.jobs > 0 ? o.jobs : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));

  size_t width = 0;
  for (const CaseSpec& c : cases) width = std::max(width, c.name.size());
  width = std::min<size_t>(width, 40);
  const bool color = stdout_color();
  json records = json::array();
  // Called in manifest order as cases finish: print the line, keep the record.
  if (o.threads > 0) {
    const std::string w =
        oversubscription_warning(jobs, o.threads, std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
    if (!w.empty()) std::cerr << "deeplocalize batch: " << w << "\n";
  }
  const int threads = case_threads(jobs, o.threads);
  run_cases(cases, jobs, threads, o.timeout_s, o.in_process, [&](size_t k, const CaseOutcome& outcome) {
    records.push_back(case_record(cases[k], outcome));
    if (!o.reports_dir.empty() && outcome.status == "ok")
      write_text_output((std::filesystem::path(o.reports_dir) / report_names[k]).string(), dump(outcome.report));
    if (!o.quiet) std::cout << case_line(records.back(), k + 1, cases.size(), width, color) << std::flush;
  });

  SummaryInfo info;
  info.input = o.input;
  info.detector = o.detector;
  info.shard = shard;
  info.total_cases = all.size();
  info.manifest = manifest_digest(all);
  info.options = batch_options_record(o);
  info.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  const json summary = make_summary(records, info);
  std::cout << summary_text(summary);
  std::cout.flush();
  write_outputs(summary, o.json_file, o.junit_file, o.md_file);
  return summary_exit_code(summary["totals"]);
}

int run_merge(const MergeOptions& o) {
  std::vector<InputPath> inputs;
  for (const std::string& file : o.inputs) inputs.push_back({"the summary", file});
  check_outputs(inputs, summary_outputs(o.json_file, o.junit_file, o.md_file), o.force);
  std::vector<json> summaries;
  for (const std::string& file : o.inputs) summaries.push_back(read_json_file(file));
  uint64_t missing = 0;
  const json merged = merge_summaries(summaries, o.inputs, missing);
  write_outputs(merged, o.json_file, o.junit_file, o.md_file);
  if (!o.quiet) std::cout << summary_text(merged);
  if (missing > 0) {
    std::cerr << "deeplocalize: error: merge: " << missing << " of " << merged["total_cases"].get<uint64_t>()
              << " manifest cases are in none of the summaries (a shard missing?)\n";
    return 2;
  }
  return summary_exit_code(merged["totals"]);
}

}  // namespace dl::cli
