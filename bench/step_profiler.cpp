#include "bench/step_profiler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

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

void print_probe_steps(const std::string& model, const std::vector<std::string>& labels, const IterationMinima& m,
                       size_t top) {
  using K = StepProfiler::Kind;
  const std::vector<double> off[2] = {m.minima(K::kLight, false), m.minima(K::kFull, false)};
  const std::vector<double> on[2] = {m.minima(K::kLight, true), m.minima(K::kFull, true)};
  const auto delta = [&](int kind, size_t k) {
    const std::vector<double>& v = on[kind];
    const std::vector<double>& o = off[kind];
    return k < v.size() && k < o.size() && std::isfinite(v[k]) && std::isfinite(o[k]) ? v[k] - o[k] : 0.0;
  };
  for (const int by : {int(K::kFull), int(K::kLight)}) {
    std::vector<size_t> order;
    for (size_t k = 0; k < off[by].size() && k < labels.size(); ++k) order.push_back(k);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return delta(by, a) > delta(by, b); });
    if (order.size() > top) order.resize(top);
    for (size_t k : order)
      std::printf("PROBESTEP model=%s by=%s step=\"%s\" off_us=%.1f light_us=%+.1f full_us=%+.1f\n", model.c_str(),
                  by == K::kFull ? "full" : "light", labels[k].c_str(), 1e6 * off[by][k], 1e6 * delta(K::kLight, k),
                  1e6 * delta(K::kFull, k));
  }
  std::fflush(stdout);
}

void merge_minima(std::vector<double>& into, const std::vector<double>& m) {
  if (into.empty()) {
    into = m;
    return;
  }
  for (size_t k = 0; k < into.size() && k < m.size(); ++k) into[k] = std::min(into[k], m[k]);
}

void print_probe_minima(const std::string& model, const IterationMinima& m) {
  using K = StepProfiler::Kind;
  const auto sum = [](const std::vector<double>& v) {
    double t = 0;
    for (double x : v) t += x;
    return 1e3 * t;
  };
  const int64_t n_light = m.iterations(K::kLight), n_full = m.iterations(K::kFull);
  const double o = sum(m.off_minima());
  const double ol = sum(m.minima(K::kLight, false)), of = sum(m.minima(K::kFull, false));
  const double l = sum(m.minima(K::kLight, true)), f = sum(m.minima(K::kFull, true));
  const double lp = n_light && ol > 0 ? 100 * (l / ol - 1) : 0.0, fp = n_full && of > 0 ? 100 * (f / of - 1) : 0.0;
  const double wp = n_light + n_full ? (double(n_light) * lp + double(n_full) * fp) / double(n_light + n_full) : 0.0;
  std::printf("probe cost from each step's shortest time over every round (wall ms per iteration), each kind against "
              "the same iterations without probes: light %.3f against %.3f (%+.2f%%), full %.3f against %.3f "
              "(%+.2f%%); the timed mix of %lld light and %lld full %+.2f%% (without probes over every iteration: "
              "%.3f)\n",
              l, ol, lp, f, of, fp, (long long)n_light, (long long)n_full, wp, o);
  std::printf("PROBEMIN model=%s off_ms=%.4f light_ms=%.4f full_ms=%.4f light_pct=%.2f full_pct=%.2f window_pct=%.2f "
              "off_light_ms=%.4f off_full_ms=%.4f\n",
              model.c_str(), o, l, f, lp, fp, wp, ol, of);
  std::fflush(stdout);
}

void print_probe_hooks(const std::string& model, const std::vector<StepProfiler::HookTimes>& light,
                       const std::vector<StepProfiler::HookTimes>& full) {
  for (const auto* kind : {&light, &full}) {
    if (kind->empty()) continue;
    double us[StepProfiler::kHooks], calls[StepProfiler::kHooks];
    std::vector<double> totals;
    for (const StepProfiler::HookTimes& t : *kind) {
      double sum = 0;
      for (double s : t.s) sum += 1e6 * s;
      totals.push_back(sum);
    }
    for (int h = 0; h < StepProfiler::kHooks; ++h) {
      std::vector<double> s, c;
      for (const StepProfiler::HookTimes& t : *kind) s.push_back(1e6 * t.s[h]), c.push_back(t.calls[h]);
      us[h] = median(s);
      calls[h] = median(c);
    }
    using SP = StepProfiler;
    std::printf("PROBEHOOKS model=%s kind=%s begin_us=%.1f forward_us=%.1f backward_us=%.1f update_us=%.1f "
                "sinks_us=%.1f total_us=%.1f calls=%.0f/%.0f/%.0f/%.0f/%.0f clock_ns=%.1f\n",
                model.c_str(), kind == &light ? "light" : "full", us[SP::kHookBegin], us[SP::kHookForward],
                us[SP::kHookBackward], us[SP::kHookUpdate], us[SP::kHookSinks], median(totals), calls[SP::kHookBegin],
                calls[SP::kHookForward], calls[SP::kHookBackward], calls[SP::kHookUpdate], calls[SP::kHookSinks],
                1e9 * HookClock::overhead());
  }
  std::fflush(stdout);
}

