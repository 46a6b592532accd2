// The int64 paths of the arithmetic ops at the ends of the range: they wrap modulo 2^64
// like NumPy's int64 instead of trapping (INT64_MIN / -1 raised SIGFPE in Div) or
// overflowing undefinedly (UBSan flags signed overflow); see runtime/ops/int_wrap.h.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "runtime/attrs.h"
#include "tests/unit/op_harness.h"

namespace {

using dl::rt::Tensor;
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

std::vector<int64_t> run(const std::string& op, std::vector<Tensor> inputs) {
  const dl::ir::Node node = dl::rt::sample_node(op, inputs.size());
  dl::test::OpRun r(node, std::move(inputs));
  r.forward();
  REQUIRE(r.outputs[0].dtype() == dl::rt::DType::kInt64);
  return std::vector<int64_t>(r.outputs[0].i(), r.outputs[0].i() + r.outputs[0].numel());
}

Tensor ints(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::ints({n}, std::move(v));
}

}  // namespace

TEST_CASE("int64 arithmetic wraps like numpy at the ends of the range and never traps") {
  // Values as numpy.int64 gives them (with its overflow warning).
  CHECK(run("Div", {ints({kMin, kMin, 7, -7, 5}), ints({-1, 1, 0, 2, -1})}) ==
        std::vector<int64_t>{kMin, kMin, 0, -3, -5});
  CHECK(run("Add", {ints({kMax, kMin}), ints({1, -1})}) == std::vector<int64_t>{kMin, kMax});
  CHECK(run("Sub", {ints({kMin, kMax}), ints({1, -1})}) == std::vector<int64_t>{kMax, kMin});
  CHECK(run("Mul", {ints({kMin, kMax, 3}), ints({-1, 2, -4})}) == std::vector<int64_t>{kMin, -2, -12});
  CHECK(run("Neg", {ints({kMin, kMax, 0})}) == std::vector<int64_t>{kMin, kMin + 1, 0});
  CHECK(run("Abs", {ints({kMin, -5})}) == std::vector<int64_t>{kMin, 5});
  CHECK(run("Sum", {ints({kMax, 1}), ints({1, 2}), ints({0, 3})}) == std::vector<int64_t>{kMin, 6});
  CHECK(run("Mod", {ints({kMin, -7}), ints({-1, 3})}) == std::vector<int64_t>{0, 2});
}
