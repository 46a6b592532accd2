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

// The same kernels on a block of channels at once, for maps whose rows are too short to
// vectorise along (MobileNet's and ShuffleNet's at 32x32 inputs: rows of 16 down to 1
// outputs, where the per-plane kernels above ran at 2-4 GFLOP/s). Each block of
// simd::kLanes channels of one image is gathered position-major ([position][lane]), so
// every tap is one vector multiply-add across the block's channels, and scattered back
// afterwards. Every channel's arithmetic, and its order, is that of the per-plane kernels
// above, and both give the same bits for Y and dX (a unit test); dW differs in rounding
// only: GCC vectorises the per-plane kernel's row-tail sums (a strided row's whole sum)
// as products rounded apart from their in-order sum, target by target, while the blocked
// kernel fuses every multiply-add.
// The lane count changes no result, but it sizes the scratch, so which kernel a layer
// takes (depthwise_prefers_blocked) can differ between AVX-512 and AVX2 builds.
//
// For `images` images of C planes each, one output channel per input channel: y =
// bias (or 0) + the convolution of x with wk (C x k_size()). `scratch` holds
// depthwise_blocked_scratch(w) floats.
void depthwise_forward_blocked(const Window& w, const PoolTaps& taps, int64_t images, int64_t channels,
                               const float* x, const float* wk, const float* bias, float* y, float* scratch);
// dx (or null) += the gradient of x, dw (C x k_size(), or null) += that of wk, summed
// over the images in order (as the per-plane kernel, image by image).
void depthwise_backward_blocked(const Window& w, const PoolTaps& taps, int64_t images, int64_t channels,
                                const float* x, const float* wk, const float* dy, float* dx, float* dw,
                                float* scratch);
int64_t depthwise_blocked_scratch(const Window& w);
// True where the blocked kernels take the window: their scratch within kBlockedScratch
// (3x3 maps up to about 52x52 with AVX-512's 16 lanes, 73x73 with AVX2's 8, 104x104 with
// SSE's 4; they are the faster ones there, see depthwise.cpp).
bool depthwise_prefers_blocked(const Window& w);

}  // namespace dl::rt
