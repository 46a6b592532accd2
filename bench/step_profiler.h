// Wall time per program step (forward and backward), from the executor's observer
// hooks: where a training step's time goes, without a profiler and at no cost to a
// run that does not install it. The first backward step's time includes the loss, its
// gradient and the zeroing of the gradients. With `probes`, the probes observe the
// steps as in training (a step's time then includes its statistics) and the profiler
// passes every hook on to them.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/graph.h"
#include "runtime/probes.h"
#include "runtime/trainer.h"

namespace dl::bench {

class StepProfiler : public rt::Observer, public rt::TrainListener {
 public:
  StepProfiler(const rt::ExecutionGraph& g, int64_t warmup, rt::ProbeRecorder* probes);
  void on_batch_begin(const rt::IterationInfo& info) override;
  rt::ValueSink* forward_sink(size_t k) override { return probes_ ? probes_->forward_sink(k) : nullptr; }
  rt::ValueSink* backward_sink(size_t k) override { return probes_ ? probes_->backward_sink(k) : nullptr; }
  void on_forward(size_t k, const rt::Step& st) override;
  void on_backward(size_t k, const rt::Step& st) override;
  void before_update(const rt::ExecutionGraph& g, const rt::IterationInfo& info) override;
  rt::Optimizer::UpdateObserver* update_observer(const rt::IterationInfo& info) override {
    return probes_ ? probes_->update_observer(info) : nullptr;
  }
  void after_update(const rt::ExecutionGraph& g, const rt::IterationInfo& info) override;
  void on_epoch_end(const rt::EpochSummary& e) override {
    if (probes_) probes_->on_epoch_end(e);
  }

  // Every program step's time per training step and its share.
  void print_steps() const;
  // The share of each op type (its nodes' forward and backward summed), largest first,
  // and one "OPSHARE model=... op=... fwd_ms=... bwd_ms=... share_pct=..." line each.
  void print_op_types(const std::string& model) const;

 private:
  double lap();
  double total() const;
  const rt::ExecutionGraph& graph_;
  int64_t warmup_;
  rt::ProbeRecorder* probes_;
  std::vector<double> fwd_, bwd_;
  double update_ = 0;
  int64_t steps_ = 0;
  int64_t first_backward_ = -1;
  bool on_ = false;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace dl::bench
