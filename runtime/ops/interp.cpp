// See interp.h.
#include "runtime/ops/interp.h"

#include <algorithm>
#include <cmath>

namespace dl::rt {

bool parse_interp_kind(const std::string& s, InterpMode::Kind& out) {
  if (s == "nearest") return out = InterpMode::Kind::kNearest, true;
  if (s == "linear") return out = InterpMode::Kind::kLinear, true;
  if (s == "cubic") return out = InterpMode::Kind::kCubic, true;
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

// The Keys cubic kernel's weights of the taps floor - 1 .. floor + 2 at fraction t.
void cubic_weights(double t, double A, double* c) {
  const double u = t + 1, v = 1 - t, q = 2 - t;
  c[0] = ((A * u - 5 * A) * u + 8 * A) * u - 4 * A;
  c[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
  c[2] = ((A + 2) * v - (A + 3)) * v * v + 1;
  c[3] = ((A * q - 5 * A) * q + 8 * A) * q - 4 * A;
}

bool round_up(InterpMode::Round mode, double ratio) {
  if (ratio == 0.0) return false;
  switch (mode) {
    case InterpMode::Round::kPreferFloor:
      return ratio > 0.5;
    case InterpMode::Round::kPreferCeil:
      return ratio >= 0.5;
    case InterpMode::Round::kFloor:
      return false;
    case InterpMode::Round::kCeil:
      return true;
  }
  return false;
}

}  // namespace

void Interp::plan(const InterpMode& mode, const Shape& in, const Shape& out, const std::vector<double>& scales,
                  const std::vector<double>& roi) {
  const size_t r = in.size();
  out_ = out;
  extrapolation_ = mode.extrapolation;
  axes_.assign(r, Axis{});
  multi_.clear();
  const int taps = mode.kind == InterpMode::Kind::kNearest ? 1 : mode.kind == InterpMode::Kind::kLinear ? 2 : 4;
  int64_t stride = 1;
  for (size_t a = r; a-- > 0;) {
    Axis& ax = axes_[a];
    const int64_t n = out[a], len = in[a];
    ax.taps = taps;
    ax.idx.assign(size_t(n * taps), 0);
    ax.w.assign(size_t(n * taps), 0.0f);
    ax.outside.assign(size_t(n), 0);
    const double r0 = roi.empty() ? 0.0 : roi[a], r1 = roi.empty() ? 1.0 : roi[r + a];
    bool fractional = false;  // some coordinate falls between inputs (more than one tap used)
    for (int64_t o = 0; o < n; ++o) {
      bool outside = false;
      const double x = source_coord(mode, o, len, n, scales[a], r0, r1, outside);
      ax.outside[size_t(o)] = outside;
      const int64_t fl = static_cast<int64_t>(std::floor(x));
      const double ratio = x - std::floor(x);
      fractional = fractional || ratio != 0.0;
      const auto clamp = [len](int64_t v) { return std::min<int64_t>(std::max<int64_t>(v, 0), len - 1); };
      int64_t* idx = ax.idx.data() + o * taps;
      float* w = ax.w.data() + o * taps;
      if (taps == 1) {
        idx[0] = clamp(fl + (round_up(mode.round, ratio) ? 1 : 0)) * stride;
        w[0] = 1.0f;
      } else if (taps == 2) {
        idx[0] = clamp(fl) * stride;
        idx[1] = clamp(fl + 1) * stride;
        w[0] = static_cast<float>(1.0 - ratio);
        w[1] = static_cast<float>(ratio);
      } else {
        double c[4];
        cubic_weights(ratio, mode.cubic_a, c);
        double sum = 0;
        for (int t = 0; t < 4; ++t) {
          const int64_t i = fl - 1 + t;
          if (mode.exclude_outside && (i < 0 || i >= len)) c[t] = 0;
          sum += c[t];
        }
        for (int t = 0; t < 4; ++t) {
          idx[t] = clamp(fl - 1 + t) * stride;
          w[t] = static_cast<float>(mode.exclude_outside && sum != 0 ? c[t] / sum : c[t]);
        }
      }
    }
    if (taps > 1 && !fractional) {  // every coordinate is an input index: one tap
      for (int64_t o = 0; o < n; ++o) {
        const int first = taps == 2 ? 0 : 1;  // the tap at floor(x)
        ax.idx[size_t(o)] = ax.idx[size_t(o * taps + first)];
        ax.w[size_t(o)] = 1.0f;
      }
      ax.taps = 1;
      ax.idx.resize(size_t(n));
      ax.w.resize(size_t(n));
    }
    if (ax.taps > 1) multi_.push_back(a);
    stride *= len;
  }
  std::reverse(multi_.begin(), multi_.end());
  coord_.assign(r, 0);
  tap_.assign(multi_.size(), 0);
}

// f(output flat index, input offset, weight) for every tap of every output element, or
// f(index, -1, 0) for an element outside a tf_crop_and_resize crop.
template <class F>
void Interp::walk(F f) const {
  const size_t r = axes_.size();
  const int64_t total = shape_numel(out_);
  std::vector<int64_t>& c = coord_;
  std::fill(c.begin(), c.end(), 0);
  const size_t m = multi_.size();
  for (int64_t flat = 0; flat < total; ++flat) {
    bool outside = false;
    int64_t base = 0;
    float wbase = 1.0f;
    for (size_t a = 0; a < r; ++a) {
      const Axis& ax = axes_[a];
      const size_t o = size_t(c[a]);
      outside = outside || ax.outside[o];
      if (ax.taps == 1) {
        base += ax.idx[o];
        wbase *= ax.w[o];
      }
    }
    if (outside) {
      f(flat, int64_t{-1}, 0.0f);
    } else if (m == 0) {
      f(flat, base, wbase);
    } else {
      // Every combination of the multi-tap axes' taps (an odometer over tap_).
      std::fill(tap_.begin(), tap_.end(), 0);
      for (;;) {
        int64_t off = base;
        float w = wbase;
        for (size_t j = 0; j < m; ++j) {
          const Axis& ax = axes_[multi_[j]];
          const size_t k = size_t(c[multi_[j]] * ax.taps + tap_[j]);
          off += ax.idx[k];
          w *= ax.w[k];
        }
        if (w != 0.0f) f(flat, off, w);
        size_t j = m;
        while (j-- > 0 && ++tap_[j] == axes_[multi_[j]].taps) tap_[j] = 0;
        if (j == size_t(-1)) break;
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
