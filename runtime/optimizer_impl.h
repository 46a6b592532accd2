// Internal to optimizer*.cpp: the update rules' factory. Not part of the interface.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/optimizer.h"
#include "runtime/param_chunk.h"
#include "runtime/value_simd.h"

namespace dl::rt::opt_detail {

bool known(const std::string& lowercase_name);

// A rule's update of n values: rule(w, g, s) on vectors (simd::VecF) and on single
// floats for the last n % kLanes, a generic lambda that updates the weights w and the
// slot states s[0..S) in place from the gradient g: the same expressions, so the same
// float operations (and FMA contractions), on both. Explicit vectors rather than a
// scalar loop left to the auto-vectorizer, so that the statistics can ride along:
// - `before` not null (an UpdateObserver's on_chunk watches; n is at most one chunk):
//   receives w's old values, one more store of values the loop loads anyway (a copy of
//   its own had been a pass over weights not touched since the last update, run 37);
// - `sums` not null (an UpdateObserver's chunk_sums; n is a whole part): receives the
//   values' statistics (stats::ParamChunk, add_param_chunk's blocks) from the
//   registers that hold the gradient and the old and new values: no second pass over
//   them after the update, no copy of the old values (bench/README.md run 39).
// The update is the same in every case.
template <int S, int kMode, class Rule>
inline void each_vector_as(float* __restrict w, const float* __restrict g, float* const* s, int64_t n,
                           float* __restrict before, stats::ParamSums* sums, Rule rule) {
  using simd::kLanes;
  using simd::VecF;
  using Chunk = stats::ParamChunk;
  // (Locals the stores cannot reach, so the compiler keeps the slots' pointers, the
  // rule's constants and the statistics' chains in registers.)
  float* __restrict slot[S > 0 ? S : 1] = {};
  for (int j = 0; j < S; ++j) slot[j] = s[j];
  Chunk chunk;
  Chunk::Block block;
  // (The scalar remainder as a lambda; the vector body written out in the loop: a
  // closure holding the chains' address would keep them in memory.)
  const auto scalar = [&](int64_t k) {
    float x = w[k];
    const float old = x;
    float state[S > 0 ? S : 1];
    for (int j = 0; j < S; ++j) state[j] = slot[j][k];
    rule(x, g[k], state);
    w[k] = x;
    for (int j = 0; j < S; ++j) slot[j][k] = state[j];
    if constexpr (kMode == 1) before[k] = old;
    if constexpr (kMode == 2) Chunk::add_scalar(simd::opaque(g[k]), simd::opaque(old), simd::opaque(x), block);
  };
  const int64_t vec_end = n - n % kLanes;
  for (int64_t k = 0; k < n;) {
    const int64_t start = k, end = kMode == 2 ? std::min(n, k + Chunk::kValues) : n, vend = std::min(vec_end, end);
    for (; k < vend; k += kLanes) {
      VecF x = simd::loadv(w + k);
      const VecF old = x, grad = simd::loadv(g + k);
      VecF state[S > 0 ? S : 1];
      for (int j = 0; j < S; ++j) state[j] = simd::loadv(slot[j] + k);
      rule(x, grad, state);
      simd::storev(w + k, x);
      for (int j = 0; j < S; ++j) simd::storev(slot[j] + k, state[j]);
      if constexpr (kMode == 1) simd::storev(before + k, old);
      if constexpr (kMode == 2) chunk.add(simd::opaque(grad), simd::opaque(old), simd::opaque(x), block);
    }
    for (; k < end; ++k) scalar(k);
    if constexpr (kMode == 2) {
      chunk.flush(block);
      Chunk::end_block(block, g + start, w + start, k - start, *sums);
    }
  }
}
template <int S, class Rule>
inline void each_vector(float* w, const float* g, float* const* s, int64_t n, float* before, stats::ParamSums* sums,
                        Rule rule) {
  if (sums) each_vector_as<S, 2>(w, g, s, n, nullptr, sums, rule);
  else if (before) each_vector_as<S, 1>(w, g, s, n, before, nullptr, rule);
  else each_vector_as<S, 0>(w, g, s, n, nullptr, nullptr, rule);
}

// The square root and the larger of two values, on floats as on vectors (the rules are
// generic lambdas).
inline float root(float x) { return std::sqrt(x); }
inline simd::VecF root(simd::VecF x) { return simd::vsqrt(x); }
inline float magnitude(float x) { return std::fabs(x); }
inline simd::VecF magnitude(simd::VecF x) { return simd::vabs(x); }
// a if a > b, else b (also when either is NaN: b), as Eigen's cwiseMax(b, a).
inline float larger(float a, float b) { return a > b ? a : b; }
inline simd::VecF larger(simd::VecF a, simd::VecF b) { return simd::vmax(a, b); }

// The rule for an already validated, lower-cased config.
std::unique_ptr<Optimizer> make_rule(const OptimizerConfig& config);

}  // namespace dl::rt::opt_detail
