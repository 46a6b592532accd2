// See interp.h.
#include "runtime/ops/interp.h"

#include <algorithm>
#include <cmath>

namespace dl::rt {

bool parse_interp_kind(const std::string& s, InterpMode::Kind& out) {
  if (s == "nearest") return out = InterpMode::Kind::kNearest, true;
  if (s == "linear") return out = InterpMode::Kind::kLinear, true;
  return false;
}

bool parse_interp_coord(const std::string& s, InterpMode::Coord& out) {
  using C = InterpMode::Coord;
  if (s == "half_pixel") return out = C::kHalfPixel, true;
  if (s == "pytorch_half_pixel") return out = C::kPytorchHalfPixel, true;
  if (s == "align_corners") return out = C::kAlignCorners, true;
  if (s == "asymmetric") return out = C::kAsymmetric, true;
  if (s == "tf_crop_and_resize") return out = C::kTfCropAndResize, true;
  return false;
}

bool parse_interp_round(const std::string& s, InterpMode::Round& out) {
  using R = InterpMode::Round;
  if (s == "round_prefer_floor") return out = R::kPreferFloor, true;
  if (s == "round_prefer_ceil") return out = R::kPreferCeil, true;
  if (s == "floor") return out = R::kFloor, true;
  if (s == "ceil") return out = R::kCeil, true;
  return false;
}

namespace {

// The input coordinate of output coordinate o (the spec's coordinate transformation);
// sets outside for a tf_crop_and_resize coordinate outside [0, in - 1].
double source_coord(const InterpMode& m, int64_t o, int64_t in, int64_t out, double scale, double r0, double r1,
                    bool& outside) {
  using C = InterpMode::Coord;
  const double x = static_cast<double>(o), len = scale * static_cast<double>(in);
  outside = false;
  switch (m.coord) {
    case C::kHalfPixel:
      return (x + 0.5) / scale - 0.5;
    case C::kPytorchHalfPixel:
      return out > 1 ? (x + 0.5) / scale - 0.5 : -0.5;
    case C::kAlignCorners:
      return len == 1.0 ? 0.0 : x * static_cast<double>(in - 1) / (len - 1.0);
    case C::kAsymmetric:
      return x / scale;
    case C::kTfCropAndResize: {
      const double span = static_cast<double>(in - 1);
      const double v =
          (out > 1 ? x * (r1 - r0) * span / static_cast<double>(out - 1) : (r1 - r0) * span / 2) + r0 * span;
      outside = v < 0 || v > span;
      return v;
    }
  }
  return x;
}

}  // namespace

void Interp::plan(const InterpMode& mode, const Shape& in, const Shape& out, const std::vector<double>& scales,
                  const std::vector<double>& roi) {
  const size_t r = in.size();
  out_ = out;
  extrapolation_ = mode.extrapolation;
  axes_.assign(r, Axis{});
  two_tap_.clear();
  int64_t stride = 1;
  for (size_t a = r; a-- > 0;) {
    Axis& ax = axes_[a];
    const int64_t n = out[a], len = in[a];
    ax.i0.resize(size_t(n));
    ax.i1.resize(size_t(n));
    ax.w0.resize(size_t(n));
    ax.w1.resize(size_t(n));
    ax.outside.assign(size_t(n), 0);
    const double r0 = roi.empty() ? 0.0 : roi[a], r1 = roi.empty() ? 1.0 : roi[r + a];
    bool two = false;
    for (int64_t o = 0; o < n; ++o) {
      bool outside = false;
      const double x = source_coord(mode, o, len, n, scales[a], r0, r1, outside);
      ax.outside[size_t(o)] = outside;
      const double fl = std::floor(x);
      const double ratio = x - fl;
      const auto clamp = [len](double v) { return std::min<int64_t>(std::max<int64_t>(int64_t(v), 0), len - 1); };
      if (mode.kind == InterpMode::Kind::kNearest) {
        bool up = false;  // take floor + 1
        if (ratio != 0.0) {
          switch (mode.round) {
            case InterpMode::Round::kPreferFloor:
              up = ratio > 0.5;
              break;
            case InterpMode::Round::kPreferCeil:
              up = ratio >= 0.5;
              break;
            case InterpMode::Round::kFloor:
              up = false;
              break;
            case InterpMode::Round::kCeil:
              up = true;
              break;
          }
        }
        ax.i0[size_t(o)] = clamp(fl + (up ? 1 : 0)) * stride;
        ax.w0[size_t(o)] = 1.0f;
        ax.i1[size_t(o)] = ax.i0[size_t(o)];
        ax.w1[size_t(o)] = 0.0f;
      } else {
        ax.i0[size_t(o)] = clamp(fl) * stride;
        ax.i1[size_t(o)] = clamp(fl + 1) * stride;
        ax.w0[size_t(o)] = static_cast<float>(1.0 - ratio);
        ax.w1[size_t(o)] = static_cast<float>(ratio);
        two = two || ratio != 0.0;
      }
    }
    if (two) two_tap_.push_back(a);
    stride *= len;
  }
  bit_.assign(r, -1);
  for (size_t b = 0; b < two_tap_.size(); ++b) bit_[two_tap_[b]] = static_cast<int>(b);
  coord_.assign(r, 0);
}

// f(output flat index, input offset, weight) for every tap of every output element, or
// f(index, -1, 0) for an element outside a tf_crop_and_resize crop.
template <class F>
void Interp::walk(F f) const {
  const size_t r = axes_.size();
  const int64_t total = shape_numel(out_);
  std::vector<int64_t>& c = coord_;
  std::fill(c.begin(), c.end(), 0);
  const size_t k = two_tap_.size();
  for (int64_t flat = 0; flat < total; ++flat) {
    bool outside = false;
    int64_t base = 0;
    float wbase = 1.0f;
    for (size_t a = 0; a < r; ++a) {
      const size_t o = size_t(c[a]);
      outside = outside || axes_[a].outside[o];
      base += axes_[a].i0[o];
      wbase *= axes_[a].w0[o];
    }
    if (outside) {
      f(flat, int64_t{-1}, 0.0f);
    } else if (k == 0) {
      f(flat, base, wbase);
    } else {
      // Each subset of the two-tap axes takes their second tap instead of the first.
      for (uint32_t mask = 0; mask < (1u << k); ++mask) {
        int64_t off = 0;
        float w = 1.0f;
        for (size_t a = 0; a < r; ++a) {
          const Axis& ax = axes_[a];
          const size_t o = size_t(c[a]);
          const bool second = bit_[a] >= 0 && ((mask >> bit_[a]) & 1u);
          off += second ? ax.i1[o] : ax.i0[o];
          w *= second ? ax.w1[o] : ax.w0[o];
        }
        if (w != 0.0f) f(flat, off, w);
      }
    }
    for (size_t a = r; a-- > 0;) {  // next output coordinate, row-major
      if (++c[a] < out_[a]) break;
      c[a] = 0;
    }
  }
}

void Interp::forward(const float* x, float* y) const {
  std::fill_n(y, shape_numel(out_), 0.0f);
  walk([&](int64_t o, int64_t i, float w) { y[o] = i < 0 ? extrapolation_ : y[o] + w * x[i]; });
}

void Interp::backward(const float* dy, float* dx) const {
  walk([&](int64_t o, int64_t i, float w) {
    if (i >= 0) dx[i] += w * dy[o];
  });
}

}  // namespace dl::rt
