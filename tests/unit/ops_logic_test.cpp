// Forward values of the bool, selection and variadic ops (comparisons, And/Or/Xor/Not,
// Where, Mod, Sum/Mean/Max/Min, ConstantOfShape, Range) and of Erf, Gelu, HardSwish,
// against hand-computed or libm references, plus their type errors. Gradients: the
// generic checker (gradcheck_test.cpp) runs every op's sample cases.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "converter/errors.h"
#include "runtime/attrs.h"
#include "tests/unit/op_harness.h"

using dl::rt::attr_i;
using dl::rt::attr_s;
using dl::rt::DType;
using dl::rt::sample_node;
using dl::rt::Tensor;
using dl::test::OpRun;

namespace {

Tensor run1(const dl::ir::Node& node, std::vector<Tensor> in) {
  OpRun run(node, std::move(in));
  run.forward();
  return run.outputs[0];
}

std::vector<int64_t> ints(const Tensor& t) { return std::vector<int64_t>(t.i(), t.i() + t.numel()); }

}  // namespace

TEST_CASE("comparisons: bool output, broadcasting, float and int64") {
  const Tensor a = Tensor::floats({2, 3}, {0.5f, -1.0f, 2.0f, 0.3f, -0.7f, 1.1f});
  const Tensor b = Tensor::floats({3}, {0.5f, 0.2f, 1.1f});
  const Tensor eq = run1(sample_node("Equal", 2), {a, b});
  CHECK(eq.dtype() == DType::kBool);
  CHECK(eq.shape() == dl::rt::Shape{2, 3});
  CHECK(ints(eq) == std::vector<int64_t>{1, 0, 0, 0, 0, 1});
  CHECK(ints(run1(sample_node("Less", 2), {a, b})) == std::vector<int64_t>{0, 1, 0, 1, 1, 0});
  CHECK(ints(run1(sample_node("Greater", 2), {a, b})) == std::vector<int64_t>{0, 0, 1, 0, 0, 0});
  CHECK(ints(run1(sample_node("LessOrEqual", 2), {a, b})) == std::vector<int64_t>{1, 1, 0, 1, 1, 1});
  CHECK(ints(run1(sample_node("GreaterOrEqual", 2), {a, b})) == std::vector<int64_t>{1, 0, 1, 0, 0, 1});
  CHECK(ints(run1(sample_node("Less", 2), {Tensor::ints({3}, {1, 5, 9}), Tensor::ints({}, {5})})) ==
        std::vector<int64_t>{1, 0, 0});
  CHECK(ints(run1(sample_node("Equal", 2), {Tensor::bools({2}, {1, 0}), Tensor::bools({2}, {1, 1})})) ==
        std::vector<int64_t>{1, 0});
  // Legacy (since-version 1) broadcast=1, axis=0: B [2] lines up with A's first dimension.
  CHECK(ints(run1(sample_node("Greater", 2, 1, {{"broadcast", attr_i(1)}, {"axis", attr_i(0)}}, 1),
                  {a, Tensor::floats({2}, {0.0f, 1.0f})})) == std::vector<int64_t>{1, 0, 1, 0, 0, 1});
  CHECK_THROWS_AS(OpRun(sample_node("Less", 2), {a, Tensor::ints({3}, {1, 2, 3})}), dl::ShapeError);
  CHECK_THROWS_AS(OpRun(sample_node("Less", 2), {Tensor::bools({1}, {1}), Tensor::bools({1}, {0})}), dl::ShapeError);
}

