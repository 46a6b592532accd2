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

TEST_CASE("Pad reflect 2x3x4 matches numpy.pad") {
  check_forward(pad_node("reflect"), {Tensor::floats({2, 3, 4}, ramp()), Tensor::ints({6}, {1, 2, 3, 1, 0, 2})},
                {4, 5, 9},
                {1.49f, 1.36f, 1.23f, 1.1f, 1.23f, 1.36f, 1.49f, 1.36f, 1.23f, 0.9699998f, 0.8399999f, 0.71f,
                 0.5799999f, 0.71f, 0.8399999f, 0.9699998f, 0.8399999f, 0.71f, 0.4499999f, 0.3199999f, 0.1899999f,
                 0.05999994f, 0.1899999f, 0.3199999f, 0.4499999f, 0.3199999f, 0.1899999f, 0.9699998f, 0.8399999f,
                 0.71f, 0.5799999f, 0.71f, 0.8399999f, 0.9699998f, 0.8399999f, 0.71f, 1.49f, 1.36f, 1.23f, 1.1f,
                 1.23f, 1.36f, 1.49f, 1.36f, 1.23f, -0.07000005f, -0.2f, -0.33f, -0.46f, -0.33f, -0.2f, -0.07000005f,
                 -0.2f, -0.33f, -0.59f, -0.72f, -0.85f, -0.98f, -0.85f, -0.72f, -0.59f, -0.72f, -0.85f, -1.11f,
                 -1.24f, -1.37f, -1.5f, -1.37f, -1.24f, -1.11f, -1.24f, -1.37f, -0.59f, -0.72f, -0.85f, -0.98f,
                 -0.85f, -0.72f, -0.59f, -0.72f, -0.85f, -0.07000005f, -0.2f, -0.33f, -0.46f, -0.33f, -0.2f,
                 -0.07000005f, -0.2f, -0.33f, 1.49f, 1.36f, 1.23f, 1.1f, 1.23f, 1.36f, 1.49f, 1.36f, 1.23f,
                 0.9699998f, 0.8399999f, 0.71f, 0.5799999f, 0.71f, 0.8399999f, 0.9699998f, 0.8399999f, 0.71f,
                 0.4499999f, 0.3199999f, 0.1899999f, 0.05999994f, 0.1899999f, 0.3199999f, 0.4499999f, 0.3199999f,
                 0.1899999f, 0.9699998f, 0.8399999f, 0.71f, 0.5799999f, 0.71f, 0.8399999f, 0.9699998f, 0.8399999f,
                 0.71f, 1.49f, 1.36f, 1.23f, 1.1f, 1.23f, 1.36f, 1.49f, 1.36f, 1.23f, -0.07000005f, -0.2f, -0.33f,
                 -0.46f, -0.33f, -0.2f, -0.07000005f, -0.2f, -0.33f, -0.59f, -0.72f, -0.85f, -0.98f, -0.85f, -0.72f,
                 -0.59f, -0.72f, -0.85f, -1.11f, -1.24f, -1.37f, -1.5f, -1.37f, -1.24f, -1.11f, -1.24f, -1.37f,
                 -0.59f, -0.72f, -0.85f, -0.98f, -0.85f, -0.72f, -0.59f, -0.72f, -0.85f, -0.07000005f, -0.2f, -0.33f,
                 -0.46f, -0.33f, -0.2f, -0.07000005f, -0.2f, -0.33f});
}

