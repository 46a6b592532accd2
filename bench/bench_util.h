// Shared by the benchmark programs: FLOP counts of a training step from the graph's
// shapes, and the machine's GEMM peak (a plain Eigen MatrixXf product).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "runtime/graph.h"

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

}  // namespace dl::bench
