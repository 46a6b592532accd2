// stats::add_param_chunk (runtime/param_stats.cpp): one pass over a parameter chunk's
// gradient, old and new values gives what the separate passes (add_values of the
// gradient and of the new values, to moments and extremes; add_update) give: the same
// counts and extremes, sums up to rounding, and NaN/Inf counted exactly.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "runtime/probe_stats.h"

namespace {

namespace stats = dl::rt::stats;

struct Chunk {
  std::vector<float> grad, before, after;
};

// n values; about one in five gradients and one in seven changes exactly zero.
Chunk chunk(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  Chunk c;
  for (int64_t k = 0; k < n; ++k) {
    c.grad.push_back(k % 5 == 0 ? 0.0f : u(rng) * 1e-2f);
    c.before.push_back(u(rng));
    c.after.push_back(k % 7 == 0 ? c.before.back() : c.before.back() - 1e-3f * u(rng));
  }
  return c;
}

void check_same(const stats::Sums& got, const stats::Sums& want) {
  CHECK(got.mn == want.mn);
  CHECK(got.mx == want.mx);
  CHECK(got.zeros == want.zeros);
  CHECK(got.nan == want.nan);
  CHECK(got.inf == want.inf);
  CHECK(got.sum == doctest::Approx(want.sum).epsilon(1e-5));
  CHECK(got.sumsq == doctest::Approx(want.sumsq).epsilon(1e-5));
  CHECK(got.sumabs == doctest::Approx(want.sumabs).epsilon(1e-5));
}

// Both ways over the chunk in pieces of `piece` values (the optimizer's chunks).
void compare(const Chunk& c, int64_t piece) {
  const int64_t n = int64_t(c.grad.size());
  stats::ParamSums got, want;
  stats::Bands none;
  none.light = true;
  for (int64_t off = 0; off < n; off += piece) {
    const int64_t len = std::min(piece, n - off);
    stats::add_param_chunk(c.grad.data() + off, c.before.data() + off, c.after.data() + off, len, got);
    stats::add_values(c.grad.data() + off, len, none, want.grad);
    stats::add_values(c.after.data() + off, len, none, want.weight);
    stats::add_update(c.before.data() + off, c.after.data() + off, len, want.update);
  }
  check_same(got.grad, want.grad);
  check_same(got.weight, want.weight);
  CHECK(got.update.nonfinite == want.update.nonfinite);
  if (std::isfinite(want.update.sq)) CHECK(got.update.sq == doctest::Approx(want.update.sq).epsilon(1e-5));
}

// The one pass over the whole chunk.
stats::ParamSums once(const Chunk& c) {
  stats::ParamSums s;
  stats::add_param_chunk(c.grad.data(), c.before.data(), c.after.data(), int64_t(c.grad.size()), s);
  return s;
}

}  // namespace

TEST_CASE("add_param_chunk: one pass gives the separate passes' statistics") {
  // Tails of every length, a whole vector loop, more than one 4096-value block.
  for (int64_t n : {1, 7, 15, 16, 17, 33, 64, 100, 2048, 4096, 4097, 9000}) {
    INFO("n = " << n);
    const Chunk c = chunk(n, unsigned(n));
    compare(c, n);
    compare(c, 2048);
  }
  // A chunk of zeros, a chunk that did not change.
  Chunk z = chunk(300, 3);
  std::fill(z.grad.begin(), z.grad.end(), 0.0f);
  z.after = z.before;
  const stats::ParamSums s = once(z);
  CHECK(s.grad.mn == 0.0f);
  CHECK(s.grad.mx == 0.0f);
  CHECK(s.grad.sumsq == 0.0);
  CHECK(s.update.sq == 0.0);
  // Moments only: no sum of |x|, no zeros counted (an::TensorStats::kNoMagnitudes).
  CHECK(s.grad.zeros == 0);
  CHECK(s.weight.sumabs == 0.0);
}

TEST_CASE("add_param_chunk: NaN and Inf are counted in the stream that holds them") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t at : {0, 5, 16, 999, 1000}) {  // in the vectors and in the tail (n = 1001)
    INFO("at " << at);
    Chunk c = chunk(1001, 9);
    c.grad[size_t(at)] = nan;
    c.after[size_t((at + 3) % 1001)] = inf;
    compare(c, 1001);
    const stats::ParamSums s = once(c);
    CHECK(s.grad.nan == 1);
    CHECK(s.grad.inf == 0);
    CHECK(s.weight.inf == 1);
    CHECK(s.weight.nan == 0);
    CHECK(s.update.nonfinite == 1);
    CHECK(std::isfinite(s.grad.sum));
    CHECK(std::isfinite(s.weight.sum));
  }
  // One stream not finite, the others on the fast path: a NaN gradient alone; an Inf in
  // the old values alone (only the change is not finite).
  Chunk g = chunk(500, 10), b = chunk(500, 11);
  g.grad[17] = nan;
  b.before[250] = inf;
  compare(g, 500);
  compare(b, 500);
  const stats::ParamSums sg = once(g), sb = once(b);
  CHECK(sg.grad.nan == 1);
  CHECK(sg.weight.nan + sg.weight.inf == 0);
  CHECK(sg.update.nonfinite == 0);
  CHECK(sb.update.nonfinite == 1);
  CHECK(sb.grad.nan + sb.grad.inf + sb.weight.nan + sb.weight.inf == 0);
  // Finite values whose float sums overflow: the exact path's double sums.
  Chunk big = chunk(64, 4);
  for (float& v : big.after) v = 3e38f;
  const stats::ParamSums s = once(big);
  CHECK(s.weight.inf == 0);
  CHECK(std::isfinite(s.weight.sum));
  CHECK(s.weight.sum == doctest::Approx(64 * 3e38));
  CHECK(s.update.nonfinite == 0);
  // Finite changes whose squares (or whose float differences) overflow, in the vectors
  // and in the tail (n = 67): taken in double, not counted as NaN/Inf.
  Chunk jump = chunk(67, 5);
  for (size_t k = 0; k < 67; ++k) jump.before[k] = k % 2 ? -3e38f : 0.0f, jump.after[k] = 3e38f;
  const stats::ParamSums sj = once(jump);
  CHECK(sj.update.nonfinite == 0);
  CHECK(sj.update.sq == doctest::Approx(34 * 9e76 + 33 * 36e76));
}
