// Time per program step (forward and backward), from the executor's observer hooks:
// where a training step's time goes, without a profiler and at no cost to a run that
// does not install it. Each lap is taken on two clocks: wall time and the process's CPU
// time (all threads; on a machine other processes load, CPU time is what the step
// itself cost). The first backward step's time includes the loss, its gradient and the
// zeroing of that step's input gradients (each gradient is zeroed just before the first
// step that adds to it, runtime/graph.cpp, so the rest is in the ops' laps). With `probes`, the probes observe the steps as in training
// (a step's time then includes its statistics) and the profiler passes every hook on to
// them; iterations are then kept apart by the probes' kind (light step statistics, or
// full: runtime/probes.h), so the cost of each can be compared with a run without.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "bench/hook_clock.h"
#include "runtime/graph.h"
#include "runtime/probes.h"
#include "runtime/trainer.h"

namespace dl::bench {

// CPU ms per training step of each op type (forward + backward over its nodes; the loss
// and the update as their own rows), averaged over the timed iterations of one kind.
struct OpTypeCost {
  std::map<std::string, double> ms;  // op type -> CPU ms per step
  int64_t steps = 0;
  double total() const;
};

class StepProfiler : public rt::Observer, public rt::TrainListener {
 public:
  enum Kind { kLight = 0, kFull = 1 };  // without probes every iteration counts as kFull
  // cpu_laps false: each lap reads the wall clock only, and the CPU columns hold wall
  // time. The process CPU clock is a system call (0.4 to 2.3 us a lap on run 56's host, 0.2
  // to 1.1 ms of shufflenet_v2's iteration), and where the kernel isolates its page tables
  // without PCID (Meltdown's mitigation, PTI) each one empties the TLB: the first hook
  // after a lap then pays page walks a run without laps does not (shufflenet_v2's sink
  // calls read 38 us an iteration with CPU laps, 12 without). time_hooks: time every call
  // into the recorder (hook_times); off by default, as the two clock reads per call
  // (~1,400 calls a shufflenet_v2 iteration) lengthen the laps of the runs with probes.
  StepProfiler(const rt::ExecutionGraph& g, int64_t warmup, rt::ProbeRecorder* probes, bool cpu_laps = true,
               bool time_hooks = false);
  void on_batch_begin(const rt::IterationInfo& info) override;
  rt::ValueSink* forward_sink(size_t k) override {
    return probes_ ? timed(kHookSinks, [&] { return probes_->forward_sink(k); }) : nullptr;
  }
  rt::ValueSink* backward_sink(size_t k, const rt::Step& st) override {
    return probes_ ? timed(kHookSinks, [&] { return probes_->backward_sink(k, st); }) : nullptr;
  }
  rt::ValueSink* forward_in_sink(size_t k) override {
    return probes_ ? timed(kHookSinks, [&] { return probes_->forward_in_sink(k); }) : nullptr;
  }
  rt::ValueSink* backward_in_sink(size_t k) override {
    return probes_ ? timed(kHookSinks, [&] { return probes_->backward_in_sink(k); }) : nullptr;
  }
  // Every sink the recorder offers, or a profile with probes misses their cost (before
  // run 14 it missed the recurrent inner values and the attention features).
  rt::ValueSink* feature_sink(size_t k) override {
    return probes_ ? timed(kHookSinks, [&] { return probes_->feature_sink(k); }) : nullptr;
  }
  rt::InnerStats* inner_sink(size_t k) override {
    return probes_ ? timed(kHookSinks, [&] { return probes_->inner_sink(k); }) : nullptr;
  }
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
  // and one "OPSHARE model=... op=... fwd_ms=... bwd_ms=... cpu_ms=... share_pct=..." line each.
  void print_op_types(const std::string& model) const;
  // CPU per step by op type over the timed iterations of `kinds` (bit k: Kind k); by_step:
  // by program step instead ("fwd Conv name", "bwd Conv name").
  OpTypeCost op_type_cost(unsigned kinds = 3, bool by_step = false) const;
  int64_t steps(Kind k) const { return steps_[k]; }
  // With probes and time_hooks: the time spent inside the recorder's hooks (the calls
  // themselves: its own passes, its bookkeeping; not the statistics the ops take for it
  // in their loops, nor, at full iterations, the optimizer's calls into it for each
  // chunk), seconds per timed iteration of kind k, by hook; the cost of reading the clock
  // taken off each call (HookClock::overhead).
  enum Hook { kHookBegin, kHookForward, kHookBackward, kHookUpdate, kHookSinks, kHooks };
  struct HookTimes {
    double s[kHooks] = {};
    double calls[kHooks] = {};
    // The forward and backward hooks by the step's op type ("fwd Conv", "bwd Conv"):
    // seconds and calls per iteration.
    std::map<std::string, std::pair<double, double>> by_op;
  };
  HookTimes hook_times(Kind k) const;
  // The program steps' names: "fwd Conv name" for each forward step, then "bwd Conv
  // name" for each backward step, then "update".
  std::vector<std::string> step_labels() const;
  // Each timed iteration's wall time per program step (step_labels' order), by the
  // iteration's number, and its kind. Interference from other processes only lengthens
  // a step: the sum of each step's minimum over many iterations is a low-noise estimate
  // of an iteration's own cost (train_bench --profile, PROBEMIN: IterationMinima).
  const std::map<int64_t, std::vector<double>>& iteration_laps() const { return iter_laps_; }
  const std::map<int64_t, Kind>& iteration_kinds() const { return iter_kind_; }

