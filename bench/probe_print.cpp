// The probe-cost reports of dl_bench_train --profile --modes off,probes (declared in
// bench/step_profiler.h): PROBECOST by op type, PROBEMIN from each step's shortest time,
// PROBESTEP for the steps that grow most, PROBEHOOKS for the recorder's own calls.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "bench/bench_util.h"
#include "bench/hook_clock.h"
#include "bench/step_profiler.h"

namespace dl::bench {

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
    // By op type: medians over the rounds, largest first.
    std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> by_op;
    for (const StepProfiler::HookTimes& t : *kind)
      for (const auto& [op, v] : t.by_op) by_op[op].first.push_back(1e6 * v.first), by_op[op].second.push_back(v.second);
    std::vector<std::pair<double, std::string>> order;
    for (const auto& [op, v] : by_op) order.push_back({-median(v.first), op});
    std::sort(order.begin(), order.end());
    for (const auto& [neg, op] : order) {
      const double n = median(by_op[op].second);
      std::printf("PROBEHOOKOP model=%s kind=%s op=\"%s\" us=%.2f steps=%.0f ns_per_step=%.0f\n", model.c_str(),
                  kind == &light ? "light" : "full", op.c_str(), -neg, n, n > 0 ? -1e3 * neg / n : 0.0);
    }
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
