// Shared by the benchmark programs: FLOP counts of a training step from the graph's
// shapes, the machine's GEMM peak (a plain Eigen MatrixXf product), and timing helpers.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/graph.h"
#include "runtime/trainer.h"

namespace dl::bench {

// Multiply-add FLOPs (2 per MAC) of one training step's matrix products: every Gemm,
// MatMul and Conv forward, plus the backward products the graph actually runs (dW for
// each weight, dX only where a gradient flows into the data input).
struct StepFlops {
  double forward = 0, backward = 0;
  double total() const { return forward + backward; }
};
StepFlops count_step_flops(const rt::ExecutionGraph& graph);

// GFLOP/s of `reps` products C.noalias() = A * B of n x n float matrices (Eigen,
// column-major, the threads Eigen is allowed), after one untimed product.
double eigen_gemm_gflops(int n, int reps);

// The same product through the runtime's GEMM kernel (runtime/ops/gemm_kernel.h) and
// its thread pool: what Gemm/MatMul/Conv can reach on this machine right now.
double kernel_gemm_gflops(int n, int reps);

// Threads Eigen's products may use (Eigen::nbThreads()).
int eigen_threads();

inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// CPU time of the whole process (all threads), in seconds.
double process_cpu_seconds();

// The process CPU time one call of f takes (all threads), in ms: steadier than the wall
// clock on a shared machine (dl_conv_bench, dl_gemm_bench).
template <class F>
double cpu_ms(F f) {
  const double t0 = process_cpu_seconds();
  f();
  return (process_cpu_seconds() - t0) * 1e3;
}

double median(std::vector<double> v);

// Times iterations [warmup, warmup + steps) of one Trainer::run and stops it: wall time,
// and the process's CPU time (all threads), which a loaded machine disturbs much less.
class StepTimer : public rt::TrainListener {
 public:
  StepTimer(int64_t warmup, int64_t steps) : warmup_(warmup), steps_(steps) {}
  void after_update(const rt::ExecutionGraph&, const rt::IterationInfo& info) override;
  bool should_stop() override { return done_; }
  double seconds() const { return seconds_; }
  double cpu_seconds() const { return cpu_seconds_; }

 private:
  int64_t warmup_, steps_;
  std::chrono::steady_clock::time_point t0_;
  double cpu0_ = 0;
  double seconds_ = 0, cpu_seconds_ = 0;
  bool done_ = false;
};

}  // namespace dl::bench
