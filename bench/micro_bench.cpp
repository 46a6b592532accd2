// dl_micro_bench: Google Benchmark micro-benchmarks of the kernels a training step
// spends its time in. Counters: GFLOP/s (FLOPS, 2 per multiply-add) or bytes/s.
//
//   dl_micro_bench [--benchmark_filter=REGEX] [--benchmark_repetitions=5 ...]
//
// BM_EigenGemm, BM_KernelGemm...     the GEMM kernel: bench/micro_gemm.cpp
// BM_Gemm{Forward,Backward}/M/K/N   the Gemm op (transB = 1, as PyTorch exports Linear)
// BM_Conv{Forward,Backward}/...      the Conv op on LeNet-5's two convolutions
// BM_Depthwise/hw/blocked/backward   the depthwise kernels, per-plane or channel-blocked,
//                                    16 images of 96 channels, 3x3 pad 1 (MobileNet's)
// BM_BatchNorm/C/hw/bwd              BatchNormalization in training mode, 16 images, 1 thread
// BM_Softmax/n/bwd                   Softmax over rows of n values, 256 rows, 1 thread
// BM_ReduceStats/n/dead_zone         the probe reduction over n floats
// BM_SinkChunk, BM_ParamChunk         the probes' sums of one chunk, of a parameter's chunks
// BM_OptimizerStep/values/mode       an optimizer step, unobserved or observed (the probes' full iterations)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <random>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Dense>
#pragma GCC diagnostic pop

#include "bench/op_bench.h"
#include "runtime/attrs.h"
#include "runtime/ops/depthwise.h"
#include "runtime/ops/gemm_kernel.h"
#include "runtime/optimizer.h"
#include "runtime/probes.h"
#include "runtime/registry.h"
#include "runtime/threads.h"
#include "runtime/value_simd.h"

