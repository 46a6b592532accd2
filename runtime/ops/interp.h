// Separable interpolation for Resize (runtime/ops/resize.cpp): per axis and output
// coordinate, the input coordinate the spec's coordinate transformation maps it to, and
// the one (nearest), two (linear) or four (cubic) input indices with their weights. An
// output element is the sum over the taps of all axes of the product of the weights
// times the input value there (multilinear, multicubic), so backward is the same walk
// scatter-adding dy * weight into dx.
//
// Follows the ONNX reference (onnx/backend/test/case/node/resize.py): indices past the
// edges are clamped (edge padding), an integer coordinate takes that index exactly, and
// align_corners uses the scaled length in * scale, not the rounded output length; cubic
// with exclude_outside drops the taps outside the input and renormalises the rest.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/tensor.h"

namespace dl::rt {

struct InterpMode {
  enum class Kind { kNearest, kLinear, kCubic };
  enum class Coord { kHalfPixel, kPytorchHalfPixel, kAlignCorners, kAsymmetric, kTfCropAndResize };
  enum class Round { kPreferFloor, kPreferCeil, kFloor, kCeil };
  Kind kind = Kind::kNearest;
  Coord coord = Coord::kHalfPixel;
  Round round = Round::kPreferFloor;
  float extrapolation = 0.0f;    // tf_crop_and_resize: the value outside the crop
  float cubic_a = -0.75f;        // cubic: the kernel's coefficient
  bool exclude_outside = false;  // cubic: taps outside the input get weight 0
};

// Parse the names the ONNX attributes use; false when the name is not one of them.
bool parse_interp_kind(const std::string& s, InterpMode::Kind& out);
bool parse_interp_coord(const std::string& s, InterpMode::Coord& out);
bool parse_interp_round(const std::string& s, InterpMode::Round& out);

class Interp {
 public:
  // scales[a] relates output to input length on axis a (sizes / in when sizes are given);
  // roi holds 2 * rank values (starts, then ends), used by tf_crop_and_resize only.
  void plan(const InterpMode& mode, const Shape& in, const Shape& out, const std::vector<double>& scales,
            const std::vector<double>& roi);
  void forward(const float* x, float* y) const;
  void backward(const float* dy, float* dx) const;  // dx += the adjoint of forward

 private:
  struct Axis {
    int taps = 1;                  // per output coordinate
    std::vector<int64_t> idx;      // [out][taps]: input offsets (index times the input stride)
    std::vector<float> w;          // [out][taps]: weights
    std::vector<uint8_t> outside;  // tf_crop_and_resize: the coordinate is outside the input
  };
  template <class F>
  void walk(F f) const;
  std::vector<Axis> axes_;
  std::vector<size_t> multi_;           // axes with more than one tap
  mutable std::vector<int64_t> coord_;  // walk()'s output coordinate, sized by plan()
  mutable std::vector<int> tap_;        // walk()'s tap per axis of multi_
  Shape out_;
  float extrapolation_ = 0.0f;
};

}  // namespace dl::rt
