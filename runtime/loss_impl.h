// Internal to the loss files (loss*.cpp, metric.cpp): shared constants, shape checks and
// the per-family factories. Not part of the runtime's interface.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/loss.h"
#include "runtime/tensor.h"

namespace dl::rt::loss_detail {

// Keras' backend.epsilon() and the clip bounds, as the float32 values TF computes with:
// clip_by_value(x, eps, 1 - eps) on a float32 tensor uses float32(1e-7) and
// float32(1 - float32(1e-7)) = 0.99999988.
constexpr float kEps = 1e-7f;
constexpr float kHi = 1.0f - kEps;

// pred's elements split into rows x width: width is the last dim for rank >= 2, else 1.
struct Layout {
  int64_t rows = 0;
  int64_t width = 1;
};

Layout layout_of(const Tensor& pred);

// Checks pred (float32, allocated), target (same shape up to trailing 1-dims, any dtype)
// and grad (null, or float32 with pred's element count). Throws ShapeError naming `loss`.
Layout check_same_shape(const std::string& loss, const Tensor& pred, const Tensor& target, const Tensor* grad);

// As above for sparse targets: one class id per row of pred.
Layout check_sparse_shape(const std::string& loss, const Tensor& pred, const Tensor& target, const Tensor* grad);

// The class id of row r, validated (integer in [0, width)); DataError otherwise.
int64_t class_id(const std::string& loss, const Tensor& target, int64_t r, int64_t width);

// TF's clip_by_value (minimum then maximum): NaN passes through. Its gradient is 1 on the
// closed interval [kEps, kHi] and 0 elsewhere (also 0 for NaN).
inline double clip_prob(float p) { return p < kEps ? double(kEps) : (p > kHi ? double(kHi) : double(p)); }
inline bool clip_passes(float p) { return p >= kEps && p <= kHi; }

std::unique_ptr<Loss> make_elementwise_loss(const std::string& canonical, bool from_logits);
std::unique_ptr<Loss> make_categorical_loss(const std::string& canonical, bool from_logits);

}  // namespace dl::rt::loss_detail
