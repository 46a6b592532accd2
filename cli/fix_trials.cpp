#include "cli/fix_trials.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>
#include <mutex>
#include <thread>

#include "converter/errors.h"
#include "converter/transform.h"
#include "runtime/parallel.h"
#include "runtime/threads.h"

namespace dl::cli {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Trial {
  an::FixCandidate candidate;
  RepairedCase repaired;
  std::string error;  // the repair could not be applied or trained
  CaseResult result;
  bool ran = false;
  double seconds = 0;
  int order = 0;  // proposal order over both rounds
};

// The last epoch's means (Keras' history) in the original target units.
an::FixMetrics final_metrics(const CaseResult& r, const rt::Preprocessing& p, const rt::TrainConfig& config) {
  an::FixMetrics m;
  if (!r.info.epoch_loss.empty()) m.loss = p.unscale(config.loss, r.info.epoch_loss.back());
  if (!r.info.epoch_metric.empty()) m.metric = p.unscale(r.info.metric_name, r.info.epoch_metric.back());
  return m;
}

class TrialRunner {
 public:
  TrialRunner(const LoadedCase& c, const TrainOptions& o, bool verbose, Clock::time_point deadline, int jobs)
      : case_(c), options_(o), verbose_(verbose), deadline_(deadline), jobs_(jobs) {
    options_.trace_max_mb = std::min(o.trace_max_mb, 32.0);  // several trials hold traces at once
    options_.no_stop = false;                                // a trial ends at its first fault
    options_.save_file.clear();
    options_.trace_file.clear();
  }

  // Runs the trials that have a repaired case, `jobs` at a time.
  void run(std::vector<Trial>& trials) {
    std::vector<Trial*> todo;
    for (Trial& t : trials)
      if (t.error.empty()) todo.push_back(&t);
    if (todo.empty()) return;
    std::atomic<size_t> next{0};
    std::atomic<size_t> done{0};
    const int workers = std::max(1, std::min<int>(jobs_, static_cast<int>(todo.size())));
    std::vector<std::thread> threads;
    for (int w = 0; w < workers; ++w)
      threads.emplace_back([&] {
        for (size_t i = next++; i < todo.size(); i = next++) {
          if (!stop_.load()) run_one(*todo[i]);
          ++done;
        }
      });
    while (done.load() < todo.size()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (Clock::now() > deadline_ || g_interrupted.load()) stop_.store(true);
    }
    for (std::thread& t : threads) t.join();
  }

  bool budget_exhausted() const { return stop_.load(); }

 private:
  void run_one(Trial& t) {
    const auto t0 = Clock::now();
    try {
      rt::Dataset train = case_.train, validation = case_.validation;
      t.repaired.preprocessing.apply(train);
      if (validation.n > 0) t.repaired.preprocessing.apply(validation);
      CaseRunOptions run;
      run.progress = false;
      run.handle_signals = false;
      run.trial = true;
      run.interrupt = &stop_;
      t.result = train_case(t.repaired.model, t.repaired.config, std::move(train), std::move(validation),
                            case_.settings, options_, run);
      t.ran = true;
    } catch (const std::exception& e) {
      t.error = e.what();
    }
    t.seconds = since(t0);
    if (verbose_) {
      std::lock_guard<std::mutex> lock(print_);
      std::cerr << "  tried: " << describe(t.repaired) << " (" << std::lround(t.seconds * 10) / 10.0
                << " s)\n";
    }
  }

