// See softmax_rows.h.
#include "runtime/ops/softmax_rows.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/ops/eigen_map.h"

namespace dl::rt {
namespace {

using Packet = Eigen::internal::packet_traits<float>::type;
constexpr int64_t kLanes = Eigen::internal::packet_traits<float>::size;
constexpr float kFloor = -100.0f;  // below exp_packet's -88: exp 0

inline Packet exp_packet(const Packet& x) {
  namespace ei = Eigen::internal;
  // Eigen's exp clamps at -88.7 (a denormal, not 0); NaN compares false and stays NaN.
  return ei::pselect(ei::pcmp_lt(x, ei::pset1<Packet>(-88.0f)), ei::pzero(x), ei::pexp(x));
}

}  // namespace

void exp_shifted(const float* x, float shift, float* out, int64_t n) {
  namespace ei = Eigen::internal;
  const Packet s = ei::pset1<Packet>(shift);
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) ei::pstoreu(out + j, exp_packet(ei::psub(ei::ploadu<Packet>(x + j), s)));
  if (j == n) return;
  alignas(64) float tail[kLanes] = {};
  std::copy(x + j, x + n, tail);
  ei::pstore(tail, exp_packet(ei::psub(ei::pload<Packet>(tail), s)));
  std::copy(tail, tail + (n - j), out + j);
}

float exp_shifted_dev(const float* x, float shift, float* out, int64_t n, float* masked) {
  namespace ei = Eigen::internal;
  // x - shift below -88 has exp 0 (exp_packet): its term is 0, also for x = -inf (a masked
  // position), where 0 * -inf would be NaN; hence max(x - shift, kFloor). The -inf are
  // counted in the same pass (a compare and an add per packet).
  const Packet s = ei::pset1<Packet>(shift), floor = ei::pset1<Packet>(kFloor);
  const Packet neg_inf = ei::pset1<Packet>(-std::numeric_limits<float>::infinity()), one = ei::pset1<Packet>(1.0f);
  Packet acc = ei::pzero(s), count = ei::pzero(s);
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    const Packet v = ei::ploadu<Packet>(x + j), d = ei::psub(v, s), e = exp_packet(d);
    ei::pstoreu(out + j, e);
    acc = ei::pmadd(e, ei::pmax(d, floor), acc);
    count = ei::padd(count, ei::pand(ei::pcmp_eq(v, neg_inf), one));
  }
  float dot = ei::predux(acc);
  *masked = ei::predux(count);
  if (j == n) return dot;
  alignas(64) float tail[kLanes] = {};
  std::copy(x + j, x + n, tail);
  ei::pstore(tail, exp_packet(ei::psub(ei::pload<Packet>(tail), s)));
  for (int64_t k = j; k < n; ++k) {
    out[k] = tail[k - j];
    dot += out[k] * std::max(x[k] - shift, kFloor);
    *masked += x[k] == -std::numeric_limits<float>::infinity() ? 1.0f : 0.0f;
  }
  return dot;
}

void normalized_entropies(const float* sum, const float* dot, int64_t rows, float inv_log_n, float* out) {
  namespace ei = Eigen::internal;
  const Packet inv = ei::pset1<Packet>(inv_log_n), zero = ei::pzero(inv), one = ei::pset1<Packet>(1.0f);
  const auto rows_at = [&](const Packet& s, const Packet& d) {
    const Packet h = ei::pmul(ei::psub(ei::plog(s), ei::pdiv(d, s)), inv);
    const Packet finite = ei::pcmp_eq(ei::psub(h, h), zero);  // (NaN - NaN, Inf - Inf: NaN)
    return ei::pselect(finite, ei::pmin(ei::pmax(h, zero), one), h);
  };
  int64_t r = 0;
  for (; r + kLanes <= rows; r += kLanes)
    ei::pstoreu(out + r, rows_at(ei::ploadu<Packet>(sum + r), ei::ploadu<Packet>(dot + r)));
  if (r == rows) return;
  alignas(64) float s[kLanes], d[kLanes] = {};
  std::fill(s, s + kLanes, 1.0f);
  std::copy(sum + r, sum + rows, s);
  std::copy(dot + r, dot + rows, d);
  ei::pstore(s, rows_at(ei::pload<Packet>(s), ei::pload<Packet>(d)));
  std::copy(s, s + (rows - r), out + r);
}

int64_t mask_adjusted_entropies(float* ent, const float* masked, int64_t rows, int64_t n) {
  const float log_n = std::log(float(n));
  int64_t kept = 0;
  for (int64_t r = 0; r < rows; ++r) {
    float h = ent[r];
    if (masked[r] > 0) {
      const float allowed = float(n) - masked[r];
      if (allowed == 1.0f) continue;  // forced: one position left, entropy 0 whatever the scores
      // (no allowed position: h is NaN already, as is the row's softmax)
      if (allowed > 1.0f && std::isfinite(h)) h = std::min(h * (log_n / std::log(allowed)), 1.0f);
    }
    ent[kept++] = h;
  }
  return kept;
}

float row_max(const float* p, int64_t n) {
  constexpr int kL = 16;
  if (n < kL) {
    float m = p[0];
    for (int64_t j = 1; j < n; ++j) m = std::max(m, p[j]);
    return m;
  }
  float acc[kL];
  std::copy(p, p + kL, acc);
  int64_t k = kL;
  for (; k + kL <= n; k += kL)
    for (int j = 0; j < kL; ++j) acc[j] = std::max(acc[j], p[k + j]);
  for (int j = 0; k < n; ++k, ++j) acc[j] = std::max(acc[j], p[k]);
  float m = acc[0];
  for (int j = 1; j < kL; ++j) m = std::max(m, acc[j]);
  return m;
}

float row_sum(const float* p, int64_t n) { return sum_of(p, n); }

float row_dot(const float* a, const float* b, int64_t n) {
  return reduce_detail::lane_sum(
      n, [a, b](int64_t k, auto load) { return load(a + k) * load(b + k); },
      [a, b](int64_t k) { return a[k] * b[k]; });
}

}  // namespace dl::rt
