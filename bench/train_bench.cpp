// dl_bench_train: training throughput of one model, probes off and on, measured in
// one process with the modes interleaved (off, probes, full, off, probes, full, ...)
// so that machine drift affects every mode alike. Options: usage() below.
//
// Modes: off     the trainer alone (deeplocalize train --no-probes)
//        probes  + ProbeRecorder and its trace (every step reduced to statistics)
//        full    + the online analysis, as `deeplocalize train` runs it
//        unfused probes with no op computing statistics in its own pass (every step
//                tensor reduced by the probes afterwards; not in the default modes)
// Each round builds a fresh trainer per mode (untimed), runs `warmup` steps, then
// times `steps` steps. Each round also times the machine's GEMM peak (Eigen n x n
// product), so the efficiency compares numbers taken under the same load.
// Prints one line per round and mode, then "RESULT key=value ..." lines with medians.
// --profile instead times one run's program steps and prints the share of each op
// type (forward and backward summed over its nodes; bench/step_profiler.h),
// --profile-steps also the time of every program step (forward and backward of each
// node, loss, update); with probes when --modes lists probes (each step then includes
// its statistics), else without; with --modes off,probes the probes' CPU cost per op
// type (medians over --rounds rounds alternating the two, light and full iterations
// apart; with --profile-steps per program step) and PROBEMIN (step_profiler.h). With
// --profile: --wall-laps, laps on the wall clock only (no system call per program step;
// the CPU columns then hold wall time), --hooks, PROBEHOOKS lines (the time inside the
// recorder's own calls, by hook and by op type; they lengthen the probe runs' laps:
// StepProfiler's constructor). --helpers sets runtime/parallel.h's helper policy (auto backs off to
// one thread while the machine is busy). --own-passes lists, after each probes run, the
// step tensors the probes reduced in a pass of their own (ProbeRecorder::own_passes).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/trace.h"
#include "bench/bench_util.h"
#include "bench/step_profiler.h"
#include "cli/online_analysis.h"
#include "converter/errors.h"
#include "converter/import.h"
#include "runtime/data/dataset.h"
#include "runtime/parallel.h"
#include "runtime/probes.h"
#include "runtime/threads.h"
#include "runtime/trainer.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace dl;
using bench::median;
using bench::StepTimer;

struct Args {
  std::string model, data;
  int64_t batch = 0;  // 0: the model's metadata
  int64_t steps = 200, warmup = 20, rounds = 5, rows = 0;
  int threads = 0;
  int peak_n = 1024;
  bool profile = false, profile_steps = false, wall_laps = false, hooks = false;
  bool own_passes = false;  // after each probes run: the probes' own passes, per step probe
  std::string helpers = "auto";
  std::vector<std::string> modes = {"off", "probes", "full"};
};

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr,
               "%s\nusage: dl_bench_train MODEL DATA [--batch B] [--steps N] [--warmup W] [--rounds R]\n"
               "                      [--threads T] [--modes off,probes,full,unfused] [--rows R] [--peak-n N]\n"
               "                      [--profile] [--profile-steps] [--wall-laps] [--hooks] [--helpers auto|always|never]\n"
               "                      [--own-passes]\n",
               msg);
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value for " + s).c_str());
      return argv[++i];
    };
    if (s == "--batch") a.batch = std::stoll(next());
    else if (s == "--steps") a.steps = std::stoll(next());
    else if (s == "--warmup") a.warmup = std::stoll(next());
    else if (s == "--rounds") a.rounds = std::stoll(next());
    else if (s == "--rows") a.rows = std::stoll(next());
    else if (s == "--threads") a.threads = std::stoi(next());
    else if (s == "--peak-n") a.peak_n = std::stoi(next());
    else if (s == "--profile") a.profile = true;
    else if (s == "--profile-steps") a.profile = a.profile_steps = true;
    else if (s == "--wall-laps") a.wall_laps = true;
    else if (s == "--hooks") a.hooks = true;
    else if (s == "--helpers") a.helpers = next();
    else if (s == "--own-passes") a.own_passes = true;
    else if (s == "--modes") {
      a.modes.clear();
      std::string m = next();
      size_t p = 0;
      while (p <= m.size()) {
        size_t q = m.find(',', p);
        if (q == std::string::npos) q = m.size();
        if (q > p) a.modes.push_back(m.substr(p, q - p));
        p = q + 1;
      }
    } else if (!s.empty() && s[0] == '-') usage(("unknown option " + s).c_str());
    else pos.push_back(s);
  }
  if (pos.size() != 2) usage("expected MODEL and DATA");
  a.model = pos[0];
  a.data = pos[1];
  if (a.warmup < 1) a.warmup = 1;
  if ((a.wall_laps || a.hooks) && !a.profile) usage("--wall-laps and --hooks go with --profile");
  for (const std::string& m : a.modes)
    if (m != "off" && m != "probes" && m != "full" && m != "unfused") usage(("unknown mode " + m).c_str());
  return a;
}

