// Integer-ramp inputs and element-wise comparisons for the ops' reference-value tests
// (ops_nn_test.cpp, ops_upsample_test.cpp): the reference generators (*_ref.py) build the
// same ramps, exact in float32 on both sides.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "runtime/tensor.h"

namespace dl::test {

// value[k] = ((k * mult) % mod) / div - shift
inline rt::Tensor seq(rt::Shape shape, int64_t mult, int64_t mod, float div, float shift) {
  std::vector<float> v(static_cast<size_t>(rt::shape_numel(shape)));
  for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>((static_cast<int64_t>(k) * mult) % mod) / div - shift;
  return rt::Tensor::floats(std::move(shape), std::move(v));
}

// `got` has `shape` and every element within tol relative (absolute below 1) of `want`.
inline void check_close(const rt::Tensor& got, const rt::Shape& shape, const std::vector<float>& want, double tol) {
  REQUIRE(got.shape() == shape);
  REQUIRE(got.numel() == static_cast<int64_t>(want.size()));
  for (size_t k = 0; k < want.size(); ++k) {
    INFO("element " << k);
    CHECK(std::fabs(got.f()[k] - want[k]) <= tol * std::max(1.0, std::fabs(double(want[k]))));
  }
}

}  // namespace dl::test