 private:
  struct Laps {
    std::vector<double> fwd, bwd, fwd_cpu, bwd_cpu;
    double update = 0, update_cpu = 0;
    void resize(size_t n) { fwd.assign(n, 0), bwd.assign(n, 0), fwd_cpu.assign(n, 0), bwd_cpu.assign(n, 0); }
    void add(const Laps& o);
  };
  void lap(double& wall, double& cpu);
  // f(), timed into this iteration's hook h when time_hooks_.
  template <class F>
  std::invoke_result_t<F&> timed(Hook h, F&& f) {
    if (!time_hooks_) return f();
    const uint64_t t0 = HookClock::ticks();
    if constexpr (std::is_void_v<decltype(f())>) {
      f();
      count_hook(h, t0);
    } else {
      decltype(auto) r = f();
      count_hook(h, t0);
      return r;
    }
  }
  uint64_t count_hook(Hook h, uint64_t t0) {  // (returns the call's ticks)
    const uint64_t dt = HookClock::ticks() - t0;
    hook_now_[h] += dt;
    ++hook_calls_now_[h];
    return dt;
  }
  // This iteration's ticks and calls per hook, then the timed iterations', by kind.
  uint64_t hook_now_[kHooks] = {}, hook_calls_now_[kHooks] = {};
  uint64_t hook_[2][kHooks] = {}, hook_calls_[2][kHooks] = {};
  // The same of the forward (0) and backward (1) hooks per program step.
  std::vector<uint64_t> step_hook_now_[2], step_hook_[2][2];
  template <class F>
  void timed_step(int dir, size_t k, F&& f) {
    if (!time_hooks_) return f();
    const uint64_t t0 = HookClock::ticks();
    f();
    step_hook_now_[dir][k] += count_hook(dir == 0 ? kHookForward : kHookBackward, t0);
  }
  std::string type_of_backward(size_t k) const;
  const rt::ExecutionGraph& graph_;
  int64_t warmup_;
  rt::ProbeRecorder* probes_;
  bool cpu_laps_ = true;
  bool time_hooks_ = false;
  Laps now_;      // this iteration's
  Laps kind_[2];  // the timed iterations', by kind
  int64_t steps_[2] = {0, 0};
  std::map<int64_t, std::vector<double>> iter_laps_;
  std::map<int64_t, Kind> iter_kind_;
  int64_t first_backward_ = -1;
  bool on_ = false;
  std::chrono::steady_clock::time_point last_;
  double last_cpu_ = 0;
};

// Prints, per op type, the CPU per step with probes against without (medians over the
// rounds of the per-round difference), for all timed iterations and for light and full
// ones apart, and "PROBECOST model=... op=... off_ms=... delta_ms=..." lines.
void print_probe_cost(const std::string& model, const std::vector<OpTypeCost>& off,
                      const std::vector<OpTypeCost>& all, const std::vector<OpTypeCost>& light,
                      const std::vector<OpTypeCost>& full);

// Elementwise minimum of per-step times (StepProfiler::iteration_laps) into `into` (empty: a copy).
void merge_minima(std::vector<double>& into, const std::vector<double>& m);

// Each timed iteration's per-step minima over every round, probes off and on, and the
// kind the probes gave each iteration. A minimum over more samples is lower: the runs
// without probes time twice as many iterations as each kind has (8 light and 8 full of
// 16), so comparing each kind's minima with those over every iteration without probes
// reads the probes dearer than they are, the more so the more steps a network has (run
// 49). minima(k, false) takes the same iterations as minima(k, true) instead.
class IterationMinima {
 public:
  void add(const StepProfiler& p, bool with_probes);
  // Per program step, the minimum over the iterations the probes ran as kind k (and over
  // every round) of the runs with probes or without; empty without such an iteration.
  std::vector<double> minima(StepProfiler::Kind k, bool with_probes) const;
  // The same over every timed iteration of the runs without probes.
  std::vector<double> off_minima() const;
  // Timed iterations of kind k in some round (one a drift made full in one round only
  // counts for both kinds: window_pct's weights are then off by that much).
  int64_t iterations(StepProfiler::Kind k) const;

