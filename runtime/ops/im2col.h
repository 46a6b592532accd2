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

// col (channels * kernel size rows, one column per output position of output rows
// [r0, r1)) = the receptive fields of x (channels input planes); padding reads 0.
void im2col(const Window& w, const RowOrigins& o, int64_t channels, int64_t r0, int64_t r1, const float* x, float* col);

// dx += col2im(dcol): every column entry goes back to the input pixel it was read from.
void col2im_add(const Window& w, const RowOrigins& o, int64_t channels, int64_t r0, int64_t r1, float* dcol, float* dx);

}  // namespace dl::rt
