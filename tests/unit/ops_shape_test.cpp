// Forward and error tests of the data-movement ops: Flatten, Reshape, Transpose,
// Squeeze, Unsqueeze, Concat, Constant, Shape, Gather, Cast.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "converter/errors.h"
#include "runtime/attrs.h"
#include "tests/unit/op_harness.h"

using dl::rt::attr_floats;
using dl::rt::attr_i;
using dl::rt::attr_ints;
using dl::rt::sample_node;
using dl::rt::Shape;
using dl::rt::Tensor;
using dl::test::OpRun;

namespace {

std::vector<float> iota_floats(int64_t n, float scale = 1.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t k = 0; k < v.size(); ++k) v[k] = scale * float(k);
  return v;
}

std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t k = 0; k < t.numel(); ++k) v.push_back(t.at(k));
  return v;
}

// Runs a single-output node forward and returns its output.
Tensor run1(const dl::ir::Node& node, std::vector<Tensor> inputs) {
  OpRun run(node, std::move(inputs));
  run.forward();
  return run.outputs[0];
}

// Runs infer with input i marked unknown at plan time.
void infer_with_unknown(const dl::ir::Node& node, std::vector<Tensor> inputs, size_t unknown) {
  auto op = dl::rt::make_op(node);
  dl::rt::InferCtx ic;
  for (auto& t : inputs) ic.in.push_back(&t);
  ic.known.assign(inputs.size(), true);
  ic.known[unknown] = false;
  Tensor out;
  ic.out = {&out};
  ic.out_known = {false};
  op->infer(ic);
}

