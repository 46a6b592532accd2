// Scoring a batch: one JSON record per case (verdict, primary finding, expected result,
// scores, timings), totals over the records, the summary document and the merge of
// shard summaries. Everything works on the JSON records, so a merged summary is scored
// exactly like one run.
//
// Scores of a case with an expected result (expected.fault says whether it is faulty):
//   detected     faulty case, verdict fault
//   false_alarm  non-faulty case (fixed or healthy), verdict fault
//   localized    faulty case with expected nodes: the primary finding's layer nodes hold one
//   root_cause   faulty case with expected root causes: the primary root cause is one
//   as_expected  ran, and: faulty -> detected and neither localized nor root_cause false;
//                non-faulty -> no false alarm. Without expectation: ran and verdict ok.
// A score that does not apply is null. A case that did not run counts as not detected.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "cli/batch_command.h"

namespace dl::cli {

// The summary record of a case: index, name, kind, source, pair, split (null unless the
// manifest names one), model, data, status,
// error, verdict, findings (count), primary {symptom, stage, layer, root_cause, message,
// recommendation, epoch, iteration} or null, expected, scores, training {iterations,
// epochs, stopped_early}, timing {import_s, train_s, analysis_s}, time_to_verdict_s
// (train_s + analysis_s), seconds (wall).
nlohmann::json case_record(const CaseSpec& spec, const CaseOutcome& outcome);

// Recomputes a record's scores from its verdict, primary finding and expectation.
nlohmann::json score_record(const nlohmann::json& record);

// Totals over records: cases, ran, input_errors, crashed, timeouts, faults, faulty
// (expected faulty), detected, localizable, localized, root_cause_cases, root_cause,
// non_faulty, false_alarms, with_expectation, as_expected, unexpected,
// median_time_to_verdict_s (null without a case that ran), intervals {detected,
// localized, root_cause, false_alarms: [low, high] or null}: 95% Wilson score intervals
// of the rates, so that two runs (or a development and a held-out split) can be compared;
// splits {NAME: the same totals over the cases of that split} when a case names a split.
nlohmann::json summary_totals(const nlohmann::json& cases);

// The 95% Wilson score interval of k successes in n trials, as {low, high} in [0, 1];
// {0, 1} when n is 0. Unlike the normal approximation it stays inside [0, 1] and is
// sensible at k = 0 or k = n, where small benchmarks' rates often sit.
std::pair<double, double> wilson_interval(long long k, long long n);

// The version of the summary batch writes (2: with manifest and options); merge reads
// only this one.
inline constexpr int kSummaryVersion = 2;
// The largest manifest a summary may describe: the bound of total_cases and case indices.
inline constexpr uint64_t kMaxCases = 10'000'000;
// The statuses of a case (CaseOutcome::status).
inline constexpr const char* kCaseStatuses[] = {"ok", "input_error", "crashed", "timeout"};

struct SummaryInfo {
  std::string input, detector = "deeplocalize";
  Shard shard;
  uint64_t total_cases = 0;  // cases in the whole manifest (all shards)
  std::string manifest;      // manifest_digest() of the whole manifest
  nlohmann::json options = nlohmann::json::object();  // the batch-wide options (batch_options_record)
  double wall_s = 0;
};
// {tool, version, summary_version, input, detector, shard ({index, count} or null),
//  total_cases, manifest, options, cases, totals, wall_s}
nlohmann::json make_summary(const nlohmann::json& cases, const SummaryInfo& info);

// Checks a summary read back from `file` (cli/summary_check.cpp): every field has the type
// and range batch writes, statuses, verdicts and root causes are known, case indices are
// below total_cases, in the summary's shard and not repeated, and scores and totals are
// those its cases give. Throws ConfigError "FILE: FIELD: problem".
void check_summary(const nlohmann::json& summary, const std::string& file);

// 2 when a case had an input error, 1 when a case is not as expected (a fault without
// expectations), 0 otherwise.
int summary_exit_code(const nlohmann::json& totals);

// Combines shard summaries (cli/batch_merge.cpp): each passes check_summary; all have the
// same version, detector, manifest, total_cases and options, distinct shards of one
// count, no case twice; cases sorted by manifest index, totals recomputed, shard null.
// Throws ConfigError naming the file and the field at fault. `missing` receives how many
// manifest cases no summary holds.
nlohmann::json merge_summaries(const std::vector<nlohmann::json>& summaries, const std::vector<std::string>& files,
                               uint64_t& missing);

double median(std::vector<double> values);

// Verified fixes (cli/batch_fixes.cpp). The last epoch's {loss, metric, metric_name} of a
// report; the best repair of its primary finding {tried, verified, change, root_cause,
// root_cause_matches (an accepted root cause of `expected`), after {loss, metric},
// seconds (wall time of the trials)}, null without --verify-fixes; and the totals over detected faults
// {faults_with_trials, verified, root_cause_matches, compared_with_fixed,
// within_10pct_of_fixed (the repaired model's final metric within 10% of the case's fixed
// version's, or better), median_extra_s (wall time of the trials)}, null when no case tried fixes.
nlohmann::json final_record(const nlohmann::json& report);
nlohmann::json fix_record(const nlohmann::json& report, const nlohmann::json& expected);
nlohmann::json fix_totals(const nlohmann::json& cases);
// A Markdown table of the detected faults' best repairs (empty without trials).
std::string fixes_markdown(const nlohmann::json& cases);

}  // namespace dl::cli
