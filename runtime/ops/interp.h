// Separable interpolation for Resize and Upsample (runtime/ops/resize.cpp, upsample.cpp):
// per axis and output coordinate, the input coordinate the spec's coordinate
// transformation maps it to, and the one (nearest) or two (linear) input indices with
// their weights. An output element is the sum over the taps of all axes of the product
// of the weights times the input value there (multilinear), so backward is the same
// walk scatter-adding dy * weight into dx.
//
// Follows the ONNX reference (onnx/backend/test/case/node/resize.py): indices past the
// edges are clamped (edge padding), an integer coordinate takes that index exactly, and
// align_corners uses the scaled length in * scale, not the rounded output length.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/tensor.h"

namespace dl::rt {

struct InterpMode {
  enum class Kind { kNearest, kLinear };
  enum class Coord { kHalfPixel, kPytorchHalfPixel, kAlignCorners, kAsymmetric, kTfCropAndResize };
  enum class Round { kPreferFloor, kPreferCeil, kFloor, kCeil };
  Kind kind = Kind::kNearest;
  Coord coord = Coord::kHalfPixel;
  Round round = Round::kPreferFloor;
  float extrapolation = 0.0f;  // tf_crop_and_resize: the value outside the crop
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
    std::vector<int64_t> i0, i1;   // input offsets (index times the input stride)
    std::vector<float> w0, w1;     // weights; w1 = 0 for a single tap
    std::vector<uint8_t> outside;  // tf_crop_and_resize: the coordinate is outside the input
  };
  template <class F>
  void walk(F f) const;
  std::vector<Axis> axes_;
  std::vector<size_t> two_tap_;         // axes with a second tap somewhere
  std::vector<int> bit_;                // per axis: its bit in walk()'s tap mask, -1 for one tap
  mutable std::vector<int64_t> coord_;  // walk()'s output coordinate, sized by plan()
  Shape out_;
  float extrapolation_ = 0.0f;
};

}  // namespace dl::rt