void StepProfiler::on_batch_begin(const rt::IterationInfo& info) {
  for (int h = 0; h < kHooks; ++h) hook_now_[h] = hook_calls_now_[h] = 0;
  if (probes_) timed(kHookBegin, [&] { probes_->on_batch_begin(info); });
  on_ = info.iteration >= warmup_;
  now_.resize(graph_.steps().size());
  now_.update = now_.update_cpu = 0;
  last_ = Clock::now();
  last_cpu_ = cpu_laps_ ? process_cpu_seconds() : 0.0;
}

void StepProfiler::on_forward(size_t k, const rt::Step& st) {
  if (probes_) timed(kHookForward, [&] { probes_->on_forward(k, st); });
  lap(now_.fwd[k], now_.fwd_cpu[k]);
}

void StepProfiler::on_backward(size_t k, const rt::Step& st) {
  if (probes_) timed(kHookBackward, [&] { probes_->on_backward(k, st); });
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

void print_probe_cost(const std::string& model, const std::vector<OpTypeCost>& off,
                      const std::vector<OpTypeCost>& all, const std::vector<OpTypeCost>& light,
                      const std::vector<OpTypeCost>& full) {
  std::set<std::string> types;
  for (const auto* v : {&off, &all})
    for (const OpTypeCost& c : *v)
      for (const auto& [type, ms] : c.ms) types.insert(type);
  // Per round: probes' CPU minus that round's off, per op type and in total.
  auto delta = [&](const std::vector<OpTypeCost>& with, const std::string* type) {
    std::vector<double> d;
    for (size_t r = 0; r < with.size() && r < off.size(); ++r) {
      if (with[r].steps == 0) continue;
      auto at = [&](const OpTypeCost& c) {
        if (!type) return c.total();
        auto it = c.ms.find(*type);
        return it == c.ms.end() ? 0.0 : it->second;
      };
      d.push_back(at(with[r]) - at(off[r]));
    }
    return d.empty() ? 0.0 : median(d);
  };
  std::vector<double> offs;
  for (const OpTypeCost& c : off) offs.push_back(c.total());
  const double off_total = median(offs);
  const int64_t n_light = light.empty() ? 0 : light[0].steps, n_full = full.empty() ? 0 : full[0].steps;
  std::printf("probe cost by op type or step (CPU ms per step, medians over %zu rounds of probes minus off; %lld light "
              "and %lld full timed iterations per probes round):\n",
              off.size(), (long long)n_light, (long long)n_full);
  std::printf("  %-26s %9s %9s %8s %9s %9s\n", "op type or step", "off ms", "+probes", "of step", "+light", "+full");
  std::vector<std::pair<double, std::string>> order;
  for (const std::string& t : types) order.push_back({-delta(all, &t), t});
  std::sort(order.begin(), order.end());
  for (const auto& [neg, t] : order) {
    std::vector<double> o;
    for (const OpTypeCost& c : off) {
      auto it = c.ms.find(t);
      o.push_back(it == c.ms.end() ? 0.0 : it->second);
    }
    const double d = -neg, dl = n_light ? delta(light, &t) : 0.0, df = n_full ? delta(full, &t) : 0.0;
    std::printf("  %-26s %9.3f %+9.3f %7.2f%% %+9.3f %+9.3f\n", t.c_str(), median(o), d, 100 * d / off_total, dl, df);
    std::string op = t;
    std::replace(op.begin(), op.end(), ' ', '_');
    std::printf("PROBECOST model=%s op=%s off_ms=%.4f delta_ms=%.4f light_delta_ms=%.4f full_delta_ms=%.4f\n",
                model.c_str(), op.c_str(), median(o), d, dl, df);
  }
  const double d = delta(all, nullptr), dl = n_light ? delta(light, nullptr) : 0.0,
               df = n_full ? delta(full, nullptr) : 0.0;
  std::printf("  %-26s %9.3f %+9.3f %7.2f%% %+9.3f %+9.3f\n", "(total)", off_total, d, 100 * d / off_total, dl, df);
  std::printf("PROBECOST model=%s op=(total) off_ms=%.4f delta_ms=%.4f light_delta_ms=%.4f full_delta_ms=%.4f "
              "light_pct=%.2f full_pct=%.2f\n",
              model.c_str(), off_total, d, dl, df, 100 * dl / off_total, 100 * df / off_total);
  std::fflush(stdout);
}

}  // namespace dl::bench