TEST_CASE("Pad reflect rank 4 (the spec's example 2 generalised) matches numpy.pad") {
  check_forward(pad_node("reflect"), {Tensor::floats({2, 3, 2, 2}, ramp()), Tensor::ints({8}, {0, 0, 1, 1, 0, 1, 1, 1})},
                {2, 4, 4, 4},
                {-1.11f, -1.24f, -1.11f, -1.24f, -1.37f, -1.5f, -1.37f, -1.5f, -1.11f, -1.24f, -1.11f, -1.24f,
                 -1.37f, -1.5f, -1.37f, -1.5f, -0.59f, -0.72f, -0.59f, -0.72f, -0.85f, -0.98f, -0.85f, -0.98f,
                 -0.59f, -0.72f, -0.59f, -0.72f, -0.85f, -0.98f, -0.85f, -0.98f, -0.07000005f, -0.2f, -0.07000005f,
                 -0.2f, -0.33f, -0.46f, -0.33f, -0.46f, -0.07000005f, -0.2f, -0.07000005f, -0.2f, -0.33f, -0.46f,
                 -0.33f, -0.46f, -0.59f, -0.72f, -0.59f, -0.72f, -0.85f, -0.98f, -0.85f, -0.98f, -0.59f, -0.72f,
                 -0.59f, -0.72f, -0.85f, -0.98f, -0.85f, -0.98f, 0.4499999f, 0.3199999f, 0.4499999f, 0.3199999f,
                 0.1899999f, 0.05999994f, 0.1899999f, 0.05999994f, 0.4499999f, 0.3199999f, 0.4499999f, 0.3199999f,
                 0.1899999f, 0.05999994f, 0.1899999f, 0.05999994f, 0.9699998f, 0.8399999f, 0.9699998f, 0.8399999f,
                 0.71f, 0.5799999f, 0.71f, 0.5799999f, 0.9699998f, 0.8399999f, 0.9699998f, 0.8399999f, 0.71f,
                 0.5799999f, 0.71f, 0.5799999f, 1.49f, 1.36f, 1.49f, 1.36f, 1.23f, 1.1f, 1.23f, 1.1f, 1.49f, 1.36f,
                 1.49f, 1.36f, 1.23f, 1.1f, 1.23f, 1.1f, 0.9699998f, 0.8399999f, 0.9699998f, 0.8399999f, 0.71f,
                 0.5799999f, 0.71f, 0.5799999f, 0.9699998f, 0.8399999f, 0.9699998f, 0.8399999f, 0.71f, 0.5799999f,
                 0.71f, 0.5799999f});
}

TEST_CASE("Pad spec example 2: reflect pads [0, 2, 0, 0]") {
  check_forward(pad_node("reflect"),
                {Tensor::floats({3, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f}), Tensor::ints({4}, {0, 2, 0, 0})},
                {3, 4}, {1.0f, 1.2f, 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f, 4.5f, 5.7f});
}

TEST_CASE("Pad reflect with pads beyond the axis follows numpy.pad's repeated reflection") {
  check_forward(pad_node("reflect"), {Tensor::floats({3}, {0, 1, 2}), Tensor::ints({2}, {1, 8})}, {12},
                {1, 0, 1, 2, 1, 0, 1, 2, 1, 0, 1, 0});
  // numpy repeats a size-1 axis.
  check_forward(pad_node("reflect"), {Tensor::floats({1}, {2.5f}), Tensor::ints({2}, {2, 1})}, {4},
                {2.5f, 2.5f, 2.5f, 2.5f});
}

TEST_CASE("Pad edge 1-D and edge with negative pads match numpy.pad") {
  check_forward(pad_node("edge"), {Tensor::floats({24}, ramp()), Tensor::ints({2}, {3, 2})}, {29},
                {-1.5f, -1.5f, -1.5f, -1.5f, -1.37f, -1.24f, -1.11f, -0.98f, -0.85f, -0.72f,
                 -0.59f, -0.46f, -0.33f, -0.2f, -0.07000005f, 0.05999994f, 0.1899999f, 0.3199999f,
                 0.4499999f, 0.5799999f, 0.71f, 0.8399999f, 0.9699998f, 1.1f, 1.23f, 1.36f, 1.49f, 1.49f, 1.49f});
  // Crops 2 columns at the start and 1 row at the end, then edge-pads the cropped array.
  check_forward(pad_node("edge", 2, 11), {Tensor::floats({3, 8}, ramp()), Tensor::ints({4}, {2, -2, -1, 3})}, {4, 9},
                {-1.24f, -1.11f, -0.98f, -0.85f, -0.72f, -0.59f, -0.59f, -0.59f, -0.59f, -1.24f, -1.11f, -0.98f,
                 -0.85f, -0.72f, -0.59f, -0.59f, -0.59f, -0.59f, -1.24f, -1.11f, -0.98f, -0.85f, -0.72f, -0.59f,
                 -0.59f, -0.59f, -0.59f, -0.2f, -0.07000005f, 0.05999994f, 0.1899999f, 0.3199999f, 0.4499999f,
                 0.4499999f, 0.4499999f, 0.4499999f});
}

