// Row kernels of Softmax and LogSoftmax (softmax_impl.h), compiled once here so the ops
// do not include Eigen:
// - exp on Eigen's packet math (Cephes' polynomial, within a few ulp of glibc's expf,
//   whose scalar calls were most of the ops' time). Every value goes through the same
//   packet code (a row's tail is padded to a full packet), so a value's exp does not
//   depend on where it sits in a row or how long the row is. NaN stays NaN; below -88
//   (where expf turns denormal) the result is 0, so exp(-inf) is exactly 0 as before.
// - sums over a row in eigen_map.h's fixed lane order (vectorised, independent of the
//   buffer's address and of the thread count); the entropy term (exp_shifted_dev) in the
//   exp packets' lanes (like exp itself, its bits depend on the target's vector width,
//   never on the thread count).
#pragma once

#include <cstdint>

namespace dl::rt {

// out[j] = exp(x[j] - shift) for j < n; out may be x.
void exp_shifted(const float* x, float shift, float* out, int64_t n);
// The same, returning sum out[j] * (x[j] - shift) (a Softmax row's entropy term, from the
// exp pass's registers) in a fixed lane order; out must not be x. A value whose exp is 0
// (below -88, a masked -inf) adds 0. *masked = the number of x[j] = -inf.
float exp_shifted_dev(const float* x, float shift, float* out, int64_t n, float* masked);
// Rows' entropies over log(n) from their sums S = sum exp(x - max) and dots
// D = sum exp(x - max) (x - max): out[r] = (log S - D / S) * inv_log_n, clamped to [0, 1]
// when finite (rounding), NaN/Inf as they come; on packets (out may be sum or dot).
void normalized_entropies(const float* sum, const float* dot, int64_t rows, float inv_log_n, float* out);
// Under a mask: normalized_entropies' rows of n values of which masked[r] were -inf
// (probability 0) renormalised over their allowed positions, ent[r] * log(n) /
// log(n - masked[r]) (at most 1); a row with one allowed position (its entropy is 0
// whatever the scores) is dropped. Compacts ent in place; returns the rows kept.
int64_t mask_adjusted_entropies(float* ent, const float* masked, int64_t rows, int64_t n);
// max p[j] (n >= 1), in 16 lanes. Exact for a row without NaN; with a NaN the result
// may or may not be NaN, and the row's sum (so each output) is NaN either way.
float row_max(const float* p, int64_t n);
// sum p[j]
float row_sum(const float* p, int64_t n);
// sum a[j] * b[j]
float row_dot(const float* a, const float* b, int64_t n);

}  // namespace dl::rt