std::string error_of(const dl::ir::Node& node, std::vector<Tensor> inputs) {
  try {
    run1(node, std::move(inputs));
  } catch (const dl::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("Flatten: axis positive, negative, zero and rank") {
  const Tensor x = Tensor::floats({2, 3, 4}, iota_floats(24));
  CHECK(run1(sample_node("Flatten", 1), {x}).shape() == Shape{2, 12});
  CHECK(run1(sample_node("Flatten", 1, 1, {{"axis", attr_i(-1)}}), {x}).shape() == Shape{6, 4});
  CHECK(run1(sample_node("Flatten", 1, 1, {{"axis", attr_i(0)}}), {x}).shape() == Shape{1, 24});
  Tensor y = run1(sample_node("Flatten", 1, 1, {{"axis", attr_i(3)}}), {x});
  CHECK(y.shape() == Shape{24, 1});
  CHECK(values(y) == values(x));
  CHECK_THROWS_AS(run1(sample_node("Flatten", 1, 1, {{"axis", attr_i(4)}}), {x}), dl::ShapeError);
}

TEST_CASE("Reshape: 0 copies, -1 infers, allowzero, empty shape") {
  const Tensor x = Tensor::floats({2, 3, 4}, iota_floats(24));
  Tensor y = run1(sample_node("Reshape", 2), {x, Tensor::ints({3}, {0, -1, 2})});
  CHECK(y.shape() == Shape{2, 6, 2});
  CHECK(values(y) == values(x));
  CHECK(run1(sample_node("Reshape", 2), {x, Tensor::ints({2}, {-1, 8})}).shape() == Shape{3, 8});
  const Tensor e = Tensor::floats({0, 3}, {});
  CHECK(run1(sample_node("Reshape", 2, 1, {{"allowzero", attr_i(1)}}, 14), {e, Tensor::ints({2}, {3, 0})}).shape() ==
        Shape{3, 0});
  CHECK(run1(sample_node("Reshape", 2), {Tensor::floats({1, 1}, {2.5f}), Tensor::ints({0}, {})}).shape() == Shape{});
  // allowzero is a version-14 attribute.
  CHECK_THROWS_AS(dl::rt::make_op(sample_node("Reshape", 2, 1, {{"allowzero", attr_i(1)}}, 13)), dl::ModelError);
}

TEST_CASE("Reshape errors: two -1, element count, data-dependent shape") {
  const Tensor x = Tensor::floats({2, 3, 4}, iota_floats(24));
  std::string two = error_of(sample_node("Reshape", 2), {x, Tensor::ints({3}, {-1, -1, 2})});
  CHECK(two.find("sample_Reshape") != std::string::npos);
  CHECK(two.find("more than one -1") != std::string::npos);
  CHECK_THROWS_AS(run1(sample_node("Reshape", 2), {x, Tensor::ints({2}, {5, 5})}), dl::ShapeError);
  CHECK_THROWS_AS(run1(sample_node("Reshape", 2), {x, Tensor::ints({2}, {-1, 5})}), dl::ShapeError);
  std::string count = error_of(sample_node("Reshape", 2), {x, Tensor::ints({2}, {5, 5})});
  CHECK(count.find("[2, 3, 4]") != std::string::npos);
  CHECK(count.find("[5, 5]") != std::string::npos);
  try {
    infer_with_unknown(sample_node("Reshape", 2), {x, Tensor::ints({2}, {6, 4})}, 1);
    FAIL("expected a ShapeError");
  } catch (const dl::ShapeError& e) {
    const std::string msg = e.what();
    CHECK(msg.find("sample_Reshape") != std::string::npos);
    CHECK(msg.find("'shape'") != std::string::npos);
    CHECK(msg.find("data-dependent") != std::string::npos);
  }
}

TEST_CASE("Transpose: default reverses, perm permutes, backward inverts") {
  const Tensor x = Tensor::floats({2, 3, 4}, iota_floats(24));
  Tensor y = run1(sample_node("Transpose", 1), {x});
  REQUIRE(y.shape() == Shape{4, 3, 2});
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 4; ++c) CHECK(y.f()[c * 6 + b * 2 + a] == x.f()[a * 12 + b * 4 + c]);
  OpRun run(sample_node("Transpose", 1, 1, {{"perm", attr_ints({1, 2, 0})}}), {x});
  run.forward();
  REQUIRE(run.outputs[0].shape() == Shape{3, 4, 2});
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 4; ++c) CHECK(run.outputs[0].f()[b * 8 + c * 2 + a] == x.f()[a * 12 + b * 4 + c]);
  // Backward of the output itself as gradient gives back x.
  std::vector<Tensor> din = run.backward({&run.outputs[0]}, {true});
  CHECK(values(din[0]) == values(x));
  CHECK_THROWS_AS(run1(sample_node("Transpose", 1, 1, {{"perm", attr_ints({0, 0, 1})}}), {x}), dl::ShapeError);
  CHECK(values(run1(sample_node("Transpose", 1), {Tensor::ints({2, 2}, {1, 2, 3, 4})})) ==
        std::vector<double>{1, 3, 2, 4});
}

