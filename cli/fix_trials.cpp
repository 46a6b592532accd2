#include "cli/fix_trials.h"

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <set>
#include <iostream>
#include <limits>
#include <mutex>
#include <thread>
#include <tuple>

#include "converter/errors.h"
#include "converter/transform.h"
#include "runtime/data/dataset.h"
#include "runtime/parallel.h"
#include "runtime/threads.h"

namespace dl::cli {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

constexpr int kMaxDepth = 3;              // repairs stacked into one, at most
constexpr size_t kStackedPerBase = 4;     // repairs stacked on one base per round
// Without a validation split, trials of a classification task with at least this many
// rows train on four fifths of them and are checked on the fifth held out (stratified).
constexpr int64_t kHoldOutMinRows = 100;
constexpr double kHoldOutFraction = 0.2;

struct Trial {
  an::FixCandidate candidate;
  RepairedCase repaired;
  std::string error;  // the repair could not be applied or trained
  CaseResult result;
  bool ran = false;
  double seconds = 0;
  int order = 0;  // index in the list of all trials (proposal order)
  int depth = 1;  // candidates stacked in this repair
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
    std::vector<int64_t> classes;
    if (c.validation.n > 0) {
      classes = rt::row_classes(c.validation);
    } else if (c.train.n >= kHoldOutMinRows) {
      classes = rt::row_classes(c.train);
      if (!classes.empty()) {
        std::tie(held_train_, held_validation_) = rt::split_holdout(c.train, classes, kHoldOutFraction, c.config.seed);
        train_ = &held_train_, validation_ = &held_validation_;
        classes = rt::row_classes(held_validation_);
      }
    }
    if (!classes.empty()) {
      held_out_.rows = static_cast<int64_t>(std::count_if(classes.begin(), classes.end(), [](int64_t k) { return k >= 0; }));
      held_out_.chance = rt::majority_share(classes);
    }
  }

  // The held-out rows every trial is checked on (rows 0: none; accuracy unset).
  const an::HeldOutAccuracy& held_out() const { return held_out_; }

