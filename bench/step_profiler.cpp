#include "bench/step_profiler.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "bench/bench_util.h"

namespace dl::bench {

using Clock = std::chrono::steady_clock;

namespace {
const char* const kLoss = "(loss, gradient zeroing)";
const char* const kUpdate = "(optimizer update)";
}  // namespace

double OpTypeCost::total() const {
  double t = 0;
  for (const auto& [type, v] : ms) t += v;
  return t;
}

void StepProfiler::Laps::add(const Laps& o) {
  for (size_t k = 0; k < fwd.size(); ++k) {
    fwd[k] += o.fwd[k], bwd[k] += o.bwd[k];
    fwd_cpu[k] += o.fwd_cpu[k], bwd_cpu[k] += o.bwd_cpu[k];
  }
  update += o.update, update_cpu += o.update_cpu;
}

StepProfiler::StepProfiler(const rt::ExecutionGraph& g, int64_t warmup, rt::ProbeRecorder* probes, bool cpu_laps,
                           bool time_hooks)
    : graph_(g), warmup_(warmup), probes_(probes), cpu_laps_(cpu_laps), time_hooks_(time_hooks) {
  now_.resize(g.steps().size());
  for (Laps& l : kind_) l.resize(g.steps().size());
}

std::vector<std::string> StepProfiler::step_labels() const {
  std::vector<std::string> names;
  for (const char* dir : {"fwd ", "bwd "})
    for (const rt::Step& st : graph_.steps()) names.push_back(dir + st.node->op_type + " " + st.node->name);
  names.push_back("update");
  return names;
}

void IterationMinima::add(const StepProfiler& p, bool with_probes) {
  for (const auto& [it, laps] : p.iteration_laps()) {
    if (!with_probes) {
      merge_minima(off_[it], laps);
      continue;
    }
    const StepProfiler::Kind kind = p.iteration_kinds().at(it);
    merge_minima(on_[{it, kind}], laps);
    kinds_[it] |= 1u << kind;
  }
}

std::vector<double> IterationMinima::minima(StepProfiler::Kind k, bool with_probes) const {
  std::vector<double> m;
  if (with_probes) {
    for (const auto& [at, laps] : on_)
      if (at.second == k) merge_minima(m, laps);
    return m;
  }
  for (const auto& [it, laps] : off_) {
    const auto kinds = kinds_.find(it);
    if (kinds != kinds_.end() && (kinds->second & (1u << k))) merge_minima(m, laps);
  }
  return m;
}

std::vector<double> IterationMinima::off_minima() const {
  std::vector<double> m;
  for (const auto& [it, laps] : off_) merge_minima(m, laps);
  return m;
}

int64_t IterationMinima::iterations(StepProfiler::Kind k) const {
  int64_t n = 0;
  for (const auto& [it, kinds] : kinds_) n += (kinds >> k) & 1u;
  return n;
}

void merge_minima(std::vector<double>& into, const std::vector<double>& m) {
  if (into.empty()) {
    into = m;
    return;
  }
  for (size_t k = 0; k < into.size() && k < m.size(); ++k) into[k] = std::min(into[k], m[k]);
}

void StepProfiler::on_batch_begin(const rt::IterationInfo& info) {
  for (int h = 0; h < kHooks; ++h) hook_now_[h] = hook_calls_now_[h] = 0;
  if (time_hooks_)
    for (auto& v : step_hook_now_) v.assign(graph_.steps().size(), 0);
  if (probes_) timed(kHookBegin, [&] { probes_->on_batch_begin(info); });
  on_ = info.iteration >= warmup_;
  now_.resize(graph_.steps().size());
  now_.update = now_.update_cpu = 0;
  last_ = Clock::now();
  last_cpu_ = cpu_laps_ ? process_cpu_seconds() : 0.0;
}

void StepProfiler::on_forward(size_t k, const rt::Step& st) {
  if (probes_) timed_step(0, k, [&] { probes_->on_forward(k, st); });
  lap(now_.fwd[k], now_.fwd_cpu[k]);
}

void StepProfiler::on_backward(size_t k, const rt::Step& st) {
  if (probes_) timed_step(1, k, [&] { probes_->on_backward(k, st); });
  if (first_backward_ < 0) first_backward_ = int64_t(k);
  lap(now_.bwd[k], now_.bwd_cpu[k]);
}

// (No lap here: the update's lap runs from the last backward step's, so that it counts the
// probes' before_update, their work between the backward pass and the update.)
void StepProfiler::before_update(const rt::ExecutionGraph& g, const rt::IterationInfo& info) {
  if (probes_) timed(kHookUpdate, [&] { probes_->before_update(g, info); });
}

void StepProfiler::after_update(const rt::ExecutionGraph& g, const rt::IterationInfo& info) {
  if (probes_) timed(kHookUpdate, [&] { probes_->after_update(g, info); });
  lap(now_.update, now_.update_cpu);
  if (!on_) return;
  // (Probes: an iteration whose step statistics were light throughout is kLight; one
  // a drift or a NaN turned full part-way counts as full.)
  const Kind kind = probes_ && !probes_->step_full() ? kLight : kFull;
  kind_[kind].add(now_);
  ++steps_[kind];
  for (int h = 0; h < kHooks; ++h) hook_[kind][h] += hook_now_[h], hook_calls_[kind][h] += hook_calls_now_[h];
  for (int dir = 0; dir < 2 && time_hooks_; ++dir) {
    std::vector<uint64_t>& to = step_hook_[kind][dir];
    to.resize(step_hook_now_[dir].size(), 0);
    for (size_t k = 0; k < to.size(); ++k) to[k] += step_hook_now_[dir][k];
  }
  std::vector<double>& laps = iter_laps_[info.iteration];
  laps = now_.fwd;
  laps.insert(laps.end(), now_.bwd.begin(), now_.bwd.end());
  laps.push_back(now_.update);
  iter_kind_[info.iteration] = kind;
}

StepProfiler::HookTimes StepProfiler::hook_times(Kind k) const {
  HookTimes t;
  if (!time_hooks_) return t;  // (nor calibrate the clock: ~7 ms)
  const double n = double(std::max<int64_t>(steps_[k], 1)), tick = HookClock::seconds_per_tick();
  for (int h = 0; h < kHooks; ++h) {
    t.calls[h] = double(hook_calls_[k][h]) / n;
    t.s[h] = std::max(0.0, double(hook_[k][h]) * tick / n - t.calls[h] * HookClock::overhead());
  }
  // (Each step's hook runs once an iteration.)
  const auto& steps = graph_.steps();
  for (int dir = 0; dir < 2; ++dir)
    for (size_t j = 0; j < step_hook_[k][dir].size() && j < steps.size(); ++j) {
      if (step_hook_[k][dir][j] == 0) continue;  // (a step without a backward pass)
      auto& [s, calls] = t.by_op[(dir == 0 ? "fwd " : "bwd ") + steps[j].node->op_type];
      s += std::max(0.0, double(step_hook_[k][dir][j]) * tick / n - HookClock::overhead());
      calls += 1;
    }
  return t;
}

void StepProfiler::lap(double& wall, double& cpu) {
  const auto now = Clock::now();
  const double now_cpu = cpu_laps_ ? process_cpu_seconds() : last_cpu_ + std::chrono::duration<double>(now - last_).count();
  wall += std::chrono::duration<double>(now - last_).count();
  cpu += now_cpu - last_cpu_;
  last_ = now;
  last_cpu_ = now_cpu;
}

std::string StepProfiler::type_of_backward(size_t k) const {
  // The first backward step also times the loss and the zeroing of the gradients it
  // adds to (the others are zeroed inside later steps' laps): shown apart, so that it is
  // not charged to whatever op comes last.
  return int64_t(k) == first_backward_ ? kLoss : graph_.steps()[k].node->op_type;
}

void StepProfiler::print_steps() const {
  Laps all;
  all.resize(graph_.steps().size());
  all.add(kind_[0]), all.add(kind_[1]);
  const double n = double(std::max<int64_t>(steps_[0] + steps_[1], 1));
  double total = all.update;
  for (size_t k = 0; k < all.fwd.size(); ++k) total += all.fwd[k] + all.bwd[k];
  std::printf("time per training step by program step (%lld steps, %.3f ms/step):\n", (long long)(n), 1e3 * total / n);
  auto line = [&](const std::string& what, double s, double cpu) {
    std::printf("  %-52s %9.1f us  %5.1f%%  (CPU %9.1f us)\n", what.c_str(), 1e6 * s / n, 100 * s / total,
                1e6 * cpu / n);
  };
  for (size_t k = 0; k < all.fwd.size(); ++k)
    line("fwd " + graph_.steps()[k].node->op_type + " " + graph_.steps()[k].node->name, all.fwd[k], all.fwd_cpu[k]);
  for (size_t k = all.fwd.size(); k-- > 0;)
    if (all.bwd[k] > 0)
      line("bwd " + graph_.steps()[k].node->op_type + " " + graph_.steps()[k].node->name +
               (int64_t(k) == first_backward_ ? " (+ loss, zeroing)" : ""),
           all.bwd[k], all.bwd_cpu[k]);
  line("optimizer update", all.update, all.update_cpu);
}

OpTypeCost StepProfiler::op_type_cost(unsigned kinds, bool by_step) const {
  OpTypeCost c;
  for (int kind = 0; kind < 2; ++kind) {
    if (!(kinds & (1u << kind))) continue;
    const Laps& l = kind_[kind];
    for (size_t k = 0; k < l.fwd.size(); ++k) {
      const ir::Node& node = *graph_.steps()[k].node;
      // (by step: the step's index too, so unnamed or like-named nodes stay apart)
      const std::string at = " #" + std::to_string(k) + " " + node.name;
      c.ms[by_step ? "fwd " + node.op_type + at : node.op_type] += 1e3 * l.fwd_cpu[k];
      if (by_step && l.bwd_cpu[k] == 0) continue;
      c.ms[by_step ? "bwd " + type_of_backward(k) + at : type_of_backward(k)] += 1e3 * l.bwd_cpu[k];
    }
    c.ms[kUpdate] += 1e3 * l.update_cpu;
    c.steps += steps_[kind];
  }
  for (auto& [type, v] : c.ms) v /= double(std::max<int64_t>(c.steps, 1));
  return c;
}

void StepProfiler::print_op_types(const std::string& model) const {
  struct Share {
    double fwd = 0, bwd = 0, cpu = 0;
    int nodes = 0;
  };
  std::map<std::string, Share> by_type;
  Laps all;
  all.resize(graph_.steps().size());
  all.add(kind_[0]), all.add(kind_[1]);
  for (size_t k = 0; k < all.fwd.size(); ++k) {
    Share& s = by_type[graph_.steps()[k].node->op_type];
    s.fwd += all.fwd[k];
    s.cpu += all.fwd_cpu[k];
    ++s.nodes;
    Share& b = by_type[type_of_backward(k)];
    b.bwd += all.bwd[k];
    b.cpu += all.bwd_cpu[k];
  }
  by_type[kUpdate].fwd += all.update;
  by_type[kUpdate].cpu += all.update_cpu;
  by_type[kLoss].nodes = 0;
  std::vector<std::pair<std::string, Share>> rows(by_type.begin(), by_type.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.fwd + a.second.bwd > b.second.fwd + b.second.bwd;
  });
  double wall = 0, cpu = 0;
  for (const auto& [type, s] : rows) wall += s.fwd + s.bwd, cpu += s.cpu;
  const double n = double(std::max<int64_t>(steps_[0] + steps_[1], 1));
  std::printf("time per training step by op type (%lld steps, %.2f ms/step, CPU %.2f ms/step; fwd and bwd in wall "
              "ms per step):\n",
              (long long)n, 1e3 * wall / n, 1e3 * cpu / n);
  std::printf("  %-26s %6s %9s %9s %7s %9s\n", "op type", "nodes", "fwd ms", "bwd ms", "share", "CPU ms");
  for (const auto& [type, s] : rows) {
    if (s.fwd + s.bwd <= 0) continue;
    std::printf("  %-26s %6d %9.2f %9.2f %6.1f%% %9.2f\n", type.c_str(), s.nodes, 1e3 * s.fwd / n, 1e3 * s.bwd / n,
                100 * (s.fwd + s.bwd) / wall, 1e3 * s.cpu / n);
  }
  for (const auto& [type, s] : rows) {
    if (s.fwd + s.bwd <= 0) continue;
    std::string op = type;
    std::replace(op.begin(), op.end(), ' ', '_');
    std::printf("OPSHARE model=%s op=%s nodes=%d fwd_ms=%.3f bwd_ms=%.3f cpu_ms=%.3f share_pct=%.2f\n", model.c_str(),
                op.c_str(), s.nodes, 1e3 * s.fwd / n, 1e3 * s.bwd / n, 1e3 * s.cpu / n, 100 * (s.fwd + s.bwd) / wall);
  }
  std::fflush(stdout);
}

}  // namespace dl::bench