TEST_CASE("Squeeze and Unsqueeze: attribute and input forms") {
  const Tensor x = Tensor::floats({1, 3, 1, 2}, iota_floats(6));
  CHECK(run1(sample_node("Squeeze", 1, 1, {}, 13), {x}).shape() == Shape{3, 2});
  CHECK(run1(sample_node("Squeeze", 2, 1, {}, 13), {x, Tensor::ints({1}, {-2})}).shape() == Shape{1, 3, 2});
  CHECK(run1(sample_node("Squeeze", 1, 1, {{"axes", attr_ints({0})}}, 11), {x}).shape() == Shape{3, 1, 2});
  CHECK_THROWS_AS(run1(sample_node("Squeeze", 2, 1, {}, 13), {x, Tensor::ints({1}, {1})}), dl::ShapeError);
  CHECK_THROWS_AS(dl::rt::make_op(sample_node("Squeeze", 1, 1, {{"axes", attr_ints({0})}}, 13)), dl::ModelError);

  const Tensor v = Tensor::floats({3, 2}, iota_floats(6));
  CHECK(run1(sample_node("Unsqueeze", 2, 1, {}, 13), {v, Tensor::ints({2}, {0, 3})}).shape() == Shape{1, 3, 2, 1});
  CHECK(run1(sample_node("Unsqueeze", 2, 1, {}, 13), {v, Tensor::ints({2}, {-1, 1})}).shape() == Shape{3, 1, 2, 1});
  CHECK(run1(sample_node("Unsqueeze", 1, 1, {{"axes", attr_ints({1})}}, 11), {v}).shape() == Shape{3, 1, 2});
  CHECK(run1(sample_node("Unsqueeze", 2, 1, {}, 13), {Tensor::ints({}, {7}), Tensor::ints({1}, {0})}).shape() ==
        Shape{1});
  CHECK_THROWS_AS(run1(sample_node("Unsqueeze", 2, 1, {}, 13), {v, Tensor::ints({2}, {1, 1})}), dl::ShapeError);
  CHECK_THROWS_AS(run1(sample_node("Unsqueeze", 2, 1, {}, 13), {v, Tensor::ints({1}, {3})}), dl::ShapeError);
  CHECK_THROWS_AS(infer_with_unknown(sample_node("Unsqueeze", 2, 1, {}, 13), {v, Tensor::ints({1}, {0})}, 1),
                  dl::ShapeError);
}

TEST_CASE("Concat: float and int64, axis handling, rank mismatch") {
  Tensor y = run1(sample_node("Concat", 2, 1, {{"axis", attr_i(1)}}),
                  {Tensor::floats({2, 1}, {1, 2}), Tensor::floats({2, 2}, {3, 4, 5, 6})});
  CHECK(y.shape() == Shape{2, 3});
  CHECK(values(y) == std::vector<double>{1, 3, 4, 2, 5, 6});
  y = run1(sample_node("Concat", 2, 1, {{"axis", attr_i(-2)}}),
           {Tensor::floats({1, 2}, {1, 2}), Tensor::floats({2, 2}, {3, 4, 5, 6})});
  CHECK(values(y) == std::vector<double>{1, 2, 3, 4, 5, 6});
  y = run1(sample_node("Concat", 3, 1, {{"axis", attr_i(0)}}),
           {Tensor::ints({1}, {-1}), Tensor::ints({0}, {}), Tensor::ints({2}, {3, 4})});
  CHECK(y.dtype() == dl::rt::DType::kInt64);
  CHECK(values(y) == std::vector<double>{-1, 3, 4});

  std::string rank = error_of(sample_node("Concat", 2, 1, {{"axis", attr_i(0)}}),
                              {Tensor::floats({2, 2}, iota_floats(4)), Tensor::floats({2}, {1, 2})});
  CHECK(rank.find("sample_Concat") != std::string::npos);
  CHECK(rank.find("[2]") != std::string::npos);
  CHECK_THROWS_AS(run1(sample_node("Concat", 2, 1, {{"axis", attr_i(0)}}),
                       {Tensor::floats({2, 2}, iota_floats(4)), Tensor::floats({1, 3}, iota_floats(3))}),
                  dl::ShapeError);
  CHECK_THROWS_AS(dl::rt::make_op(sample_node("Concat", 2)), dl::ModelError);  // axis is required
}

