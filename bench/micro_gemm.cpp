// dl_micro_bench's GEMM benchmarks (bench/micro_bench.cpp has the others):
//
// BM_EigenGemm/n/threads   plain Eigen MatrixXf product C = A * B: the machine's peak
// BM_KernelGemm/n/threads  the same through the runtime's GEMM kernel and thread pool
// BM_KernelGemmShapes/...  the kernel, 1 thread, on the TransformerEncoder's products:
//                          64 per-head products (attention, forward and backward
//                          shapes) or one projection product (batch 1)
// BM_KernelGemmSplit/...   the kernel at 1 and 2 threads (helpers always on) on shallow
//                          and deep products, B stored transposed: how a product is cut
//                          across threads (split_columns in runtime/ops/gemm_kernel.cpp)
#include <benchmark/benchmark.h>

#include <vector>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Dense>
#pragma GCC diagnostic pop

#include "runtime/ops/gemm_kernel.h"
#include "runtime/parallel.h"
#include "runtime/threads.h"

namespace {

using namespace dl;

void set_threads(benchmark::State& state, int threads) {
  Eigen::setNbThreads(threads);
  state.counters["threads"] = threads;
}

void BM_EigenGemm(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  set_threads(state, static_cast<int>(state.range(1)));
  Eigen::MatrixXf a = Eigen::MatrixXf::Random(n, n), b = Eigen::MatrixXf::Random(n, n), c(n, n);
  for (auto _ : state) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["FLOPS"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
  Eigen::setNbThreads(0);
}
BENCHMARK(BM_EigenGemm)
    ->ArgsProduct({{512, 1024, 2048}, {1, 2}})
    ->ArgNames({"n", "threads"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The same product through the runtime's kernel and thread pool (runtime/parallel.h).
void BM_KernelGemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  rt::set_compute_threads(static_cast<int>(state.range(1)));
  state.counters["threads"] = double(state.range(1));
  std::vector<float> a(size_t(n * n), 0.5f), b(size_t(n * n), 0.25f), c(size_t(n * n));
  for (auto _ : state) {
    rt::gemm(n, n, n, 1.0f, {a.data(), n, false}, {b.data(), n, false}, c.data(), n, false);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["FLOPS"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
  rt::set_compute_threads(0);
}
BENCHMARK(BM_KernelGemm)
    ->ArgsProduct({{512, 1024, 2048}, {1, 2}})
    ->ArgNames({"n", "threads"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// C (m x n) = op(A) op(B) for `batch` independent products, A (B) stored transposed
// when ta (tb): the transformer's products (bench/README.md, run 15).
void BM_KernelGemmShapes(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2), batch = state.range(5);
  const bool ta = state.range(3) != 0, tb = state.range(4) != 0;
  rt::set_compute_threads(1);
  std::vector<float> a(size_t(batch * m * k), 0.5f), b(size_t(batch * k * n), 0.25f), c(size_t(batch * m * n));
  for (auto _ : state) {
    for (int64_t t = 0; t < batch; ++t)
      rt::gemm(m, n, k, 1.0f, {a.data() + t * m * k, ta ? m : k, ta}, {b.data() + t * k * n, tb ? k : n, tb},
               c.data() + t * m * n, n, false);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["FLOPS"] =
      benchmark::Counter(2.0 * double(batch * m * n * k), benchmark::Counter::kIsIterationInvariantRate);
  rt::set_compute_threads(0);
}
BENCHMARK(BM_KernelGemmShapes)
    ->Args({64, 64, 32, 0, 0, 64})     // scores Q K^T
    ->Args({64, 32, 64, 0, 1, 64})     // its dQ = dS K
    ->Args({32, 64, 64, 1, 0, 64})     // its dK^T = Q^T dS
    ->Args({64, 32, 64, 0, 0, 64})     // P V
    ->Args({64, 64, 32, 0, 1, 64})     // its dP = dO V^T
    ->Args({64, 32, 64, 1, 0, 64})     // its dV = P^T dO
    ->Args({1024, 384, 128, 0, 0, 1})  // in-projection
    ->Args({1024, 512, 128, 0, 0, 1})  // feed-forward up
    ->Args({1024, 128, 512, 0, 0, 1})  // feed-forward down
    ->ArgNames({"m", "n", "k", "ta", "tb", "batch"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// C (m x n) = A (m x k) B^T (B stored n x k) at 1 or 2 threads, helpers always on: a 1x1
// Conv's dW over one-position maps (k = the images, 16), the MLP's and attention's.
void BM_KernelGemmSplit(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  rt::set_compute_threads(static_cast<int>(state.range(3)));
  rt::set_helper_policy(rt::HelperPolicy::kAlways);
  std::vector<float> a(size_t(m * k), 0.5f), b(size_t(k * n), 0.25f), c(size_t(m * n));
  for (auto _ : state) {
    rt::gemm(m, n, k, 1.0f, {a.data(), k, false}, {b.data(), k, true}, c.data(), n, false);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["FLOPS"] = benchmark::Counter(2.0 * double(m * n * k), benchmark::Counter::kIsIterationInvariantRate);
  rt::set_helper_policy(rt::HelperPolicy::kAuto);
  rt::set_compute_threads(0);
}
BENCHMARK(BM_KernelGemmSplit)
    ->ArgsProduct({{320}, {960}, {16}, {1, 2}})
    ->ArgsProduct({{1280}, {320}, {16}, {1, 2}})
    ->ArgsProduct({{256}, {2304}, {64}, {1, 2}})
    ->ArgsProduct({{64}, {784}, {256}, {1, 2}})
    ->ArgsProduct({{1024}, {384}, {128}, {1, 2}})
    ->ArgNames({"m", "n", "k", "threads"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