namespace {

using namespace dl;

using bench::OpBench;
using bench::random_tensor;

OpBench gemm_bench(int64_t m, int64_t k, int64_t n, bool input_grad) {
  ir::Node node = rt::sample_node("Gemm", 3, 1, {{"transB", rt::attr_i(1)}}, 13);
  return OpBench(node, {random_tensor({m, k}, 0, 1, 1), random_tensor({n, k}, -0.1f, 0.1f, 2),
                        random_tensor({n}, -0.1f, 0.1f, 3)},
                 input_grad);
}

void BM_GemmForward(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  OpBench b = gemm_bench(m, k, n, false);
  for (auto _ : state) b.op->forward(b.fwd);
  state.counters["FLOPS"] = benchmark::Counter(2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_GemmBackward(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const bool dx = state.range(3) != 0;
  OpBench b = gemm_bench(m, k, n, dx);
  b.op->forward(b.fwd);
  for (auto _ : state) b.op->backward(b.bwd);
  state.counters["FLOPS"] =
      benchmark::Counter((dx ? 4.0 : 2.0) * m * n * k, benchmark::Counter::kIsIterationInvariantRate);
}

// (a) 784-256-128-10 at batch 64, (c) 4096-4096-10 at batch 256.
#define GEMM_SHAPES                                                                                          \
  Args({64, 784, 256, 0})->Args({64, 256, 128, 1})->Args({64, 128, 10, 1})->Args({256, 4096, 4096, 0})->Args( \
      {256, 4096, 10, 1})
BENCHMARK(BM_GemmForward)->GEMM_SHAPES->ArgNames({"M", "K", "N", "dx"})->UseRealTime();
BENCHMARK(BM_GemmBackward)->GEMM_SHAPES->ArgNames({"M", "K", "N", "dx"})->UseRealTime();

// LeNet-5 at batch 64: conv1 1->6 5x5 pad 2 on 28x28, conv2 6->16 5x5 on 14x14.
OpBench conv_bench(int64_t batch, int64_t c, int64_t hw, int64_t m, int64_t pad, bool input_grad) {
  ir::Node node = rt::sample_node("Conv", 3, 1, {{"pads", rt::attr_ints({pad, pad, pad, pad})}}, 11);
  return OpBench(node, {random_tensor({batch, c, hw, hw}, 0, 1, 1), random_tensor({m, c, 5, 5}, -0.2f, 0.2f, 2),
                        random_tensor({m}, -0.1f, 0.1f, 3)},
                 input_grad);
}

double conv_flops(int64_t batch, int64_t c, int64_t hw, int64_t m, int64_t pad) {
  const int64_t o = hw + 2 * pad - 4;
  return 2.0 * double(batch * m * o * o) * double(c * 25);
}

void BM_ConvForward(benchmark::State& state) {
  const int64_t batch = state.range(0), c = state.range(1), hw = state.range(2), m = state.range(3),
                pad = state.range(4);
  OpBench b = conv_bench(batch, c, hw, m, pad, false);
  for (auto _ : state) b.op->forward(b.fwd);
  state.counters["FLOPS"] =
      benchmark::Counter(conv_flops(batch, c, hw, m, pad), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_ConvBackward(benchmark::State& state) {
  const int64_t batch = state.range(0), c = state.range(1), hw = state.range(2), m = state.range(3),
                pad = state.range(4);
  const bool dx = c > 1;  // the first layer needs no input gradient
  OpBench b = conv_bench(batch, c, hw, m, pad, dx);
  b.op->forward(b.fwd);
  for (auto _ : state) b.op->backward(b.bwd);
  state.counters["FLOPS"] = benchmark::Counter((dx ? 2 : 1) * conv_flops(batch, c, hw, m, pad),
                                               benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_ConvForward)->Args({64, 1, 28, 6, 2})->Args({64, 6, 14, 16, 0})->ArgNames({"B", "C", "HW", "M", "pad"})->UseRealTime();
BENCHMARK(BM_ConvBackward)->Args({64, 1, 28, 6, 2})->Args({64, 6, 14, 16, 0})->ArgNames({"B", "C", "HW", "M", "pad"})->UseRealTime();

// BatchNormalization in training mode, batch 16, 1 thread, forward or backward (dX,
// dScale, dB written as their first writer, as in training), on the map sizes of
// mobilenet_v2 and shufflenet_v2 at 32x32: 2x2 and 1x1 rows take bn_short's pass over
// every channel, 4x4 and up the per-channel loops (run 58); 7x7 and 14x14 are the last
// stages of the same nets at 224x224, rows of 16-value vectors and a tail (run 60).
void BM_BatchNorm(benchmark::State& state) {
  const int64_t c = state.range(0), hw = state.range(1);
  const bool backward = state.range(2) != 0;
  rt::set_compute_threads(1);
  OpBench b(rt::sample_node("BatchNormalization", 5, 1, {}, 15),
            {random_tensor({16, c, hw, hw}, -1, 1, 1), random_tensor({c}, 0.5f, 1.5f, 2),
             random_tensor({c}, -0.1f, 0.1f, 3), random_tensor({c}, 0, 0, 4), random_tensor({c}, 1, 1, 5)},
            true);
  b.fwd.training = true;
  b.bwd.assign = 7;  // X, scale, B: BatchNormalization writes them first (Op::assigns_gradient)
  b.op->forward(b.fwd);
  for (auto _ : state) {
    if (backward) b.op->backward(b.bwd);
    else b.op->forward(b.fwd);
    benchmark::ClobberMemory();
  }
  state.counters["values"] = benchmark::Counter(double(16 * c * hw * hw), benchmark::Counter::kIsIterationInvariantRate);
  rt::set_compute_threads(0);
}
BENCHMARK(BM_BatchNorm)
    ->ArgsProduct({{96, 384}, {1, 2, 4, 7, 14}, {0, 1}})
    ->ArgNames({"C", "hw", "bwd"})
    ->UseRealTime();

// Softmax over the last axis, 256 rows (attention's batch x heads x queries, or a
// classifier's batch), 1 thread, forward or backward: rows of 64 values (no tail),
// 197 (a ViT's tokens) and 1000 (ImageNet's classes): their sums' lane tail (run 60).
void BM_Softmax(benchmark::State& state) {
  const int64_t n = state.range(0);
  const bool backward = state.range(1) != 0;
  rt::set_compute_threads(1);
  OpBench b(rt::sample_node("Softmax", 1, 1, {}, 13), {random_tensor({256, n}, -4, 4, 1)}, true);
  b.op->forward(b.fwd);
  for (auto _ : state) {
    if (backward) b.op->backward(b.bwd);
    else b.op->forward(b.fwd);
    benchmark::ClobberMemory();
  }
  state.counters["values"] = benchmark::Counter(double(256 * n), benchmark::Counter::kIsIterationInvariantRate);
  rt::set_compute_threads(0);
}
BENCHMARK(BM_Softmax)->ArgsProduct({{64, 197, 1000}, {0, 1}})->ArgNames({"n", "bwd"})->UseRealTime();

// Which depthwise kernel a map size should take (runtime/ops/depthwise.cpp, kBlockedScratch).
void BM_Depthwise(benchmark::State& state) {
  const int64_t hw = state.range(0), n = 16, c = 96;
  const bool blocked = state.range(1) != 0, backward = state.range(2) != 0;
  rt::WindowAttrs wa;
  wa.pads = {1, 1, 1, 1};
  const rt::Window w = rt::plan_window("BM_Depthwise", wa, {n, c, hw, hw}, {3, 3});
  rt::PoolTaps t;
  t.plan(w);
  const int64_t in = w.in_size(), out = w.out_size();
  const rt::Tensor x = random_tensor({n * c * in}, -1, 1, 1), wk = random_tensor({c * 9}, -1, 1, 2),
                   dy = random_tensor({n * c * out}, -1, 1, 3);
  std::vector<float> y(size_t(n * c * out)), dx(size_t(n * c * in)), dw(size_t(c * 9)),
      scratch(size_t(rt::depthwise_blocked_scratch(w)));
  for (auto _ : state) {
    if (blocked && backward)
      rt::depthwise_backward_blocked(w, t, n, c, x.f(), wk.f(), dy.f(), dx.data(), dw.data(), scratch.data());
    else if (blocked)
      rt::depthwise_forward_blocked(w, t, n, c, x.f(), wk.f(), nullptr, y.data(), scratch.data());
    for (int64_t p = 0; !blocked && p < n * c; ++p) {
      const int64_t ch = p % c;
      if (backward)
        rt::depthwise_backward(w, t, x.f() + p * in, wk.f() + ch * 9, dy.f() + p * out, dx.data() + p * in,
                               dw.data() + ch * 9);
      else {  // Conv fills Y with the bias (here 0) first; the blocked kernel writes it whole
        std::fill_n(y.data() + p * out, out, 0.0f);
        rt::depthwise_forward(w, t, x.f() + p * in, wk.f() + ch * 9, y.data() + p * out);
      }
    }
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["FLOPS"] = benchmark::Counter(2.0 * double(n * c * out * 9) * (backward ? 2 : 1),
                                               benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Depthwise)->ArgsProduct({{2, 4, 8, 16, 32, 56, 112}, {0, 1}, {0, 1}})->ArgNames({"hw", "blocked", "bwd"})->UseRealTime();

// The probe reduction: n floats of a ReLU output (about half exactly zero) with the
// dead-zone bookkeeping, or of a gradient without it.
void BM_ReduceStats(benchmark::State& state) {
  const int64_t n = state.range(0);
  const bool relu = state.range(1) != 0;
  const int64_t units = 256;
  rt::Tensor t = random_tensor({n / units, units}, -1, 1, 5);
  if (relu)
    for (int64_t k = 0; k < n; ++k) t.f()[k] = std::max(0.0f, t.f()[k]);
  rt::OpTraits traits;
  traits.role = rt::OpTraits::Role::kActivation;
  traits.has_dead_zone = relu;
  traits.out_lo = relu ? 0.0 : -INFINITY;
  const an::OpDescription desc = rt::describe(traits, t.shape());
  std::vector<uint8_t> flags(units);
  for (auto _ : state) {
    an::TensorStats s = rt::reduce_stats(t, &desc, &flags);
    benchmark::DoNotOptimize(s);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * n * int64_t(sizeof(float)));
}
BENCHMARK(BM_ReduceStats)
    ->ArgsProduct({{64 * 256, 256 * 4096, 4096 * 4096}, {0, 1}})
    ->ArgNames({"n", "relu"})
    ->UseRealTime();

// One chunk as an op's sink reports it (in cache, one thread; 4704 values: one LeNet-5
// conv image): the full statistics of a gradient (kind 0) or of a ReLU output (1), or the light ones (2: moments and extremes,
// the iterations between full ones, runtime/probes.h).
void BM_SinkChunk(benchmark::State& state) {
  const int64_t n = state.range(0);
  const int kind = int(state.range(1));
  rt::Tensor t = random_tensor({n}, -1, 1, 6);
  rt::stats::Bands b;
  if (kind == 1) {
    for (int64_t k = 0; k < n; ++k) t.f()[k] = std::max(0.0f, t.f()[k]);
    b.dead = b.nonneg = true;
  }
  b.light = kind == 2;
  for (auto _ : state) {
    rt::stats::Sums s;
    rt::stats::add_values(t.f(), n, b, s);
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * n);
}
BENCHMARK(BM_SinkChunk)->ArgsProduct({{4096, 4704, 65536}, {0, 1, 2}})->ArgNames({"n", "kind"});

// The statistics of a parameter's optimizer chunks at a full iteration (the optimizer's
// 2048-value chunks of `n` values in all, from L2 for shufflenet_v2's 352k): mode 0 three
// passes (add_update, add_values of the gradient and of the new values: the path before
// add_param_chunk), mode 1 add_param_chunk's one pass.
void BM_ParamChunk(benchmark::State& state) {
  const int64_t n = state.range(0), chunk = 2048;
  const int mode = int(state.range(1));
  rt::Tensor g = random_tensor({n}, -1, 1, 7), b = random_tensor({n}, -1, 1, 8), a = b;
  for (int64_t k = 0; k < n; k += 3) a.f()[k] += 1e-3f;
  rt::stats::Bands none;
  none.light = true;  // (what add_param_chunk takes: moments and extremes)
  for (auto _ : state) {
    rt::stats::ParamSums s;
    for (int64_t off = 0; off < n; off += chunk) {
      const int64_t len = std::min(chunk, n - off);
      if (mode == 0) {
        rt::stats::add_update(b.f() + off, a.f() + off, len, s.update);
        rt::stats::add_values(g.f() + off, len, none, s.grad);
        rt::stats::add_values(a.f() + off, len, none, s.weight);
      } else {
        rt::stats::add_param_chunk(g.f() + off, b.f() + off, a.f() + off, len, s);
      }
    }
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * n);
}
BENCHMARK(BM_ParamChunk)->ArgsProduct({{2048, 352256}, {0, 1}})->ArgNames({"n", "mode"});

// An Adam step over `values` parameter values in tensors of 2,048 values each (as
// shufflenet_v2's 352k in 170 tensors, from L3: weights, gradient and two slots are 5.6 MB):
// mode 0 no observer (the probes' light iterations), 1 an observer that takes each chunk
// and does nothing with it (the cost of the chunked, observed update itself: the copy of
// the old weights, since session 22 in the rules' own loop), 2 an observer taking the
// parameter statistics from the rule's loop (chunk_sums, as ProbeRecorder at full
// iterations since run 39), 3 one computing them after each chunk's update
// (add_param_chunk in on_chunk: as ProbeRecorder before run 39, and now for clipped
// gradients and embedding tables).
struct ParamStatsObserver final : rt::Optimizer::UpdateObserver {
  rt::stats::ParamSums sums;
  int mode = 0;
  void on_chunk(size_t, int64_t, int64_t, const float* g, const float* b, const float* a, int64_t n) override {
    if (mode == 3) rt::stats::add_param_chunk(g, b, a, n, sums);
  }
  rt::stats::ParamSums* chunk_sums(size_t, int64_t) override { return mode == 2 ? &sums : nullptr; }
};
void BM_OptimizerStep(benchmark::State& state) {
  const int64_t total = state.range(0), each = 2048;
  const int mode = int(state.range(1));
  std::vector<rt::Tensor> w, g;
  for (int64_t k = 0; k < total / each; ++k) {
    w.push_back(random_tensor({each}, -1, 1, unsigned(2 * k + 1)));
    g.push_back(random_tensor({each}, -1e-2f, 1e-2f, unsigned(2 * k + 2)));
  }
  std::vector<rt::Param> params;
  for (size_t k = 0; k < w.size(); ++k) params.push_back({"p" + std::to_string(k), &w[k], &g[k]});
  rt::OptimizerConfig cfg;
  cfg.name = "adam";
  cfg.learning_rate = 1e-6;  // (many steps: the weights hardly move)
  auto opt = rt::make_optimizer(cfg);
  ParamStatsObserver observer;
  observer.mode = mode;
  opt->step(params);  // (the first step allocates the slots)
  for (auto _ : state) {
    opt->step(params, mode == 0 ? nullptr : &observer);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * total);
}
BENCHMARK(BM_OptimizerStep)->ArgsProduct({{352256, 2228224}, {0, 1, 2, 3}})->ArgNames({"values", "mode"});

}  // namespace

namespace {

// Relu over LeNet-5's first activation (301,056 values, 1.2 MB: from L2/L3, as in a
// step) with the probe's statistics of it: mode 0 none; 1 the light statistics of each
// 4096-value chunk read back by the sink (the path before the fused loops); 2 the full
// statistics read back; 3 the light statistics in the loop's registers
// (simd::light_pass, what Relu does at light iterations); 4 of its input and its output
// in the registers (simd::light_pass2, when the previous step's output is wanted too).
void BM_ReluChunks(benchmark::State& state) {
  const int64_t n = 301056;
  const int mode = int(state.range(0));
  rt::Tensor x = random_tensor({n}, -1, 1, 7), y = random_tensor({n}, -1, 1, 8);
  rt::stats::Bands b;
  b.light = mode == 1;
  if (mode == 2) b.dead = b.nonneg = true;
  const float* px = x.f();
  float* py = y.f();
  using rt::simd::VecF;
  for (auto _ : state) {
    rt::stats::Sums s, in;
    for (int64_t k = 0; k < n; k += 4096) {
      const int64_t e = std::min(n, k + 4096);
      const float* xx = px + k;
      float* yy = py + k;
      if (mode == 3) {
        rt::simd::light_pass(
            e - k,
            [&](int64_t i) {
              const VecF u = rt::simd::loadv(xx + i), v = u > 0.0f ? u : VecF{};
              rt::simd::storev(yy + i, v);
              return v;
            },
            [&](int64_t i) { return yy[i] = xx[i] > 0 ? xx[i] : 0.0f; }, s);
      } else if (mode == 4) {
        rt::simd::light_pass2(
            e - k,
            [&](int64_t i, VecF& u, VecF& v) {
              u = rt::simd::loadv(xx + i);
              v = u > 0.0f ? u : VecF{};
              rt::simd::storev(yy + i, v);
            },
            [&](int64_t i, float& u, float& v) { v = yy[i] = (u = xx[i]) > 0 ? u : 0.0f; }, in, s);
      } else {
        for (int64_t i = 0; i < e - k; ++i) yy[i] = xx[i] > 0 ? xx[i] : 0.0f;
        if (mode > 0) rt::stats::add_values(yy, e - k, b, s);
      }
    }
    benchmark::DoNotOptimize(s);
    benchmark::DoNotOptimize(in);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * n);
}
BENCHMARK(BM_ReluChunks)->DenseRange(0, 4)->ArgName("mode");
}  // namespace

BENCHMARK_MAIN();