TEST_CASE("Constant: value forms are known at plan time; strings are rejected") {
  OpRun floats(sample_node("Constant", 0, 1, {{"value_floats", attr_floats({0.5f, -1.5f})}}), {});
  CHECK(floats.outputs[0].shape() == Shape{2});
  CHECK(values(floats.outputs[0]) == std::vector<double>{0.5, -1.5});
  Tensor i = run1(sample_node("Constant", 0, 1, {{"value_int", attr_i(7)}}), {});
  CHECK(i.shape() == Shape{});
  CHECK(i.dtype() == dl::rt::DType::kInt64);
  CHECK(values(i) == std::vector<double>{7});

  dl::ir::Attribute t;
  t.kind = dl::ir::Attribute::Kind::kTensor;
  t.t.dtype = dl::ir::DType::kBool;
  t.t.dims = {2};
  t.t.ints = {1, 0};
  Tensor b = run1(sample_node("Constant", 0, 1, {{"value", t}}), {});
  CHECK(b.dtype() == dl::rt::DType::kBool);
  CHECK(values(b) == std::vector<double>{1, 0});

  CHECK_THROWS_AS(dl::rt::make_op(sample_node("Constant", 0, 1, {{"value_string", dl::rt::attr_s("x")}})),
                  dl::ModelError);
  CHECK_THROWS_AS(dl::rt::make_op(sample_node("Constant", 0, 1, {})), dl::ModelError);
  CHECK_THROWS_AS(
      dl::rt::make_op(sample_node("Constant", 0, 1, {{"value_int", attr_i(1)}, {"value_float", dl::rt::attr_f(1)}})),
      dl::ModelError);
}

TEST_CASE("Shape: full, sliced, and known without the input's values") {
  Tensor x;
  x.plan(dl::rt::DType::kFloat32, {2, 3, 4});  // no storage: Shape needs none
  auto op = dl::rt::make_op(sample_node("Shape", 1));
  dl::rt::InferCtx ic;
  ic.in = {&x};
  ic.known = {false};
  Tensor out;
  ic.out = {&out};
  ic.out_known = {false};
  op->infer(ic);
  CHECK(ic.out_known[0]);
  CHECK(values(out) == std::vector<double>{2, 3, 4});

  const Tensor y = Tensor::floats({2, 3, 4}, iota_floats(24));
  auto sliced = [&](int64_t start, int64_t end) {
    return values(run1(sample_node("Shape", 1, 1, {{"start", attr_i(start)}, {"end", attr_i(end)}}, 15), {y}));
  };
  CHECK(sliced(-1, 3) == std::vector<double>{4});
  CHECK(sliced(0, -1) == std::vector<double>{2, 3});
  CHECK(sliced(1, 2) == std::vector<double>{3});
  CHECK(sliced(-10, 10) == std::vector<double>{2, 3, 4});
  CHECK(sliced(2, 1).empty());
  CHECK_THROWS_AS(dl::rt::make_op(sample_node("Shape", 1, 1, {{"start", attr_i(1)}}, 13)), dl::ModelError);
}

TEST_CASE("Gather: axes, negative indices, backward scatter-adds, out of range") {
  const Tensor data = Tensor::floats({3, 2}, {1, 2, 3, 4, 5, 6});
  OpRun run(sample_node("Gather", 2), {data, Tensor::ints({2, 2}, {0, 1, -1, 0})});
  run.forward();
  CHECK(run.outputs[0].shape() == Shape{2, 2, 2});
  CHECK(values(run.outputs[0]) == std::vector<double>{1, 2, 3, 4, 5, 6, 1, 2});
  Tensor ones = Tensor::floats({2, 2, 2}, std::vector<float>(8, 1.0f));
  std::vector<Tensor> din = run.backward({&ones, nullptr}, {true, false});
  CHECK(values(din[0]) == std::vector<double>{2, 2, 1, 1, 1, 1});

  Tensor col = run1(sample_node("Gather", 2, 1, {{"axis", attr_i(-1)}}), {data, Tensor::ints({}, {1})});
  CHECK(col.shape() == Shape{3});
  CHECK(values(col) == std::vector<double>{2, 4, 6});

  std::string err = error_of(sample_node("Gather", 2), {data, Tensor::ints({1}, {3})});
  CHECK(err.find("sample_Gather") != std::string::npos);
  CHECK_THROWS_AS(run1(sample_node("Gather", 2), {data, Tensor::ints({1}, {-4})}), dl::DataError);
  // Indices only known at run time: checked in forward.
  OpRun late(sample_node("Gather", 2), {data, Tensor::ints({1}, {0})});
  late.inputs[1].i()[0] = 5;
  CHECK_THROWS_AS(late.forward(), dl::DataError);
}

