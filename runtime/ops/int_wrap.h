// int64 arithmetic of the ops' integer paths (index and shape arithmetic, token ids): it
// wraps modulo 2^64 like NumPy's int64 and ONNX Runtime instead of being undefined on
// overflow, and never traps (INT64_MIN / -1 raises SIGFPE on x86-64).
#pragma once

#include <cstdint>
#include <type_traits>

namespace dl::rt {

inline int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrap_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
inline int64_t wrap_neg(int64_t a) { return static_cast<int64_t>(uint64_t{0} - static_cast<uint64_t>(a)); }
// Truncates toward zero like C; 0 for a zero divisor; INT64_MIN / -1 wraps to INT64_MIN.
inline int64_t wrap_div(int64_t a, int64_t b) { return b == 0 ? 0 : b == -1 ? wrap_neg(a) : a / b; }

// a + b for the float and int64 paths of one template.
template <typename T>
T plus(T a, T b) {
  if constexpr (std::is_same_v<T, int64_t>)
    return wrap_add(a, b);
  else
    return a + b;
}

}  // namespace dl::rt
