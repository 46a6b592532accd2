// Sliding-window geometry shared by Conv, MaxPool and AveragePool: attribute parsing
// with ONNX defaults and the output-size / padding rules of the spec, for 1 to 3
// spatial axes.
//
// Every window op computes on a 3-D view (D, H, W): an input with fewer spatial axes
// gets leading axes of size 1 with kernel 1, stride 1, dilation 1 and no padding, so
// one set of loops serves Conv1D/2D/3D and the pools.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "converter/errors.h"
#include "runtime/attrs.h"
#include "runtime/op.h"
#include "runtime/tensor.h"

namespace dl::rt {

struct WindowAttrs {
  std::string auto_pad = "NOTSET";
  std::vector<int64_t> kernel;  // empty when absent (Conv takes it from W)
  std::vector<int64_t> strides, dilations, pads;
  bool ceil_mode = false;
};

// Reads auto_pad, kernel_shape, strides, dilations and pads (and ceil_mode when
// `with_ceil`); dilations and ceil_mode only where the caller's op defines them.
// The parameter roles of a kernel op (Conv, ConvTranspose): input 1 is the weight, whose
// fan-in and fan-out are dims 1 and 0 times the kernel's field (as torch computes them for
// both), and input 2 the bias.
inline ParamRole kernel_param_role(size_t input, const Shape& s) {
  if (input == 2) return param_role_of(ParamRole::Kind::kBias);
  if (input != 1 || s.size() < 3) return {};
  int64_t field = 1;
  for (size_t d = 2; d < s.size(); ++d) field *= s[d];
  return weight_role(s[1] * field, s[0] * field);
}

inline WindowAttrs read_window_attrs(Attrs& a, bool with_dilations, bool with_ceil) {
  WindowAttrs w;
  w.auto_pad = a.s("auto_pad", "NOTSET");
  if (w.auto_pad != "NOTSET" && w.auto_pad != "SAME_UPPER" && w.auto_pad != "SAME_LOWER" && w.auto_pad != "VALID")
    a.fail("auto_pad", "must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '" + w.auto_pad + "'");
  w.kernel = a.ints("kernel_shape");
  w.strides = a.ints("strides");
  if (with_dilations) w.dilations = a.ints("dilations");
  w.pads = a.ints("pads");
  if (with_ceil) w.ceil_mode = a.i("ceil_mode", 0) != 0;
  // Beyond 2^31 no window fits in memory; the bound keeps (k - 1) * dilation + 1 and the
  // padded lengths far from overflowing.
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  const auto check = [&a](const std::vector<int64_t>& vs, const char* name, int64_t lo) {
    for (int64_t v : vs)
      if (v < lo || v > kMax)
        a.fail(name, std::string(lo > 0 ? "must be positive" : "must be non-negative") + " and at most " +
                         std::to_string(kMax) + ", got " + std::to_string(v));
  };
  check(w.kernel, "kernel_shape", 1);
  check(w.strides, "strides", 1);
  check(w.dilations, "dilations", 1);
  check(w.pads, "pads", 0);
  if (w.auto_pad != "NOTSET" && std::any_of(w.pads.begin(), w.pads.end(), [](int64_t p) { return p != 0; }))
    a.fail("pads", "cannot be combined with auto_pad " + w.auto_pad);
  return w;
}

// Conv's and ConvTranspose's common attributes: the window's (with dilations) and a
// positive group (into `group`).
inline WindowAttrs read_conv_attrs(Attrs& a, int64_t& group) {
  WindowAttrs w = read_window_attrs(a, true, false);
  group = a.i("group", 1);
  if (group < 1) a.fail("group", "must be positive");
  return w;
}

// The resolved geometry in the 3-D view. Index 0 = D, 1 = H, 2 = W.
struct Window {
  int spatial = 0;  // real spatial axes of the input (1..3)
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, stride[3] = {1, 1, 1}, dil[3] = {1, 1, 1};
  int64_t pad_begin[3] = {0, 0, 0}, pad_end[3] = {0, 0, 0}, out[3] = {1, 1, 1};

  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t k_size() const { return k[0] * k[1] * k[2]; }
  // (N, C) followed by the output spatial dims in the input's own rank.
  Shape out_shape(int64_t n, int64_t c) const {
    Shape s = {n, c};
    for (int a = 3 - spatial; a < 3; ++a) s.push_back(out[a]);
    return s;
  }
  // Kernel 1, stride 1, no padding: the window is the identity map (1x1 convolution).
  bool pointwise() const {
    for (int a = 0; a < 3; ++a)
      if (k[a] != 1 || stride[a] != 1 || pad_begin[a] != 0 || pad_end[a] != 0) return false;
    return true;
  }
  // Kernel taps t in [lo, hi) of output o along axis a read the in-range inputs
  // first + t * dil[a].
  void taps(int a, int64_t o, int64_t& first, int64_t& lo, int64_t& hi) const {
    first = o * stride[a] - pad_begin[a];
    lo = first >= 0 ? 0 : (-first + dil[a] - 1) / dil[a];
    const int64_t room = in[a] - first;
    hi = room <= 0 ? 0 : std::min(k[a], (room + dil[a] - 1) / dil[a]);
    hi = std::max(hi, lo);
  }
  // Outputs o in [lo, hi) read an in-range input at o*stride - pad_begin + offset on axis a.
  void valid_range(int a, int64_t offset, int64_t& lo, int64_t& hi) const {
    const int64_t first = pad_begin[a] - offset;         // need o*stride >= first
    const int64_t last = in[a] + pad_begin[a] - offset;  // need o*stride < last
    lo = first <= 0 ? 0 : (first + stride[a] - 1) / stride[a];
    hi = last <= 0 ? 0 : (last + stride[a] - 1) / stride[a];
    lo = std::min(lo, out[a]);
    hi = std::min(std::max(hi, lo), out[a]);
  }
};

// Tap ranges for the row-wise pooling loops, computed once per plan. Pools walk one
// output row (fixed D and H coordinates) at a time and, for each kernel tap, run over
// the row's outputs: independent accumulations the compiler vectorises, instead of a
// serial chain along each window.
struct PoolTaps {
  struct Axis {
    int64_t first, lo, hi;  // Window::taps of one output coordinate
  };
  struct RowTap {
    int64_t offset;  // input column read by output ow: ow * stride[2] + offset
    int64_t lo, hi;  // outputs ow in [lo, hi) read inside the row
  };
  std::vector<Axis> axis[3];  // per axis, per output coordinate
  std::vector<RowTap> row;    // per kernel tap along W