rt::Dataset load_data(const ir::Model& model, const rt::TrainConfig& c, const std::string& path, int64_t rows) {
  rt::GraphOptions go;
  go.batch_size = 1;
  rt::ExecutionGraph probe(model, go);
  rt::DatasetSpec spec;
  spec.targets = c.targets;
  const rt::Shape& in = probe.input(0).shape();
  spec.sample_shape = rt::Shape(in.begin() + 1, in.end());
  spec.output_width = probe.output(0).numel();
  if (c.loss == "sparse_categorical_crossentropy") spec.encoding = rt::DatasetSpec::Encoding::kSparse;
  else if (c.loss == "categorical_crossentropy" && spec.output_width > 1)
    spec.encoding = rt::DatasetSpec::Encoding::kOneHot;
  rt::Dataset d = rt::load_dataset(path, spec);
  if (rows > 0 && rows < d.n) {
    d.n = rows;
    d.x.resize(size_t(rows * d.x_size));
    d.y.resize(size_t(rows * d.y_size));
    d.line_of_row.resize(size_t(rows));
    if (!d.raw_labels.empty()) d.raw_labels.resize(size_t(rows));
  }
  return d;
}


// One profiled run, with probes when `with_probes`: its CPU per op type over all timed
// iterations, the light and the full ones (by bench::StepProfiler::Kind).
struct ProfileCosts {
  bench::OpTypeCost all, light, full;
  std::vector<std::string> labels;  // StepProfiler::step_labels
  bench::StepProfiler::HookTimes hooks_light, hooks_full;  // with probes
};
// With `minima`, its per-iteration step times go there.
ProfileCosts profile_run(const ir::Model& model, const rt::TrainConfig& config, const rt::Dataset& data, const Args& a,
                         bool with_probes, bool print, bench::IterationMinima* minima = nullptr) {
  rt::Trainer trainer(model, config, data, rt::Dataset{});
  an::Trace trace;
  std::unique_ptr<rt::ProbeRecorder> probes;
  if (with_probes) {
    trace.header.batches_per_epoch = (data.n + config.batch_size - 1) / config.batch_size;
    probes = std::make_unique<rt::ProbeRecorder>(trainer.graph(), trace);
    trace.set_probe_every(1);
    trace.set_capacity_bytes(int64_t(256) * 1024 * 1024);
    trace.reserve_iterations(config.epochs * trace.header.batches_per_epoch);
  }
  if (print) std::printf("profile with probes %s\n", probes ? "on" : "off");
  auto prof = std::make_unique<bench::StepProfiler>(trainer.graph(), a.warmup, probes.get(), !a.wall_laps, a.hooks);
  trainer.set_observer(prof.get());
  trainer.add_listener(prof.get());
  // (The profiler reads the trainer's graph: done with here, before the trainer goes.)
  StepTimer timer(a.warmup, a.steps);
  trainer.add_listener(&timer);
  trainer.run();
  if (print) {
    if (a.profile_steps) prof->print_steps();
    prof->print_op_types(a.model.substr(a.model.find_last_of('/') + 1));
  }
  const bool by_step = a.profile_steps;
  using SP = bench::StepProfiler;
  if (minima) minima->add(*prof, with_probes);
  return {prof->op_type_cost(3, by_step), prof->op_type_cost(1u << SP::kLight, by_step),
          prof->op_type_cost(1u << SP::kFull, by_step), prof->step_labels(), prof->hook_times(SP::kLight),
          prof->hook_times(SP::kFull)};
}

