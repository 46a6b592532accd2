// im2col and col2im for Conv (runtime/ops/conv.cpp): the column matrix of a tile of
// whole output rows, and the scatter of its gradient back into the input, for 1 to 3
// spatial axes in the 3-D window view (runtime/ops/window.h).
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/ops/window.h"

namespace dl::rt {

// Input coordinates of each output row (flattened (od, oh)): the first input row and
// depth its window reads before kernel offsets and dilation. Computed once per plan.
struct RowOrigins {
  std::vector<int64_t> id, ih;
  void plan(const Window& w);
};

// col (channels * kernel size rows, ld floats apart, one column per output position of
// output rows [r0, r1)) = the receptive fields of x (channels input planes); padding
// reads 0. ld is the tile's width, (r1 - r0) * out W, or more when the columns of
// several images sit side by side (Conv's image batches).
void im2col(const Window& w, const RowOrigins& o, int64_t channels, int64_t r0, int64_t r1, const float* x, float* col,
            int64_t ld);

// dx += col2im(dcol): every column entry goes back to the input pixel it was read from.
// dcol is scratch: entries that read padding may be overwritten (with zeros).
void col2im_add(const Window& w, const RowOrigins& o, int64_t channels, int64_t r0, int64_t r1, float* dcol, float* dx,
                int64_t ld);

}  // namespace dl::rt

namespace dl::rt {

// The kernel taps that read the input for some output position, as a box per axis:
// on small maps with padding (a 3x3 kernel, pad 1, on a 1x1 map) the others read
// padding only, and their im2col rows and GEMM columns are zeros. `win` is the window
// restricted to that box (the same outputs; kernel and padding shifted), `origins` its
// row origins; gather() copies W's columns of those taps (W is rows x channels x kernel),
// scatter_add() adds a gradient of that layout back into dW. reduced is false when every
// tap is live (then win is the window itself).
struct LiveTaps {
  bool reduced = false;
  Window win;
  RowOrigins origins;
  int64_t lo[3] = {0, 0, 0};
  int64_t full_k[3] = {1, 1, 1}, full = 1;  // the full kernel and its size
  std::vector<int64_t> taps;                 // the box's taps: offsets into the full kernel
  void plan(const Window& w);
  void gather(const float* wt, int64_t rows, int64_t channels, float* out) const;
  void scatter_add(const float* d, int64_t rows, int64_t channels, float* dw) const;
  // dw = scatter_add(d) onto zeros, in one pass over dw (the dead taps' zeros written).
  void scatter_set(const float* d, int64_t rows, int64_t channels, float* dw) const;
};

}  // namespace dl::rt