TEST_CASE("And, Or, Xor, Not: bool in, bool out; numbers rejected") {
  const Tensor a = Tensor::bools({2, 2}, {0, 0, 1, 1});
  const Tensor b = Tensor::bools({2}, {0, 1});
  CHECK(ints(run1(sample_node("And", 2), {a, b})) == std::vector<int64_t>{0, 0, 0, 1});
  CHECK(ints(run1(sample_node("Or", 2), {a, b})) == std::vector<int64_t>{0, 1, 1, 1});
  CHECK(ints(run1(sample_node("Xor", 2), {a, b})) == std::vector<int64_t>{0, 1, 1, 0});
  const Tensor n = run1(sample_node("Not", 1), {a});
  CHECK(n.dtype() == DType::kBool);
  CHECK(ints(n) == std::vector<int64_t>{1, 1, 0, 0});
  CHECK_THROWS_AS(OpRun(sample_node("And", 2), {Tensor::ints({1}, {1}), Tensor::ints({1}, {1})}), dl::ShapeError);
  CHECK_THROWS_AS(OpRun(sample_node("Not", 1), {Tensor::floats({1}, {1.0f})}), dl::ShapeError);
}

TEST_CASE("Where: three-way broadcasting, int64 values, a bool condition required") {
  const Tensor y = run1(sample_node("Where", 3), {Tensor::bools({2, 1}, {1, 0}), Tensor::floats({3}, {1, 2, 3}),
                                                  Tensor::floats({}, {-1.0f})});
  CHECK(y.shape() == dl::rt::Shape{2, 3});
  CHECK(y.fvec() == std::vector<float>{1, 2, 3, -1, -1, -1});
  const Tensor yi = run1(sample_node("Where", 3),
                         {Tensor::bools({3}, {0, 1, 0}), Tensor::ints({3}, {1, 2, 3}), Tensor::ints({1}, {-9})});
  CHECK(yi.dtype() == DType::kInt64);
  CHECK(ints(yi) == std::vector<int64_t>{-9, 2, -9});
  CHECK_THROWS_AS(OpRun(sample_node("Where", 3), {Tensor::ints({1}, {1}), Tensor::floats({1}, {1}),
                                                  Tensor::floats({1}, {2})}),
                  dl::ShapeError);
}

TEST_CASE("Mod: fmod 0 takes the divisor's sign, fmod 1 the dividend's; floats need fmod 1") {
  const Tensor a = Tensor::ints({5}, {7, -7, 7, -7, 5});
  const Tensor b = Tensor::ints({5}, {3, 3, -3, -3, 0});
  CHECK(ints(run1(sample_node("Mod", 2), {a, b})) == std::vector<int64_t>{1, 2, -2, -1, 0});
  CHECK(ints(run1(sample_node("Mod", 2, 1, {{"fmod", attr_i(1)}}), {a, b})) == std::vector<int64_t>{1, -1, 1, -1, 0});
  const Tensor f = run1(sample_node("Mod", 2, 1, {{"fmod", attr_i(1)}}),
                        {Tensor::floats({2}, {5.5f, -5.5f}), Tensor::floats({}, {2.0f})});
  CHECK(f.fvec() == std::vector<float>{1.5f, -1.5f});
  CHECK_THROWS_AS(OpRun(sample_node("Mod", 2), {Tensor::floats({1}, {1}), Tensor::floats({1}, {2})}), dl::ModelError);
  CHECK_THROWS_AS(dl::rt::make_op(sample_node("Mod", 2, 1, {{"fmod", attr_i(2)}})), dl::ModelError);
}