  const LoadedCase& case_;
  TrainOptions options_;
  bool verbose_;
  Clock::time_point deadline_;
  int jobs_;
  std::atomic<bool> stop_{false};
  std::mutex print_;
};

std::vector<Trial> prepare(const std::vector<an::FixCandidate>& candidates, size_t limit, const RepairedCase& base,
                           const an::Trace& trace, const LoadedCase& c, an::RootCause inherited, int first_order) {
  std::vector<Trial> trials;
  for (const an::FixCandidate& cand : candidates) {
    if (trials.size() >= limit) break;
    Trial t;
    t.candidate = cand;
    t.order = first_order + static_cast<int>(trials.size());
    if (inherited != an::RootCause::kUnknown) t.candidate.root_cause = inherited;
    try {
      t.repaired = apply_fix(base, cand.actions, trace, c);
      t.repaired.root_cause = t.candidate.root_cause;
    } catch (const std::exception& e) {
      continue;  // not applicable to this model (e.g. no class ids to remap): not a trial
    }
    trials.push_back(std::move(t));
  }
  return trials;
}

an::FixOutcome outcome_of(const Trial& t, const CaseResult& faulty, const an::FixMetrics& before, bool higher) {
  an::FixOutcome o;
  o.change = describe(t.repaired);
  o.actions = t.repaired.actions;
  o.root_cause = t.candidate.root_cause;
  o.metric_name = faulty.info.metric_name;
  o.before = before;
  o.seconds = t.seconds;
  o.loss_comparable = !t.repaired.loss_changed;
  o.order = t.order;
  if (!t.ran) {
    o.reason = "could not train: " + t.error;
    return o;
  }
  o.after = final_metrics(t.result, t.repaired.preprocessing, t.repaired.config);
  if (t.repaired.preprocessing.targets) {
    o.targets_scaled = true;
    o.after_train_units = final_metrics(t.result, rt::Preprocessing{}, t.repaired.config);
  }
  if (t.result.info.metric_name != faulty.info.metric_name) o.after.metric = std::numeric_limits<double>::quiet_NaN();
  o.iterations = t.result.info.iterations;
  for (size_t e = 0; e < t.result.info.epoch_loss.size(); ++e) {
    o.epoch_loss.push_back(t.repaired.preprocessing.unscale(t.repaired.config.loss, t.result.info.epoch_loss[e]));
    o.epoch_metric.push_back(t.repaired.preprocessing.unscale(t.result.info.metric_name, t.result.info.epoch_metric[e]));
  }
  for (const an::Finding& f : t.result.diagnosis.findings) o.remaining.push_back(f.symptom);
  const an::TrialJudgement j = an::judge_trial(faulty.diagnosis, before, t.result.diagnosis, o.after, higher,
                                               !t.result.interrupted, !t.repaired.loss_changed);
  o.verified = j.verified;
  o.reason = j.reason;
  if (!t.repaired.preprocessing.empty()) o.python_code = t.repaired.preprocessing.python_code();
  return o;
}

const Trial* best_verified(const std::vector<Trial>& trials, const std::vector<an::FixOutcome>& outcomes) {
  for (const an::FixOutcome& o : outcomes) {
    if (!o.verified) return nullptr;
    for (const Trial& t : trials)
      if (t.ran && t.repaired.actions == o.actions) return &t;
  }
  return nullptr;
}

void export_fixed(const LoadedCase& c, const TrainOptions& o, const std::vector<Trial>& trials,
                  const an::FixOutcome* best, bool quiet) {
  if (!best || !best->verified) {
    std::cerr << "deeplocalize: no verified fix, so no repaired model was written to " << o.export_fixed << "\n";
    return;
  }
  for (const Trial& t : trials) {
    if (!t.ran || t.repaired.actions != best->actions) continue;
    RepairedCase r = t.repaired;
    record_in_metadata(r, c.preprocessing);
    conv::save_model(r.model, o.export_fixed);
    if (!quiet) {
      std::cerr << "deeplocalize: wrote the repaired model (" << best->change << ") to " << o.export_fixed << "\n";
      if (!r.preprocessing.empty())
        std::cerr << "The data preprocessing is recorded in its metadata (" << rt::kPreprocessingKey
                  << "); add it to your own pipeline:\n" << r.preprocessing.python_code() << "\n";
    }
    return;
  }
}

}  // namespace

