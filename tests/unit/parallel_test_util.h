// Helpers of the tests of the parallel paths (ops_parallel_test.cpp, probe_sink_test.cpp).
#pragma once

#include <random>
#include <vector>

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

}  // namespace dl::test
