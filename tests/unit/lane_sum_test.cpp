// The ops' row reductions (runtime/ops/eigen_map.h: sum_of, sum_of_light, sum_sq_dev,
// dot_dev; row_dot in softmax_rows.h) against their definition: 16 lanes, lane j
// taking the terms k with k % 16 == j in order, then lanes j and j + w added for w = 8,
// 4, 2, 1; bit for bit, for rows of any length and at any address. (The terms of the
// products are chosen exact in float, so whether a build contracts a lane's
// term into a fused multiply-add does not change them.)
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "runtime/ops/eigen_map.h"
#include "runtime/ops/softmax_rows.h"

namespace {

template <class Term>
float tree(int64_t n, Term term) {
  float acc[16] = {};
  for (int64_t k = 0; k < n; ++k) acc[k % 16] += term(k);
  for (int w = 8; w > 0; w /= 2)
    for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
  return acc[0];
}

// An accumulator for sum_of_light that counts what it is given and sums it exactly enough
// (the test's values fit a double's sum without rounding): every value once.
struct Counting {
  int64_t count = 0;
  double sum = 0;
  void put(dl::rt::simd::VecF v) {
    for (int j = 0; j < dl::rt::simd::kLanes; ++j) sum += double(v[j]);
    count += dl::rt::simd::kLanes;
  }
  void put4(dl::rt::simd::VecF a, dl::rt::simd::VecF b, dl::rt::simd::VecF c, dl::rt::simd::VecF d) {
    put(a), put(b), put(c), put(d);
  }
  void put_scalar(float v) { sum += double(v), ++count; }
};

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b)); }

// Random floats with `bits` significant bits (so that products of two stay exact).
std::vector<float> values(size_t n, int bits, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> mant(-(1 << bits) + 1, (1 << bits) - 1), exp(-6, 6);
  std::vector<float> v(n);
  for (float& x : v) x = std::ldexp(float(mant(rng)), exp(rng) - bits);
  return v;
}

}  // namespace

TEST_CASE("sum_of, sum_of_light: the 16-lane tree's bits for rows of every length, at any address") {
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t n = 0; n < 200; ++n)
    for (int trial = 0; trial < 6; ++trial) {
      std::vector<float> buf = values(size_t(n) + 1, 24, uint64_t(n * 10 + trial));
      if (trial == 1) std::fill(buf.begin(), buf.end(), -0.0f);  // all -0: the lanes start at +0, the sum is +0
      if (n > 0 && trial == 2) buf[size_t(n) / 2] = inf, buf[size_t(n) - 1] = -0.0f;
      if (n > 0 && trial == 3) buf[size_t(n) - 1] = std::numeric_limits<float>::quiet_NaN();
      const float* p = buf.data() + (trial & 1);  // (one float off: not vector aligned)
      INFO("n " << n << " trial " << trial);
      const float want = tree(n, [p](int64_t k) { return p[k]; });
      CHECK(same_bits(dl::rt::sum_of(p, n), want));
      dl::rt::simd::Extremes ext;
      CHECK(same_bits(dl::rt::sum_of_light(p, n, ext), want));
      if (trial == 0 && n > 0) {
        CHECK(ext.lo() == *std::min_element(p, p + n));
        CHECK(ext.hi() == *std::max_element(p, p + n));
        // Every value went to the accumulator once (24-bit values over 12 binades: exact in double).
        Counting counted;
        CHECK(same_bits(dl::rt::sum_of_light(p, n, counted), want));
        CHECK(counted.count == n);
        double exact = 0;
        for (int64_t k = 0; k < n; ++k) exact += double(p[k]);
        CHECK(counted.sum == exact);
      }
      CHECK(same_bits(dl::rt::row_sum(p, n), want));
    }
}

TEST_CASE("sum_sq_dev, dot_dev, row_dot: the 16-lane tree's bits for rows of every length") {
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> step(-1000, 1000);
  for (int64_t n = 0; n < 200; ++n) {
    // Exact terms: x - m and the products need at most 24 significant bits. x_wide has 11
    // bits over 12 binades (with m = 0: products of every scale, so the lanes' sums
    // round and their order shows); x_grid is on a grid of 1/16 (x - 0.25 exact, 10 bits);
    // g has 12 bits.
    const std::vector<float> x_wide = values(size_t(n) + 1, 11, uint64_t(n)),
                             g = values(size_t(n) + 1, 12, uint64_t(n) + 7);
    std::vector<float> x_grid(size_t(n) + 1);
    for (float& v : x_grid) v = float(step(rng)) / 16.0f;
    for (const auto& [x, m] : {std::pair{&x_wide, 0.0f}, std::pair{static_cast<const std::vector<float>*>(&x_grid), 0.25f}})
      for (int off = 0; off < 2; ++off) {
        const float* xp = x->data() + off;
        const float* gp = g.data() + off;
        const float mm = m;
        INFO("n " << n << " m " << m << " offset " << off);
        CHECK(same_bits(dl::rt::sum_sq_dev(xp, n, mm), tree(n, [xp, mm](int64_t k) {
                          const float d = xp[k] - mm;
                          return d * d;
                        })));
        CHECK(same_bits(dl::rt::dot_dev(gp, xp, n, mm), tree(n, [gp, xp, mm](int64_t k) { return gp[k] * (xp[k] - mm); })));
        if (m == 0.0f) CHECK(same_bits(dl::rt::row_dot(gp, xp, n), tree(n, [gp, xp](int64_t k) { return gp[k] * xp[k]; })));
      }
  }
}

#if defined(__linux__)
TEST_CASE("the lane sums read no value past a row's end (a row that ends at an unmapped page)") {
  // A row's last values are loaded with a mask (eigen_map.h, add_tail): the lanes past
  // the row must not be read, even where a whole vector would cross into a page that is
  // not mapped (a fault there is a crash).
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  void* mem = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(mem != MAP_FAILED);
  REQUIRE(mprotect(static_cast<char*>(mem) + page, page, PROT_NONE) == 0);
  float* end = reinterpret_cast<float*>(static_cast<char*>(mem) + page);
  const std::vector<float> v = values(256, 11, 3);
  for (int64_t n = 16; n <= 80; ++n) {
    float* p = end - n;  // the row's last value is the page's last
    std::copy(v.begin(), v.begin() + n, p);
    float* g = end - 2 * n - 1;  // a second row before it: dot_dev's and row_dot's other factor
    std::copy(v.begin() + 100, v.begin() + 100 + n, g);
    INFO("n " << n);
    CHECK(same_bits(dl::rt::sum_of(p, n), tree(n, [p](int64_t k) { return p[k]; })));
    dl::rt::simd::Extremes ext;
    CHECK(same_bits(dl::rt::sum_of_light(p, n, ext), tree(n, [p](int64_t k) { return p[k]; })));
    CHECK(same_bits(dl::rt::sum_sq_dev(p, n, 0.0f), tree(n, [p](int64_t k) { return p[k] * p[k]; })));
    CHECK(same_bits(dl::rt::dot_dev(g, p, n, 0.0f), tree(n, [g, p](int64_t k) { return g[k] * p[k]; })));
    CHECK(same_bits(dl::rt::row_dot(g, p, n), tree(n, [g, p](int64_t k) { return g[k] * p[k]; })));
    CHECK(same_bits(dl::rt::dot_dev(p, g, n, 0.0f), tree(n, [g, p](int64_t k) { return p[k] * g[k]; })));
  }
  munmap(mem, 2 * page);
}
#endif