void verify_fixes(const LoadedCase& c, const TrainOptions& o, const CaseRunOptions& run, CaseResult& faulty) {
  if (!faulty.diagnosis.fault || faulty.diagnosis.findings.empty()) return;
  const auto t0 = Clock::now();
  const bool verbose = run.progress && !o.quiet;
  const double budget = o.trial_budget_s > 0 ? o.trial_budget_s : std::max(60.0, 20.0 * faulty.info.train_s);
  const int saved_threads = rt::compute_threads();
  const int jobs = o.trial_jobs > 0 ? static_cast<int>(o.trial_jobs) : saved_threads;
  const bool higher = faulty.trace.header.metric_higher_is_better;
  an::FixMetrics before;
  if (!faulty.info.epoch_loss.empty()) before.loss = faulty.info.epoch_loss.back();
  if (!faulty.info.epoch_metric.empty()) before.metric = faulty.info.epoch_metric.back();

  const size_t max_trials = static_cast<size_t>(std::max<int64_t>(o.max_trials, 1));
  const size_t first_round = max_trials - std::min<size_t>(3, max_trials / 3);
  const RepairedCase base = unrepaired(c);
  std::vector<Trial> trials = prepare(an::propose_fixes(faulty.diagnosis, faulty.trace), first_round, base,
                                      faulty.trace, c, an::RootCause::kUnknown, 0);
  if (trials.empty()) return;
  if (verbose)
    std::cerr << "deeplocalize: trying " << trials.size() << " repairs (" << std::min<size_t>(jobs, trials.size())
              << " at a time, budget " << std::lround(budget) << " s)\n";
  if (jobs > 1) rt::set_compute_threads(1);
  TrialRunner runner(c, o, verbose, t0 + std::chrono::milliseconds(static_cast<int64_t>(budget * 1000)), jobs);
  runner.run(trials);

  std::vector<an::FixOutcome> outcomes;
  for (const Trial& t : trials)
    if (t.ran || !t.error.empty()) outcomes.push_back(outcome_of(t, faulty, before, higher));
  an::rank_fixes(outcomes, higher);

  // Round 2: the best verified fix left findings; stack their repairs on top of it.
  const Trial* best = best_verified(trials, outcomes);
  if (best && best->result.diagnosis.fault && !runner.budget_exhausted() && trials.size() < max_trials) {
    std::vector<Trial> more = prepare(an::propose_fixes(best->result.diagnosis, best->result.trace, best->repaired.actions),
                                      max_trials - trials.size(), best->repaired, best->result.trace, c,
                                      best->candidate.root_cause, 1000);
    runner.run(more);
    for (const Trial& t : more)
      if (t.ran || !t.error.empty()) outcomes.push_back(outcome_of(t, faulty, before, higher));
    an::rank_fixes(outcomes, higher);
    for (Trial& t : more) trials.push_back(std::move(t));
  }
  if (jobs > 1) rt::set_compute_threads(saved_threads);

  an::Finding& primary = faulty.diagnosis.findings.front();
  bool guess_verified = false;
  for (const an::FixOutcome& x : outcomes) guess_verified = guess_verified || (x.verified && x.root_cause == primary.root_cause);
  if (!outcomes.empty() && outcomes.front().verified && !guess_verified &&
      outcomes.front().root_cause != an::RootCause::kUnknown) {
    // No repair of the first guess works but another one does: that is the stronger
    // evidence of what is wrong.
    primary.evidence["root_cause_before_fixes"] = an::root_cause_name(primary.root_cause);
    primary.root_cause = outcomes.front().root_cause;
    primary.recommendation = outcomes.front().change + " (verified on this model; the first guess was: " +
                             primary.recommendation + ")";
  }
  primary.fixes = std::move(outcomes);
  if (!o.export_fixed.empty()) export_fixed(c, o, trials, primary.fixes.empty() ? nullptr : &primary.fixes.front(), o.quiet);
}

}  // namespace dl::cli
