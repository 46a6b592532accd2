// dl_lane_bits: the ops' row sums (runtime/ops/eigen_map.h: sum_of, sum_of_light,
// sum_sq_dev, dot_dev; row_dot of runtime/ops/softmax_rows.h) against a scalar
// definition of their 16-lane tree, on random rows of 0 to 299 values (also -0, Inf,
// NaN, tiny values, products that underflow, a mean of -0, rows one float off
// alignment), bit for bit. Unlike
// tests/unit/lane_sum_test.cpp, whose terms are exact in float, the terms here round, so
// it also tells whether this build contracts a row's terms into fused multiply-adds alike
// in the vector loop, in its tail and in the scalar definition (the definition is the
// scalar lane loop the runtime had before run 59: the same bits means the same traces as
// then). Prints the rows checked and how many differed; exit status 1 if any did.
// Built with the project's flags: `build/bench/dl_lane_bits` (bench/README.md, run 60).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "runtime/ops/eigen_map.h"
#include "runtime/ops/softmax_rows.h"

namespace {

template <class Term>
float tree(int64_t n, Term term) {
  if (n < dl::rt::reduce_detail::kLanes) return dl::rt::reduce_detail::short_lane_sum(n, term);
  float acc[16] = {};
  for (int64_t k = 0; k < n; ++k) acc[k % 16] += term(k);
  for (int w = 8; w > 0; w /= 2)
    for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
  return acc[0];
}

bool same(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0 || (a != a && b != b); }

}  // namespace

int main() {
  using namespace dl::rt;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> u(-3.f, 3.f);
  const float inf = std::numeric_limits<float>::infinity();
  long bad = 0, total = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const int64_t len = int64_t(rng() % 300);
    std::vector<float> x(size_t(len) + 1), g(size_t(len) + 1);
    for (float& v : x) v = u(rng) * (trial % 5 == 0 ? 1e-20f : 1.f);
    for (float& v : g) v = u(rng) * (trial % 7 == 0 ? 1e-25f : 1.f);
    if (trial % 11 == 0) for (float& v : x) v = -0.0f;
    if (trial % 13 == 0) for (float& v : g) v = -0.0f;
    if (len && trial % 17 == 0) x[size_t(rng() % uint64_t(len))] = inf;
    if (len && trial % 19 == 0) x[size_t(rng() % uint64_t(len))] = std::numeric_limits<float>::quiet_NaN();
    float m = trial % 3 ? u(rng) : trial % 2 ? -0.0f : 0.0f;
    if (trial % 23 == 0 && len > 0) {
      // Products that underflow: a contracted lane can end at -0 (fma(-tiny, tiny, +0)),
      // and a last value of -0 less m = -0 is +0 where x - (+0) would be -0 (m must go into
      // the vector lanes exactly, as term has it).
      for (float& v : g) v = -1e-30f * std::fabs(u(rng));
      for (float& v : x) v = 1e-30f * std::fabs(u(rng));
      x[size_t(len) - 1] = x[size_t(len)] = -0.0f, g[size_t(len) - 1] = g[size_t(len)] = 1.0f;
      m = -0.0f;
    }
    const float* xp = x.data() + (trial & 1);  // one float off: not vector aligned
    const float* gp = g.data();
    const int64_t n = len - (trial & 1) >= 0 ? len - (trial & 1) : 0;
    simd::Extremes ext;
    const float want_sum = tree(n, [xp](int64_t k) { return xp[k]; });
    const float got[] = {sum_of(xp, n), sum_of_light(xp, n, ext), sum_sq_dev(xp, n, m), dot_dev(gp, xp, n, m),
                         row_dot(gp, xp, n)};
    const float want[] = {want_sum, want_sum,
                          tree(n,
                               [xp, m](int64_t k) {
                                 const float d = xp[k] - m;
                                 return d * d;
                               }),
                          tree(n, [gp, xp, m](int64_t k) { return gp[k] * (xp[k] - m); }),
                          tree(n, [gp, xp](int64_t k) { return gp[k] * xp[k]; })};
    for (size_t i = 0; i < sizeof got / sizeof got[0]; ++i) bad += !same(got[i], want[i]), ++total;
  }
  std::printf("lane sums: %ld rows checked, %ld differing from the scalar definition\n", total, bad);
  return bad != 0;
}
