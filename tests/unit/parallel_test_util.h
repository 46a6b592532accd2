// Helpers of the tests of the parallel paths and the probes (ops_parallel_test.cpp,
// probe_sink_test.cpp, probes_test.cpp).
#pragma once

#include <random>
#include <string>
#include <vector>

#include "converter/ir.h"
#include "runtime/parallel.h"
#include "runtime/threads.h"

namespace dl::test {

inline std::vector<float> random_values(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

// Runs f with the helpers forced on at 2 threads, then at 1 thread, and restores the
// defaults.
template <class F>
void on_two_then_one(F f) {
  rt::set_helper_policy(rt::HelperPolicy::kAlways);
  rt::set_compute_threads(2);
  f(2);
  rt::set_compute_threads(1);
  f(1);
  rt::set_compute_threads(0);
  rt::set_helper_policy(rt::HelperPolicy::kAuto);
}

// An empty opset-13 model trained with mse and sgd at learning rate 0.01 (nodes,
// initializers, inputs and outputs are the caller's).
inline ir::Model sgd_mse_model(const std::string& name) {
  ir::Model m;
  m.path = name;
  m.ir_version = 8;
  m.opset = m.original_opset = 13;
  m.metadata["deeplocalize.loss"] = "mse";
  m.metadata["deeplocalize.optimizer"] = "sgd";
  m.metadata["deeplocalize.learning_rate"] = "0.01";
  m.graph.name = name;
  return m;
}

}  // namespace dl::test
