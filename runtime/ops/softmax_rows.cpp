// See softmax_rows.h.
#include "runtime/ops/softmax_rows.h"

#include <algorithm>

#include "runtime/ops/eigen_map.h"

namespace dl::rt {
namespace {

using Packet = Eigen::internal::packet_traits<float>::type;
constexpr int64_t kLanes = Eigen::internal::packet_traits<float>::size;

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
  return reduce_detail::lane_sum(n, [a, b](int64_t k) { return a[k] * b[k]; });
}

float row_dot_dev(const float* g, const float* p, int64_t n, float m) { return dot_dev(g, p, n, m); }

}  // namespace dl::rt
