#include "bench/bench_util.h"

#include <algorithm>
#include <ctime>
#include <vector>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Dense>
#pragma GCC diagnostic pop

#include "runtime/ops/gemm_kernel.h"

namespace dl::bench {

StepFlops count_step_flops(const rt::ExecutionGraph& graph) {
  StepFlops f;
  for (const rt::Step& st : graph.steps()) {
    const std::string& type = st.node->op_type;
    if (st.fwd.out.empty() || !st.fwd.out[0] || st.fwd.in.size() < 2 || !st.fwd.in[0] || !st.fwd.in[1]) continue;
    if (type == "LSTM" || type == "GRU" || type == "RNN") {
      // Every row of X (T * batch of them) meets W [D, G*H, I] and a state meets R
      // [D, G*H, H]: forward; backward repeats both products for the inputs' gradients
      // (dX, dh) and again for the weights' (dW, dR).
      if (st.fwd.in.size() < 3 || !st.fwd.in[2] || st.fwd.in[1]->dim(-1) <= 0) continue;
      const double rows = double(st.fwd.in[0]->numel()) / double(st.fwd.in[1]->dim(-1));
      const double one = 2.0 * rows * double(st.fwd.in[1]->numel() + st.fwd.in[2]->numel());
      f.forward += one;
      if (st.needs_backward) f.backward += 2.0 * one;
      continue;
    }
    double out = double(st.fwd.out[0]->numel());
    double macs_per_output = 0;
    if (type == "Gemm") {
      // Y (M x N), A holds M*K values.
      const double m = double(st.fwd.out[0]->dim(0));
      macs_per_output = double(st.fwd.in[0]->numel()) / m;
    } else if (type == "MatMul") {
      macs_per_output = double(st.fwd.in[0]->dim(-1));
    } else if (type == "Conv") {
      // W is (M, C/group, k...): each output sums C/group * k taps.
      macs_per_output = double(st.fwd.in[1]->numel()) / double(st.fwd.in[1]->dim(0));
    } else if (type == "ConvTranspose") {
      // W is (C, M/group, k...): each input value is spread over M/group * k outputs.
      out = double(st.fwd.in[0]->numel());
      macs_per_output = double(st.fwd.in[1]->numel()) / double(st.fwd.in[1]->dim(0));
    } else {
      continue;
    }
    const double one = 2.0 * out * macs_per_output;
    f.forward += one;
    if (!st.needs_backward) continue;
    if (st.bwd.din.size() > 0 && st.bwd.din[0]) f.backward += one;  // dX
    if (st.bwd.din.size() > 1 && st.bwd.din[1]) f.backward += one;  // dW
  }
  return f;
}

int eigen_threads() { return Eigen::nbThreads(); }

double eigen_gemm_gflops(int n, int reps) {
  Eigen::MatrixXf a = Eigen::MatrixXf::Random(n, n), b = Eigen::MatrixXf::Random(n, n), c(n, n);
  c.noalias() = a * b;
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r) {
    c.noalias() = a * b;
    a(0, 0) += c(n - 1, n - 1) * 1e-30f;  // keep the products observable
  }
  const double s = seconds_since(t0);
  return 2.0 * double(n) * n * n * reps / s / 1e9;
}

double kernel_gemm_gflops(int n, int reps) {
  std::vector<float> a(size_t(n) * n, 0.5f), b(size_t(n) * n, 0.25f), c(size_t(n) * n);
  rt::gemm(n, n, n, 1.0f, {a.data(), n, false}, {b.data(), n, false}, c.data(), n, false);
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r) rt::gemm(n, n, n, 1.0f, {a.data(), n, false}, {b.data(), n, false}, c.data(), n, false);
  const double s = seconds_since(t0);
  return 2.0 * double(n) * n * n * reps / s / 1e9;
}

double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void StepTimer::after_update(const rt::ExecutionGraph&, const rt::IterationInfo& info) {
  if (info.iteration == warmup_ - 1) {
    t0_ = std::chrono::steady_clock::now();
    cpu0_ = process_cpu_seconds();
  }
  if (info.iteration == warmup_ + steps_ - 1) {
    seconds_ = seconds_since(t0_);
    cpu_seconds_ = process_cpu_seconds() - cpu0_;
    done_ = true;
  }
}

}  // namespace dl::bench