 private:
  std::map<int64_t, std::vector<double>> off_;  // by iteration
  std::map<std::pair<int64_t, int>, std::vector<double>> on_;  // by iteration and kind (a drift may differ by round)
  std::map<int64_t, unsigned> kinds_;  // bit k: kind k in some round
};

// The probes' cost from per-step minima over every round, each kind against the same
// iterations without probes (IterationMinima): "PROBEMIN model=... off_ms=...
// light_ms=... full_ms=... light_pct=... full_pct=... window_pct=... off_light_ms=...
// off_full_ms=..." (off_ms: over every iteration; window: the timed iterations' mix of
// their light and full ones).
void print_probe_minima(const std::string& model, const IterationMinima& m);

// The time inside the recorder's hooks per iteration of each kind (StepProfiler::hook_times),
// medians over the rounds (total_us: of each round's total): "PROBEHOOKS model=...
// kind=light|full begin_us=... forward_us=... backward_us=... update_us=... sinks_us=...
// total_us=... calls=B/F/W/U/S clock_ns=..." (calls per iteration of the five hooks in
// that order; clock_ns: the clock cost taken off each call; run 56); after each, the
// forward and backward hooks by the step's op type, largest first: "PROBEHOOKOP model=...
// kind=... op="fwd Conv" us=... steps=... ns_per_step=..." (us per iteration, over that
// many steps; run 57).
void print_probe_hooks(const std::string& model, const std::vector<StepProfiler::HookTimes>& light,
                       const std::vector<StepProfiler::HookTimes>& full);
// The `top` program steps whose minima grow most with probes at full iterations, then at
// light ones: "PROBESTEP model=... by=full|light step=... off_us=... light_us=...
// full_us=..." lines (off_us: without probes, over the iterations of the kind sorted by;
// light_us and full_us: each kind against the same iterations without probes), where a
// whole-network figure says how much and this says where (--profile-steps).
void print_probe_steps(const std::string& model, const std::vector<std::string>& labels, const IterationMinima& m,
                       size_t top);

}  // namespace dl::bench