  void plan(const Window& w) {
    for (int a = 0; a < 3; ++a) {
      axis[a].resize(static_cast<size_t>(w.out[a]));
      for (int64_t o = 0; o < w.out[a]; ++o) {
        Axis& t = axis[a][static_cast<size_t>(o)];
        w.taps(a, o, t.first, t.lo, t.hi);
      }
    }
    row.resize(static_cast<size_t>(w.k[2]));
    for (int64_t t = 0; t < w.k[2]; ++t) {
      RowTap& r = row[static_cast<size_t>(t)];
      r.offset = t * w.dil[2] - w.pad_begin[2];
      w.valid_range(2, t * w.dil[2], r.lo, r.hi);
    }
  }
};

// Resolves the window for input shape x = (N, C, spatial...) and the kernel's spatial
// size. Throws ShapeError naming `where` for unsupported ranks, attribute lengths that
// do not match the rank, or a window larger than the padded input.
inline Window plan_window(const std::string& where, const WindowAttrs& wa, const Shape& x,
                          const std::vector<int64_t>& kernel) {
  const int64_t nd = static_cast<int64_t>(x.size()) - 2;
  if (nd < 1 || nd > 3)
    throw ShapeError(where + ": supports 1 to 3 spatial axes (input rank 3 to 5), got input " + shape_str(x));
  auto check_len = [&](const std::vector<int64_t>& v, int64_t n, const char* name) {
    if (!v.empty() && static_cast<int64_t>(v.size()) != n)
      throw ShapeError(where + ": attribute '" + name + "' has " + std::to_string(v.size()) + " values, expected " +
                       std::to_string(n) + " for input " + shape_str(x));
  };
  check_len(kernel, nd, "kernel_shape");
  if (kernel.empty()) throw ShapeError(where + ": attribute 'kernel_shape' is required");
  check_len(wa.strides, nd, "strides");
  check_len(wa.dilations, nd, "dilations");
  check_len(wa.pads, 2 * nd, "pads");
  Window w;
  w.spatial = static_cast<int>(nd);
  const int off = 3 - w.spatial;
  for (int64_t i = 0; i < nd; ++i) {
    const int a = off + static_cast<int>(i);
    w.in[a] = x[static_cast<size_t>(2 + i)];
    w.k[a] = kernel[static_cast<size_t>(i)];
    if (w.k[a] > std::numeric_limits<int32_t>::max())  // Conv's comes from W's shape, not an attribute
      throw ShapeError(where + ": kernel of " + std::to_string(w.k[a]) + " along axis " + std::to_string(2 + i) +
                       " is larger than any input could be");
    w.stride[a] = wa.strides.empty() ? 1 : wa.strides[static_cast<size_t>(i)];
    w.dil[a] = wa.dilations.empty() ? 1 : wa.dilations[static_cast<size_t>(i)];
    const int64_t extent = (w.k[a] - 1) * w.dil[a] + 1;
    if (wa.auto_pad == "SAME_UPPER" || wa.auto_pad == "SAME_LOWER") {
      w.out[a] = (w.in[a] + w.stride[a] - 1) / w.stride[a];
      const int64_t total = std::max<int64_t>(0, (w.out[a] - 1) * w.stride[a] + extent - w.in[a]);
      const int64_t small = total / 2;  // the odd pixel goes to the end (UPPER) or start (LOWER)
      w.pad_begin[a] = wa.auto_pad == "SAME_UPPER" ? small : total - small;
      w.pad_end[a] = total - w.pad_begin[a];
      continue;
    }
    if (wa.auto_pad == "NOTSET" && !wa.pads.empty()) {
      w.pad_begin[a] = wa.pads[static_cast<size_t>(i)];
      w.pad_end[a] = wa.pads[static_cast<size_t>(nd + i)];
    }
    const int64_t span = w.in[a] + w.pad_begin[a] + w.pad_end[a] - extent;
    if (span < 0)
      throw ShapeError(where + ": window extent " + std::to_string(extent) + " exceeds the padded input along axis " +
                       std::to_string(2 + i) + " of " + shape_str(x));
    if (wa.ceil_mode && wa.auto_pad == "NOTSET") {
      w.out[a] = (span + w.stride[a] - 1) / w.stride[a] + 1;
      // A last window that would start inside the end padding is dropped (PyTorch, ORT).
      if ((w.out[a] - 1) * w.stride[a] >= w.in[a] + w.pad_begin[a]) --w.out[a];
    } else {
      w.out[a] = span / w.stride[a] + 1;
    }
  }
  return w;
}

// Before a windowed op sizes anything by its output (tap tables, argmax, im2col origins):
// its output of n x c maps, plus `per_position` bytes of the op's own per output position
// (charged as `what`), must fit in what the memory cap leaves (InferCtx::reserve). In
// doubles: the product of three output lengths of up to 2^32 each could wrap an int64.
inline void reserve_window_output(const InferCtx& ctx, const std::string& where, const Window& w, int64_t n,
                                  int64_t c, double per_position, const std::string& what) {
  const double positions = double(w.out[0]) * double(w.out[1]) * double(w.out[2]);
  ctx.reserve(where, positions * per_position, what + " for output " + shape_str(w.out_shape(n, c)),
              double(n) * double(c) * positions * sizeof(float));
}

}  // namespace dl::rt
