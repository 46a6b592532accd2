// Internal to optimizer*.cpp: the update rules' factory. Not part of the interface.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/optimizer.h"

namespace dl::rt::opt_detail {

bool known(const std::string& lowercase_name);

// A rule's element loop body(k) over [0, n), copying w[k] to before[k] first when
// `before` is not null (Optimizer::update): two loops, so each vectorizes on its own.
// The weights, gradient, slots and `before` are distinct buffers (ivdep: GCC's run-time
// overlap checks for five streams left the copying loop scalar).
#if defined(__clang__)
#define DL_OPT_INDEPENDENT _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define DL_OPT_INDEPENDENT _Pragma("GCC ivdep")
#else
#define DL_OPT_INDEPENDENT
#endif
template <class Body>
inline void each_value(float* w, float* before, int64_t n, Body body) {
  if (before) {
    DL_OPT_INDEPENDENT
    for (int64_t k = 0; k < n; ++k) {
      before[k] = w[k];
      body(k);
    }
  } else {
    DL_OPT_INDEPENDENT
    for (int64_t k = 0; k < n; ++k) body(k);
  }
}

// The rule for an already validated, lower-cased config.
std::unique_ptr<Optimizer> make_rule(const OptimizerConfig& config);

}  // namespace dl::rt::opt_detail