// --profile: one run (probes on when --modes lists probes); with --modes off,probes the
// probes' cost by op type instead, over --rounds rounds alternating the two.
void profile_steps(const ir::Model& model, const rt::TrainConfig& config, const rt::Dataset& data, const Args& a) {
  const auto has = [&](const char* m) { return std::find(a.modes.begin(), a.modes.end(), m) != a.modes.end(); };
  const std::string name = a.model.substr(a.model.find_last_of('/') + 1);
  if (a.wall_laps) std::printf("laps on the wall clock only (--wall-laps): the CPU columns hold wall time\n");
  if (!(has("off") && has("probes"))) {
    profile_run(model, config, data, a, has("probes"), true);
    return;
  }
  std::vector<bench::OpTypeCost> off, all, light, full;
  bench::IterationMinima minima;
  std::vector<std::string> labels;
  std::vector<bench::StepProfiler::HookTimes> hooks_light, hooks_full;
  for (int64_t round = 0; round < a.rounds; ++round) {
    for (int k = 0; k < 2; ++k) {
      const bool with_probes = (k == 1) != (round % 2 == 1);  // order reversed every other round
      const ProfileCosts p = profile_run(model, config, data, a, with_probes, false, &minima);
      const bench::OpTypeCost& c = p.all;
      std::printf("round %lld  %-6s  CPU %8.2f ms/step", (long long)round, with_probes ? "probes" : "off", c.total());
      if (with_probes) {
        labels = p.labels;
        all.push_back(c);
        light.push_back(p.light);
        full.push_back(p.full);
        if (p.light.steps > 0) hooks_light.push_back(p.hooks_light);
        if (p.full.steps > 0) hooks_full.push_back(p.hooks_full);
        std::printf("  (light %lld: %.2f, full %lld: %.2f)", (long long)light.back().steps, light.back().total(),
                    (long long)full.back().steps, full.back().total());
      } else {
        off.push_back(c);
      }
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  bench::print_probe_cost(name, off, all, light, full);
  bench::print_probe_minima(name, minima);
  if (a.hooks) bench::print_probe_hooks(name, hooks_light, hooks_full);
  if (a.profile_steps) bench::print_probe_steps(name, labels, minima, 16);
}

// --own-passes: the step probes whose tensors the probes reduced in a pass of their own
// (no op reported them, no copy's or reader's sums served), the most values first.
void print_own_passes(const rt::ProbeRecorder& probes, const an::Trace& trace, const rt::ExecutionGraph& graph,
                      int64_t iterations) {
  struct Row {
    double values;
    int64_t passes, numel;
    std::string what;
  };
  std::vector<Row> rows;
  double total = 0;
  for (size_t p = 0; p < trace.header.probes.size(); ++p) {
    const an::Probe& pr = trace.header.probes[p];
    const bool fwd = pr.kind == an::ProbeKind::kForward;
    if ((!fwd && pr.kind != an::ProbeKind::kGradient) || pr.step < 0) continue;
    const int64_t passes = probes.own_passes(int(p));
    if (passes == 0) continue;
    const int64_t numel = graph.steps()[size_t(pr.step)].fwd.out[0]->numel();
    const double values = double(passes) * double(numel) / double(iterations);
    total += values;
    rows.push_back({values, passes, numel, std::string(fwd ? "Y  " : "dY ") + pr.op_type + " " + pr.node});
  }
  std::sort(rows.begin(), rows.end(), [](const Row& x, const Row& y) { return x.values > y.values; });
  std::printf("own passes over %lld iterations: %.0f values/iteration\n", (long long)iterations, total);
  for (const Row& row : rows)
    std::printf("  %10.0f values/it  %5lld passes x %8lld  %s\n", row.values, (long long)row.passes,
                (long long)row.numel, row.what.c_str());
}

struct Timing {
  double wall = 0, cpu = 0;
};

// One timed run of `mode` on a fresh trainer.
Timing run_mode(const std::string& mode, const ir::Model& model, const rt::TrainConfig& config,
                const rt::Dataset& data, const Args& a) {
  rt::Trainer trainer(model, config, data, rt::Dataset{});
  an::Trace trace;
  std::unique_ptr<rt::ProbeRecorder> probes;
  an::Settings settings;
  std::unique_ptr<cli::OnlineAnalysis> online;
  if (mode != "off") {
    // As diagnose_case sets them up for `deeplocalize train`.
    trace.header.batches_per_epoch = (data.n + config.batch_size - 1) / config.batch_size;
    probes = std::make_unique<rt::ProbeRecorder>(trainer.graph(), trace);
    probes->set_fused(mode != "unfused");
    trace.set_probe_every(1);
    trace.set_capacity_bytes(int64_t(256) * 1024 * 1024);
    trace.reserve_iterations(config.epochs * trace.header.batches_per_epoch);
    trainer.set_observer(probes.get());
    trainer.add_listener(probes.get());
  }
  if (mode == "full") {
    online = std::make_unique<cli::OnlineAnalysis>(trace, settings, /*stop_on_fault=*/false);
    trainer.add_listener(online.get());
  }
  StepTimer timer(a.warmup, a.steps);
  trainer.add_listener(&timer);
  rt::TrainResult r = trainer.run();
  if (r.iterations < a.warmup + a.steps) throw InternalError("the run ended before the timed steps");
  if (a.own_passes && probes) print_own_passes(*probes, trace, trainer.graph(), r.iterations);
  return {timer.seconds(), timer.cpu_seconds()};
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  try {
    if (a.threads > 0) rt::set_compute_threads(a.threads);
    if (a.helpers == "always") rt::set_helper_policy(rt::HelperPolicy::kAlways);
    else if (a.helpers == "never") rt::set_helper_policy(rt::HelperPolicy::kNever);
    else if (a.helpers != "auto") usage("--helpers takes auto, always or never");
    ir::Model model = conv::import_model(a.model);
    rt::TrainConfig config = rt::config_from_metadata(model.metadata);
    if (a.batch > 0) config.batch_size = a.batch;
    config.validation_split = 0;
    rt::Dataset data = load_data(model, config, a.data, a.rows);
    const int64_t per_epoch = (data.n + config.batch_size - 1) / config.batch_size;
    config.epochs = (a.warmup + a.steps + per_epoch - 1) / per_epoch + 1;
    rt::validate(config);

    bench::StepFlops flops;
    int64_t full_every = 1, step_full_every = 1, step_values = 0, zeroed = 0, grad_values = 0;
    {
      rt::Trainer t(model, config, data, rt::Dataset{});
      flops = bench::count_step_flops(t.graph());
      zeroed = t.graph().zeroed_values();
      grad_values = t.graph().gradient_bytes() / int64_t(sizeof(float));
      an::Trace trace;
      const rt::ProbeRecorder probes(t.graph(), trace);
      full_every = probes.full_every();
      step_full_every = probes.step_full_every();
      step_values = probes.step_values();
    }
    std::printf("model %s  data %s (%lld rows)  batch %lld  optimizer %s  loss %s\n", a.model.c_str(), a.data.c_str(),
                (long long)data.n, (long long)config.batch_size, config.optimizer.name.c_str(), config.loss.c_str());
    std::printf("matrix-product work per step: %.2f MFLOP forward + %.2f MFLOP backward\n", flops.forward / 1e6,
                flops.backward / 1e6);
    std::printf("gradients: %lld values, %lld of them zeroed per backward pass (the others written whole by their "
                "first writer, Op::assigns_gradient)\n",
                (long long)grad_values, (long long)zeroed);
    std::printf("threads: %d (Eigen %d)  steps %lld after %lld warm-up, %lld rounds\n", a.threads,
                bench::eigen_threads(), (long long)a.steps, (long long)a.warmup, (long long)a.rounds);
    std::printf("probes: %lld step output and gradient values per step, in full every %lld iteration(s), "
                "light in between; parameter statistics every %lld iteration(s), carried in between "
                "(runtime/probes.h)\n",
                (long long)step_values, (long long)step_full_every, (long long)full_every);
    std::fflush(stdout);

    if (a.profile) {
      profile_steps(model, config, data, a);
      return 0;
    }
    std::map<std::string, std::vector<double>> secs, cpu;
    std::map<std::string, std::vector<double>> overhead, cpu_overhead;  // per round, vs that round's off
    std::vector<double> peaks, kernel_peaks;
    for (int64_t round = 0; round < a.rounds; ++round) {
      std::map<std::string, Timing> this_round;
      // Mode order reversed every other round: whatever runs first in a round (a cold
      // cache, a helper thread still asleep) does not always fall on the same mode.
      std::vector<std::string> order = a.modes;
      if (round % 2) std::reverse(order.begin(), order.end());
      for (const std::string& mode : order) {
        const Timing t = run_mode(mode, model, config, data, a);
        this_round[mode] = t;
        secs[mode].push_back(t.wall);
        cpu[mode].push_back(t.cpu);
        std::printf("round %lld  %-6s  %8.2f steps/s  %7.2f GFLOP/s  %8.1f us CPU/step\n", (long long)round,
                    mode.c_str(), double(a.steps) / t.wall, flops.total() * double(a.steps) / t.wall / 1e9,
                    1e6 * t.cpu / double(a.steps));
        std::fflush(stdout);
      }
      if (this_round.count("off"))
        for (const auto& [mode, t] : this_round)
          if (mode != "off") {
            overhead[mode].push_back(100.0 * (t.wall / this_round["off"].wall - 1.0));
            cpu_overhead[mode].push_back(100.0 * (t.cpu / this_round["off"].cpu - 1.0));
          }
      if (a.peak_n > 0) {
        const int reps = std::max(2, int(4e9 / (2.0 * a.peak_n * a.peak_n * a.peak_n)));
        peaks.push_back(bench::eigen_gemm_gflops(a.peak_n, reps));
        kernel_peaks.push_back(bench::kernel_gemm_gflops(a.peak_n, reps));
        std::printf("round %lld  peak    %8.1f GFLOP/s (Eigen %dx%d product), %.1f through the runtime's kernel\n",
                    (long long)round, peaks.back(), a.peak_n, a.peak_n, kernel_peaks.back());
      }
      std::printf("round %lld  compute threads %d%s\n", (long long)round, rt::compute_threads(),
                  rt::helpers_congested() ? " (helpers congested now: small products on one thread)" : "");
    }
    const double peak = median(peaks), kernel_peak = median(kernel_peaks);
    std::string name = a.model.substr(a.model.find_last_of('/') + 1);
    for (const std::string& mode : a.modes) {
      const double s = median(secs[mode]);
      const double gf = flops.total() * double(a.steps) / s / 1e9;
      std::printf("RESULT model=%s batch=%lld threads=%d mode=%s steps_per_s=%.3f gflops=%.3f peak_gflops=%.1f "
                  "efficiency=%.4f",
                  name.c_str(), (long long)config.batch_size, a.threads, mode.c_str(), double(a.steps) / s, gf, peak,
                  peak > 0 ? gf / peak : 0.0);
      std::printf(" cpu_us_per_step=%.1f kernel_peak_gflops=%.1f", 1e6 * median(cpu[mode]) / double(a.steps),
                  kernel_peak);
      if (overhead.count(mode))
        std::printf(" overhead_pct=%.2f cpu_overhead_pct=%.2f", median(overhead[mode]), median(cpu_overhead[mode]));
      std::printf("\n");
    }
    std::fflush(stdout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dl_bench_train: %s\n", e.what());
    return 1;
  }
  return 0;
}