TEST_CASE("Cast: float/int conversions, truncation, wrap, bool; unsupported types") {
  const Tensor x = Tensor::floats({5}, {-2.7f, -0.5f, 0.0f, 1.9f, 300.2f});
  auto cast = [&](int64_t to, const Tensor& in) { return values(run1(sample_node("Cast", 1, 1, {{"to", attr_i(to)}}), {in})); };
  CHECK(cast(7, x) == std::vector<double>{-2, 0, 0, 1, 300});
  CHECK(cast(9, x) == std::vector<double>{1, 1, 0, 1, 1});
  CHECK(cast(2, x) == std::vector<double>{254, 0, 0, 1, 44});  // UINT8 wraps after truncation
  CHECK(cast(3, Tensor::ints({3}, {127, 128, -129})) == std::vector<double>{127, -128, 127});
  CHECK(cast(1, Tensor::ints({2}, {-3, 70000})) == std::vector<double>{-3, 70000});
  std::vector<double> same = cast(11, x);
  for (size_t k = 0; k < same.size(); ++k) CHECK(same[k] == doctest::Approx(x.f()[k]));
  CHECK(cast(7, Tensor::floats({1}, {std::nanf("")})) == std::vector<double>{0});
  try {
    dl::rt::make_op(sample_node("Cast", 1, 1, {{"to", attr_i(10)}}));
    FAIL("expected a ModelError");
  } catch (const dl::ModelError& e) {
    const std::string msg = e.what();
    CHECK(msg.find("sample_Cast") != std::string::npos);
    CHECK(msg.find("FLOAT16") != std::string::npos);
  }
  CHECK_THROWS_AS(dl::rt::make_op(sample_node("Cast", 1, 1, {{"to", attr_i(8)}})), dl::ModelError);
}

// PyTorch's dynamic flatten: Shape -> Gather(0) -> Unsqueeze(0) -> Concat([n], [-1]) -> Reshape.
TEST_CASE("Shape -> Gather -> Unsqueeze -> Concat -> Reshape chain, op by op") {
  const Tensor x = Tensor::floats({2, 3, 4, 5}, iota_floats(120, 0.01f));
  Tensor shape = run1(sample_node("Shape", 1, 1, {}, 15), {x});
  CHECK(values(shape) == std::vector<double>{2, 3, 4, 5});
  Tensor batch = run1(sample_node("Gather", 2, 1, {{"axis", attr_i(0)}}, 13), {shape, Tensor::ints({}, {0})});
  CHECK(batch.shape() == Shape{});
  CHECK(values(batch) == std::vector<double>{2});
  Tensor batch1 = run1(sample_node("Unsqueeze", 2, 1, {}, 13), {batch, Tensor::ints({1}, {0})});
  CHECK(batch1.shape() == Shape{1});
  Tensor minus1 = run1(sample_node("Constant", 0, 1, {{"value_ints", attr_ints({-1})}}, 13), {});
  Tensor target = run1(sample_node("Concat", 2, 1, {{"axis", attr_i(0)}}, 13), {batch1, minus1});
  CHECK(values(target) == std::vector<double>{2, -1});
  OpRun reshape(sample_node("Reshape", 2, 1, {}, 14), {x, target});
  reshape.forward();
  CHECK(reshape.outputs[0].shape() == Shape{2, 60});
  CHECK(values(reshape.outputs[0]) == values(x));
  Tensor g = Tensor::floats({2, 60}, iota_floats(120, -0.5f));
  std::vector<Tensor> din = reshape.backward({&g}, {true, false});
  CHECK(din[0].shape() == x.shape());
  CHECK(values(din[0]) == values(g));
}