TEST_CASE("Pad reflect with negative pads reflects the cropped region") {
  check_forward(pad_node("reflect"), {Tensor::floats({4, 6}, ramp()), Tensor::ints({4}, {-1, 2, 3, -2})}, {6, 6},
                {-0.46f, -0.59f, -0.72f, -0.59f, -0.46f, -0.33f, 0.3199999f, 0.1899999f, 0.05999994f,
                 0.1899999f, 0.3199999f, 0.4499999f, 1.1f, 0.9699998f, 0.8399999f, 0.9699998f, 1.1f, 1.23f,
                 0.3199999f, 0.1899999f, 0.05999994f, 0.1899999f, 0.3199999f, 0.4499999f, -0.46f, -0.59f, -0.72f,
                 -0.59f, -0.46f, -0.33f, 0.3199999f, 0.1899999f, 0.05999994f, 0.1899999f, 0.3199999f, 0.4499999f});
}

TEST_CASE("Pad opset 2: pads and value attributes, negative pads crop") {
  auto node = sample_node("Pad", 1, 1, {{"pads", attr_ints({-1, 1, 0, -2})}, {"value", attr_f(-1.0f)}}, 2);
  check_forward(node, {Tensor::floats({4, 6}, ramp())}, {3, 5},
                {-1.0f, -0.72f, -0.59f, -0.46f, -0.33f, -1.0f, 0.05999994f, 0.1899999f, 0.3199999f, 0.4499999f,
                 -1.0f, 0.8399999f, 0.9699998f, 1.1f, 1.23f});
}

TEST_CASE("Pad constant without constant_value pads with 0; int64 data") {
  check_forward(pad_node("constant"), {Tensor::floats({2}, {1.5f, -2.0f}), Tensor::ints({2}, {1, 2})}, {5},
                {0.0f, 1.5f, -2.0f, 0.0f, 0.0f});
  OpRun run(pad_node("constant", 3),
            {Tensor::ints({2, 3}, {0, 1, 2, 3, 4, 5}), Tensor::ints({4}, {1, 0, 0, 2}), Tensor::ints({}, {7})});
  run.forward();
  REQUIRE(run.outputs[0].shape() == Shape{3, 5});
  const std::vector<int64_t> expected = {7, 7, 7, 7, 7, 0, 1, 2, 7, 7, 3, 4, 5, 7, 7};
  CHECK(run.outputs[0].ivec() == expected);
}