TEST_CASE("Sum, Mean, Max, Min: variadic broadcasting; Max/Min split ties like torch.maximum") {
  const std::vector<Tensor> in = {Tensor::floats({2, 2}, {1, 5, -2, 0}), Tensor::floats({2}, {3, 5}),
                                  Tensor::floats({}, {-1.0f})};
  CHECK(run1(sample_node("Sum", 3), in).fvec() == std::vector<float>{3, 9, 0, 4});
  CHECK(run1(sample_node("Max", 3), in).fvec() == std::vector<float>{3, 5, 3, 5});
  CHECK(run1(sample_node("Min", 3), in).fvec() == std::vector<float>{-1, -1, -2, -1});
  CHECK(run1(sample_node("Mean", 3), in).fvec()[1] == doctest::Approx(3.0));
  CHECK(ints(run1(sample_node("Max", 2), {Tensor::ints({2}, {4, -2}), Tensor::ints({}, {0})})) ==
        std::vector<int64_t>{4, 0});
  CHECK(std::isnan(run1(sample_node("Max", 2), {Tensor::floats({1}, {NAN}), Tensor::floats({1}, {1})}).f()[0]));

  // Max(a, b) at a tie (5 == 5) and with b broadcast: dy 1 everywhere.
  OpRun run(sample_node("Max", 2), {Tensor::floats({2, 2}, {1, 5, -2, 0}), Tensor::floats({2}, {3, 5})});
  run.forward();
  Tensor dy = Tensor::floats({2, 2}, {1, 1, 1, 1});
  const auto g = run.backward({&dy}, {true, true});
  CHECK(g[0].fvec() == std::vector<float>{0, 0.5f, 0, 0});
  CHECK(g[1].fvec() == std::vector<float>{2, 1.5f});
  CHECK_THROWS_AS(OpRun(sample_node("Sum", 2, 1, {}, 6), {Tensor::floats({2}, {1, 2}), Tensor::floats({1}, {1})}),
                  dl::ShapeError);  // no broadcasting before version 8
}

TEST_CASE("ConstantOfShape and Range: values known at plan time") {
  const Tensor z = run1(sample_node("ConstantOfShape", 1), {Tensor::ints({2}, {2, 3})});
  CHECK(z.dtype() == DType::kFloat32);
  CHECK(z.fvec() == std::vector<float>(6, 0.0f));
  CHECK(ints(run1(sample_node("Range", 3), {Tensor::ints({}, {10}), Tensor::ints({}, {4}), Tensor::ints({}, {-3})})) ==
        std::vector<int64_t>{10, 7});
  CHECK(run1(sample_node("Range", 3), {Tensor::floats({}, {1}), Tensor::floats({}, {5}), Tensor::floats({}, {2})})
            .fvec() == std::vector<float>{1, 3});
  CHECK(run1(sample_node("Range", 3), {Tensor::ints({}, {3}), Tensor::ints({}, {1}), Tensor::ints({}, {1})}).numel() ==
        0);
  CHECK_THROWS_AS(OpRun(sample_node("Range", 3), {Tensor::ints({}, {0}), Tensor::ints({}, {4}), Tensor::ints({}, {0})}),
                  dl::ShapeError);
  CHECK_THROWS_AS(OpRun(sample_node("ConstantOfShape", 1), {Tensor::ints({1}, {-2})}), dl::ShapeError);
}

TEST_CASE("Erf, Gelu, HardSwish: values against libm") {
  const std::vector<float> x = {-3.5f, -1.5f, -0.2f, 0.0f, 0.9f, 3.2f};
  const Tensor xt = Tensor::floats({6}, x);
  const Tensor erf = run1(sample_node("Erf", 1), {xt});
  const Tensor gelu = run1(sample_node("Gelu", 1, 1, {}, 20), {xt});
  const Tensor gelu_tanh = run1(sample_node("Gelu", 1, 1, {{"approximate", attr_s("tanh")}}, 20), {xt});
  const Tensor hs = run1(sample_node("HardSwish", 1), {xt});
  for (size_t k = 0; k < x.size(); ++k) {
    const double v = x[k];
    INFO("x = " << v);
    CHECK(erf.f()[k] == doctest::Approx(std::erf(v)).epsilon(1e-6));
    CHECK(gelu.f()[k] == doctest::Approx(0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))).epsilon(1e-6));
    const double inner = std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v);
    CHECK(gelu_tanh.f()[k] == doctest::Approx(0.5 * v * (1 + std::tanh(inner))).epsilon(1e-6));
    CHECK(hs.f()[k] == doctest::Approx(v * std::max(0.0, std::min(1.0, v / 6 + 0.5))).epsilon(1e-6));
  }
  CHECK_THROWS_AS(dl::rt::make_op(sample_node("Gelu", 1, 1, {{"approximate", attr_s("erf")}}, 20)), dl::ModelError);
}