  // Runs the trials that have a repaired case, `jobs` at a time.
  void run(const std::vector<Trial*>& trials) {
    std::vector<Trial*> todo;
    for (Trial* t : trials)
      if (t->error.empty()) todo.push_back(t);
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
      rt::Dataset train = *train_, validation = *validation_;
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
  // The case's split, or (held_*) a hold-out of its training rows.
  const rt::Dataset* train_ = &case_.train;
  const rt::Dataset* validation_ = &case_.validation;
  rt::Dataset held_train_, held_validation_;
  an::HeldOutAccuracy held_out_;
};

// The same repair reached in another order (scaling then an activation, or the reverse).
bool same_actions(const std::vector<an::FixAction>& a, const std::vector<an::FixAction>& b) {
  if (a.size() != b.size()) return false;
  for (const an::FixAction& x : a)
    if (std::find(b.begin(), b.end(), x) == b.end()) return false;
  return true;
}

// Applies each candidate on top of `base` (its run's trace indexes the layers) and appends
// the trials to `all`; candidates that do not apply to this model are not trials.
std::vector<Trial*> prepare(const std::vector<an::FixCandidate>& candidates, size_t limit, const RepairedCase& base,
                            const an::Trace& trace, const LoadedCase& c, an::RootCause inherited, int depth,
                            std::deque<Trial>& all) {
  std::vector<Trial*> added;
  for (const an::FixCandidate& cand : candidates) {
    if (added.size() >= limit) break;
    Trial t;
    t.candidate = cand;
    if (inherited != an::RootCause::kUnknown) t.candidate.root_cause = inherited;
    t.order = static_cast<int>(all.size());
    t.depth = depth;
    try {
      t.repaired = apply_fix(base, cand.actions, trace, c);
      t.repaired.root_cause = t.candidate.root_cause;
    } catch (const std::exception&) {
      continue;  // not applicable to this model (e.g. no class ids to remap)
    }
    bool seen = false;  // the same repair reached from another base
    for (const Trial& other : all) seen = seen || same_actions(other.repaired.actions, t.repaired.actions);
    if (seen) continue;
    all.push_back(std::move(t));
    added.push_back(&all.back());
  }
  return added;
}

an::FixOutcome outcome_of(const Trial& t, const CaseResult& faulty, const an::FixMetrics& before, bool higher,
                          const an::HeldOutAccuracy& held_out) {
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
    o.status = an::TrialStatus::kCouldNotTrain;
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
  if (held_out.rows > 0 && t.result.info.metric_name == "accuracy" && !t.result.info.epoch_val_metric.empty()) {
    o.held_out = held_out;
    o.held_out.accuracy = t.result.info.epoch_val_metric.back();
  }
  // How far the trial's own run got: its last loss over its constant prediction's, unless
  // its accuracy separates the classes (VerifyMargins::separated).
  const an::VerifyMargins margins;
  const an::LearningProgress p = an::AnalysisContext(t.result.trace, an::Settings(), true).progress();
  const bool separates = p.chance_metric >= 0 && p.chance_metric < 1 &&
                         (p.last_metric - p.chance_metric) / (1 - p.chance_metric) >= margins.separated;
  const double share = p.constant_loss > 0 && p.loss_finite && !separates ? p.last_loss / p.constant_loss
                                                                          : std::numeric_limits<double>::quiet_NaN();
  // On multi-label targets Keras' accuracy is categorical (the highest output against the
  // row's first label): it does not measure the task, so the loss alone judges the trial.
  an::FixMetrics judged_before = before, judged_after = o.after;
  if (an::ru::multilabel_targets(t.result.trace.header))
    judged_before.metric = judged_after.metric = std::numeric_limits<double>::quiet_NaN();
  const an::TrialJudgement j = an::judge_trial(faulty.diagnosis, judged_before, t.result.diagnosis, judged_after,
                                               higher, !t.result.interrupted, !t.repaired.loss_changed, margins,
                                               share, o.held_out);
  o.verified = j.verified;
  o.status = j.status;
  o.reason = j.reason;
  if (!t.repaired.preprocessing.empty()) o.python_code = t.repaired.preprocessing.python_code();
  return o;
}

// The trial to build on next: one whose repair removed the primary symptom (verified, or
// revealing another fault), not yet built on, with room for more changes; verified ones
// first, then the better result.
const Trial* next_base(const std::deque<Trial>& all, const std::vector<an::FixOutcome>& outcomes,
                       const std::set<int>& expanded) {
  const an::FixOutcome* pick = nullptr;
  const Trial* base = nullptr;
  for (const an::FixOutcome& o : outcomes) {  // ranked: verified first, then better results
    if (expanded.count(o.order) || o.status == an::TrialStatus::kSymptomRemains ||
        o.status == an::TrialStatus::kCouldNotTrain || o.status == an::TrialStatus::kCutShort)
      continue;
    const Trial& t = all[static_cast<size_t>(o.order)];
    if (!t.ran || t.depth >= kMaxDepth) continue;
    if (!pick || (o.verified && !pick->verified)) pick = &o, base = &t;
    if (pick->verified) break;
  }
  return base;
}

void export_fixed(const LoadedCase& c, const TrainOptions& o, const std::deque<Trial>& trials,
                  const an::FixOutcome* best, bool quiet) {
  if (!best || !best->verified) {
    std::cerr << "deeplocalize: no verified fix, so no repaired model was written to " << o.export_fixed << "\n";
    return;
  }
  for (const Trial& t : trials) {
    if (!t.ran || !same_actions(t.repaired.actions, best->actions)) continue;
    RepairedCase r = t.repaired;
    record_in_metadata(r, c.preprocessing);
    conv::save_model(*r.model, o.export_fixed);
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
  if (!faulty.diagnosis.fault || faulty.diagnosis.findings.empty()) {
    if (!o.export_fixed.empty())
      std::cerr << "deeplocalize: no fault found, so no repaired model was written to " << o.export_fixed << "\n";
    return;
  }
  const auto t0 = Clock::now();
  faulty.diagnosis.findings.front().fixes_attempted = true;
  struct Elapsed {  // the wall time of the trials, whatever way this returns
    CaseResult& r;
    Clock::time_point t0;
    ~Elapsed() { r.info.fixes_s = since(t0); }
  } elapsed{faulty, t0};
  const bool verbose = run.progress && !o.quiet;
  const double budget = o.trial_budget_s > 0 ? o.trial_budget_s : std::max(60.0, 20.0 * faulty.info.train_s);
  const int saved_threads = rt::compute_threads();
  const int jobs = o.trial_jobs > 0 ? static_cast<int>(o.trial_jobs) : saved_threads;
  const bool higher = faulty.trace.header.metric_higher_is_better;
  an::FixMetrics before;
  if (!faulty.info.epoch_loss.empty()) before.loss = faulty.info.epoch_loss.back();
  if (!faulty.info.epoch_metric.empty()) before.metric = faulty.info.epoch_metric.back();

  const size_t max_trials = static_cast<size_t>(std::max<int64_t>(o.max_trials, 1));
  // Round 1 leaves a third of the trials for stacking repairs on the promising ones.
  const size_t first_round = max_trials - std::min<size_t>(4, max_trials / 3);
  std::deque<Trial> all;
  std::vector<Trial*> round = prepare(an::propose_fixes(faulty.diagnosis, faulty.trace), first_round, unrepaired(c),
                                      faulty.trace, c, an::RootCause::kUnknown, 1, all);
  if (round.empty()) {
    faulty.diagnosis.findings.front().repair_localization = an::localize_by_repair(faulty.diagnosis.findings.front());
    if (!o.export_fixed.empty())
      std::cerr << "deeplocalize: no repair applies to this model, so nothing was written to " << o.export_fixed << "\n";
    return;
  }
  if (verbose)
    std::cerr << "deeplocalize: trying repairs (" << std::min<size_t>(jobs, round.size()) << " at a time, at most "
              << max_trials << ", budget " << std::lround(budget) << " s)\n";
  if (jobs > 1) rt::set_compute_threads(1);
  TrialRunner runner(c, o, verbose, t0 + std::chrono::milliseconds(static_cast<int64_t>(budget * 1000)), jobs);
  std::vector<an::FixOutcome> outcomes;
  std::set<int> expanded;
  while (!round.empty()) {
    runner.run(round);
    for (const Trial* t : round)
      if (t->ran || !t->error.empty()) outcomes.push_back(outcome_of(*t, faulty, before, higher, runner.held_out()));
    an::rank_fixes(outcomes, higher, !an::ru::multilabel_targets(faulty.trace.header));
    round.clear();
    // Stack: a repair that removed the primary symptom but left (or revealed) other
    // faults gets the candidates for those; a clean one, the rest of the first diagnosis'.
    while (round.empty() && all.size() < max_trials && !runner.budget_exhausted()) {
      const Trial* base = next_base(all, outcomes, expanded);
      if (!base) break;
      expanded.insert(base->order);
      const an::Diagnosis& d = base->result.diagnosis.fault ? base->result.diagnosis : faulty.diagnosis;
      round = prepare(an::propose_fixes(d, base->result.trace, base->repaired.actions),
                      std::min<size_t>(kStackedPerBase, max_trials - all.size()), base->repaired, base->result.trace,
                      c, base->candidate.root_cause, base->depth + 1, all);
    }
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
  primary.repair_localization = an::localize_by_repair(primary);
  if (!o.export_fixed.empty()) export_fixed(c, o, all, primary.fixes.empty() ? nullptr : &primary.fixes.front(), o.quiet);
}

}  // namespace dl::cli
