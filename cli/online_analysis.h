// Runs the analysis while the model trains and asks the trainer to stop at the first
// conclusive fault: after the first iteration (a static finding that is certain to
// break training stops it there, with one iteration of dynamic evidence), after any
// non-finite loss, at each epoch end, and every `interval` iterations in long epochs.
// Early in a run it also looks after iterations 2, 4, 8, ... (up to `interval`): a fault
// whose evidence is complete after a few iterations (an exploding learning rate,
// saturated gates) is then reported there rather than at the end of a long first epoch,
// at the cost of a logarithmic number of extra analyses.
#pragma once

#include "analysis/analyzer.h"
#include "runtime/trainer.h"

namespace dl::cli {

class OnlineAnalysis : public rt::TrainListener {
 public:
  OnlineAnalysis(const an::Trace& trace, const an::Settings& settings, bool stop_on_fault, int64_t interval = 200)
      : trace_(trace), settings_(settings), stop_on_fault_(stop_on_fault), interval_(interval) {}

  void after_update(const rt::ExecutionGraph&, const rt::IterationInfo& info) override {
    const bool nonfinite = !(info.loss == info.loss) || info.loss > 3e38 || info.loss < -3e38;
    if (nonfinite || checks_after(info.iteration, interval_)) check();
  }
  // Whether the analysis runs after 0-based `iteration`: iterations 1, 2, 4, 8, ... (up to
  // `interval`, counted from 1), then every `interval`.
  static bool checks_after(int64_t iteration, int64_t interval) {
    const int64_t n = iteration + 1;
    return (n <= interval && (n & (n - 1)) == 0) || n % interval == 0;
  }
  void on_epoch_end(const rt::EpochSummary&) override { check(); }
  bool should_stop() override { return stop_on_fault_ && conclusive_; }
  bool fault_seen() const { return conclusive_; }

 private:
  void check() {
    if (conclusive_) return;
    an::Diagnosis d = an::analyze(trace_, settings_, /*final=*/false);
    for (const an::Finding& f : d.findings)
      if (f.conclusive) conclusive_ = true;
  }

  const an::Trace& trace_;
  const an::Settings& settings_;
  bool stop_on_fault_;
  int64_t interval_;
  bool conclusive_ = false;
};

}  // namespace dl::cli
