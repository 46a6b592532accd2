// The recurrent ops' gate activations on Eigen's packet math (rational approximations
// of tanh and the logistic function, a few ulp from the exact values): glibc's scalar
// tanhf and expf were a third of an LSTM's training step (bench/README.md, run 14).
// Every value, one at a time or in a row, goes through the same packet code (a row's
// tail is padded to a full packet, never run on a scalar path), so a value's result
// does not depend on where it sits: a row with sequence length L still computes what its
// first L steps alone do, for any batch and thread count.
#include "runtime/ops/eigen_map.h"
#include "runtime/ops/rnn_common.h"

namespace dl::rt::rnn {
namespace {

using Packet = Eigen::internal::packet_traits<float>::type;
constexpr int64_t kLanes = Eigen::internal::packet_traits<float>::size;

inline Packet apply_packet(Act a, const Packet& x) {
  namespace ei = Eigen::internal;
  switch (a) {
    case Act::kSigmoid: {
      // Eigen's exp stops at a denormal below -88; the logistic function is 0 there (a
      // NaN compares false and stays NaN).
      const Packet y = ei::scalar_logistic_op<float>().packetOp(x);
      return ei::pselect(ei::pcmp_lt(x, ei::pset1<Packet>(-88.0f)), ei::pzero(x), y);
    }
    case Act::kTanh: return ei::generic_fast_tanh_float(x);
    case Act::kRelu: break;
  }
  return x;  // not reached: Relu stays scalar (x > 0 ? x : 0 sends NaN to 0, as before)
}

}  // namespace

float act_apply(Act a, float x) {
  if (a == Act::kRelu) return x > 0.0f ? x : 0.0f;
  alignas(64) float v[kLanes];
  Eigen::internal::pstore(v, apply_packet(a, Eigen::internal::pset1<Packet>(x)));
  return v[0];
}

void apply_row(const Gate& g, float* x, int64_t n) {
  namespace ei = Eigen::internal;
  if (std::isfinite(g.clip))
    for (int64_t i = 0; i < n; ++i) x[i] = std::min(std::max(x[i], -g.clip), g.clip);  // keeps NaN
  if (g.act == Act::kRelu) {
    for (int64_t i = 0; i < n; ++i) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
    return;
  }
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) ei::pstoreu(x + i, apply_packet(g.act, ei::ploadu<Packet>(x + i)));
  if (i == n) return;
  alignas(64) float tail[kLanes] = {};
  std::copy(x + i, x + n, tail);
  ei::pstore(tail, apply_packet(g.act, ei::pload<Packet>(tail)));
  std::copy(tail, tail + (n - i), x + i);
}

}  // namespace dl::rt::rnn
