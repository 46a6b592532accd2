// Direct kernels for a Conv with one input channel and one group (LeNet-5's first layer:
// 1 -> 6 channels, 5x5 'same' on 28x28): the forward pass and dW without im2col. With
// one input channel the GEMM is 6 x 784 x 25 per image, and im2col plus GEBP's packing
// moved more data than the product computes; here each output row (up to 32 values: two
// AVX-512 or four AVX2 vectors, runtime/ops/row_vec.h) sums its taps in registers, every
// map of a chunk reusing the loads.
// Sums run in a fixed order per image (taps in kernel order), whatever the threads.
// dX, when asked for (not for a model's input), stays on the GEMM path (runtime/ops/conv.cpp).
#pragma once

#include <cstdint>

#include "runtime/ops/window.h"

namespace dl::rt {

// Whether the direct kernels take this window (one input channel, one group): 2-D or 1-D,
// stride 1, no dilation, output rows of at most 32 values, kernel rows of at most 16
// taps, built with AVX-512 or AVX2 + FMA.
bool single_channel_direct(const Window& w);

// y (maps planes of out H x out W) = bias[map] (0 without bias) + wt (maps x kH x kW)
// correlated with x (one in H x in W plane, zeros outside).
void single_channel_forward(const Window& w, int64_t maps, const float* x, const float* wt, const float* bias,
                            float* y);

// dw (maps x kH x kW) += sum over the output positions of dy (maps planes) times the
// input each tap reads there.
void single_channel_dw(const Window& w, int64_t maps, const float* x, const float* dy, float* dw);

}  // namespace dl::rt
