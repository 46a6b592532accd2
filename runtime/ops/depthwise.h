// Direct depthwise convolution for Conv (runtime/ops/conv.cpp) when every group has one
// input channel (group = C, MobileNet's and ShuffleNet's 3x3 layers): one input plane
// and one kernel per output channel. Through im2col and a GEMM such a layer is a
// 1 x k x positions product per channel, all call overhead and no arithmetic; here each
// kernel tap is one pass over an output row, which the compiler vectorises.
//
// Every output sums its taps in the fixed order (kd, kh, kw), and each dW entry its
// products in output order, so results do not depend on how images are split among
// threads (Conv splits by images only).
#pragma once

#include <cstdint>

#include "runtime/ops/window.h"

namespace dl::rt {

// y (one output plane, out_size()) += the convolution of x (one input plane,
// in_size()) with the kernel wk (k_size() taps). `taps` is planned for `w`.
void depthwise_forward(const Window& w, const PoolTaps& taps, const float* x, const float* wk, float* y);

// For one plane pair: dx (or null) += the gradient of x, dw (or null; k_size() taps)
// += the gradient of the kernel.
void depthwise_backward(const Window& w, const PoolTaps& taps, const float* x, const float* wk, const float* dy,
                        float* dx, float* dw);

}  // namespace dl::rt