TEST_CASE("Pad backward: edge and reflect accumulate into the replicated sources") {
  SUBCASE("edge") {
    OpRun run(pad_node("edge"), {Tensor::floats({4}, {1, 2, 3, 4}), Tensor::ints({2}, {3, 2})});
    run.forward();
    Tensor dy = Tensor::floats({9}, std::vector<float>(9, 1.0f));
    auto din = run.backward({&dy}, {true, false});
    CHECK(din[0].fvec() == std::vector<float>{4, 1, 1, 3});
  }
  SUBCASE("reflect, cropped at the end") {
    // Input [0..5) cropped to [0..4), reflected by 2 at the start: sources 2 1 | 0 1 2 3.
    OpRun run(pad_node("reflect"), {Tensor::floats({5}, {1, 2, 3, 4, 5}), Tensor::ints({2}, {2, -1})});
    run.forward();
    CHECK(run.outputs[0].fvec() == std::vector<float>{3, 2, 1, 2, 3, 4});
    Tensor dy = Tensor::floats({6}, {1, 10, 100, 1000, 10000, 100000});
    auto din = run.backward({&dy}, {true, false});
    CHECK(din[0].fvec() == std::vector<float>{100, 1010, 10001, 100000, 0});
  }
  SUBCASE("constant: padded positions take no gradient; accumulates") {
    OpRun run(pad_node("constant"), {Tensor::floats({2}, {1, 2}), Tensor::ints({2}, {1, -1})});
    run.forward();
    Tensor dy = Tensor::floats({2}, {5, 7});
    std::vector<Tensor> din(2);
    din[0] = Tensor::floats({2}, {1, 1});
    dl::rt::BwdCtx bc;
    for (auto& t : run.inputs) bc.in.push_back(&t);
    bc.out = {&run.outputs[0]};
    bc.dout = {&dy};
    bc.din = {&din[0], nullptr};
    run.op->backward(bc);
    CHECK(din[0].fvec() == std::vector<float>{8, 1});
  }
  CHECK_FALSE(dl::rt::make_op(pad_node("constant", 3))->differentiable_input(1));
  CHECK_FALSE(dl::rt::make_op(pad_node("constant", 3))->differentiable_input(2));
}

TEST_CASE("Pad errors name the node and the problem") {
  const auto x = Tensor::floats({2, 3}, ramp(6));
  CHECK(error_of(pad_node("constant"), {x, Tensor::ints({3}, {1, 1, 1})}).find("2 * rank = 4") != std::string::npos);
  CHECK(error_of(pad_node("wrap"), {x, Tensor::ints({4}, {1, 1, 1, 1})}).find("mode") != std::string::npos);
  CHECK(error_of(pad_node("reflect"), {x, Tensor::ints({4}, {0, 2, 0, -3})}).find("size 0") != std::string::npos);
  CHECK(error_of(pad_node("constant"), {x, Tensor::ints({4}, {-3, 0, 1, 0})}).find("below zero") !=
        std::string::npos);
  CHECK(error_of(pad_node("constant"), {x, Tensor::ints({4}, {-2, 0, -1, 0})}).find("below zero") !=
        std::string::npos);
  CHECK(error_of(pad_node("edge"), {x, Tensor::ints({4}, {0, -3, 0, 1})}).find("size 0") != std::string::npos);
  CHECK(error_of(pad_node("constant"), {x, Tensor::floats({4}, {1, 1, 1, 1})}).find("int64") != std::string::npos);
  CHECK(error_of(pad_node("constant", 3), {x, Tensor::ints({4}, {1, 1, 1, 1}), Tensor::floats({2}, {1, 2})})
            .find("scalar") != std::string::npos);
  // From 11, pads is an input: the opset-2 attributes are rejected by name.
  auto stale = sample_node("Pad", 2, 1, {{"pads", attr_ints({1, 1, 1, 1})}}, 11);
  CHECK(error_of(stale, {x, Tensor::ints({4}, {1, 1, 1, 1})}).find("pads") != std::string::npos);
  CHECK(error_of(sample_node("Pad", 1, 1, {}, 2), {x}).find("'pads' is required") != std::string::npos);

  // Pads computed while running would make the output shape data-dependent.
  auto op = dl::rt::make_op(pad_node("constant"));
  Tensor xi = x, pads = Tensor::ints({4}, {1, 1, 1, 1}), out;
  dl::rt::InferCtx ic;
  ic.in = {&xi, &pads};
  ic.known = {true, false};
  ic.out = {&out};
  ic.out_known = {false};
  try {
    op->infer(ic);
    FAIL("expected ShapeError");
  } catch (const dl::ShapeError& e) {
    CHECK(std::string(e.what()).find("data-dependent") != std::string::npos);
    CHECK(std::string(e.what()).find("sample_Pad") != std::string::npos);
  }
}
