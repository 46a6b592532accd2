// Forward values of the element-wise, activation, softmax, Clip and Dropout ops against
// numpy-computed references, plus their error paths.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "converter/errors.h"
#include "runtime/attrs.h"
#include "tests/unit/op_harness.h"

using dl::rt::attr_f;
using dl::rt::attr_i;
using dl::rt::sample_node;
using dl::rt::Tensor;
using dl::test::OpRun;

namespace {

std::vector<float> run_floats(const dl::ir::Node& node, std::vector<Tensor> in, bool training = false) {
  OpRun run(node, std::move(in), training);
  run.forward();
  return run.outputs[0].fvec();
}

void check_close(const std::vector<float>& got, const std::vector<double>& want, double tol = 1e-5) {
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    INFO("element " << k);
    CHECK(got[k] == doctest::Approx(want[k]).epsilon(tol));
  }
}

}  // namespace

TEST_CASE("ew ops: activations match numpy") {
  const Tensor x = Tensor::floats({4}, {-1.5f, 0.7f, 2.0f, -0.3f});
  check_close(run_floats(sample_node("Selu", 1), {x}), {-1.3658143281936646, 0.7354906797409058, 2.1014020442962646, -0.4556673467159271});
  check_close(run_floats(sample_node("Elu", 1), {x}), {-0.7768698334693909, 0.7, 2.0, -0.25918179750442505});
  check_close(run_floats(sample_node("HardSigmoid", 1), {x}), {0.2, 0.64, 0.9, 0.44});
  check_close(run_floats(sample_node("Softplus", 1), {x}), {0.20141327381134033, 1.1031861305236816, 2.1269278526306152, 0.554355263710022});
  check_close(run_floats(sample_node("LeakyRelu", 1, 1, {{"alpha", attr_f(0.1f)}}), {x}), {-0.15, 0.7, 2.0, -0.03});
  // Extremes stay finite where the math is finite (no exp overflow into inf/inf).
  const Tensor big = Tensor::floats({2}, {-200.0f, 200.0f});
  check_close(run_floats(sample_node("Sigmoid", 1), {big}), {0.0, 1.0});
  check_close(run_floats(sample_node("Softplus", 1), {big}), {0.0, 200.0});
}

TEST_CASE("ew ops: NaN inputs stay NaN through Clip and HardSigmoid") {
  const Tensor x = Tensor::floats({1}, {std::nanf("")});
  CHECK(std::isnan(run_floats(sample_node("Clip", 3, 1, {}, 13), {x, Tensor::floats({}, {0.0f}), Tensor::floats({}, {6.0f})})[0]));
  CHECK(std::isnan(run_floats(sample_node("HardSigmoid", 1), {x})[0]));
}

TEST_CASE("ew ops: Softmax and LogSoftmax by version") {
  const Tensor x = Tensor::floats({2, 3, 2}, {0.5f, -1.0f, 2.0f, 0.3f, -0.7f, 1.1f, 1.2f, -0.6f, 0.8f, 1.4f, -0.9f, 0.2f});
  check_close(run_floats(sample_node("Softmax", 1, 1, {{"axis", attr_i(1)}}, 13), {x}),
              {0.17292411625385284, 0.07790913432836533, 0.7749921679496765, 0.2858716547489166, 0.05208373814821243,
               0.6362191438674927, 0.5577940344810486, 0.09420988708734512, 0.37390050292015076, 0.6961221098899841,
               0.06830547004938126, 0.20966796576976776});
  check_close(run_floats(sample_node("Softmax", 1, 1, {{"axis", attr_i(1)}}, 11), {x}),
              {0.11564886569976807, 0.025804750621318817, 0.5183022618293762, 0.09468528628349304, 0.03483276814222336,
               0.21072600781917572, 0.28189998865127563, 0.04659775272011757, 0.18896321952342987, 0.3443134129047394,
               0.0345204658806324, 0.10370520502328873});
  check_close(run_floats(sample_node("LogSoftmax", 1, 1, {}, 13), {x}),
              {-0.20141325891017914, -1.7014132738113403, -0.16778594255447388, -1.8677860498428345, -1.9529776573181152,
               -0.15297769010066986, -0.15297769010066986, -1.9529776573181152, -1.0374879837036133, -0.43748795986175537,
               -1.3873354196548462, -0.2873353362083435});
  CHECK_THROWS_AS(OpRun(sample_node("Softmax", 1, 1, {{"axis", attr_i(3)}}, 13), {x}), dl::ShapeError);
}

TEST_CASE("ew ops: binary arithmetic, int64 shape math and Pow types") {
  OpRun mul(sample_node("Mul", 2), {Tensor::ints({3}, {2, 3, 4}), Tensor::ints({}, {5})});
  mul.forward();
  CHECK(mul.outputs[0].dtype() == dl::rt::DType::kInt64);
  CHECK(mul.outputs[0].ivec() == std::vector<int64_t>{10, 15, 20});
  OpRun div(sample_node("Div", 2), {Tensor::ints({3}, {7, -7, 9}), Tensor::ints({3}, {2, 2, 0})});
  div.forward();
  CHECK(div.outputs[0].ivec() == std::vector<int64_t>{3, -3, 0});  // truncation; x/0 -> 0
  OpRun pow_ii(sample_node("Pow", 2), {Tensor::ints({3}, {2, 3, -2}), Tensor::ints({3}, {3, 2, 3})});
  pow_ii.forward();
  CHECK(pow_ii.outputs[0].ivec() == std::vector<int64_t>{8, 9, -8});
  check_close(run_floats(sample_node("Pow", 2), {Tensor::floats({2}, {1.5f, 2.0f}), Tensor::ints({2}, {2, 3})}), {2.25, 8.0});
  check_close(run_floats(sample_node("Sub", 2), {Tensor::floats({3, 1}, {1, 2, 3}), Tensor::floats({2}, {10, 20})}),
              {-9, -19, -8, -18, -7, -17});
  check_close(run_floats(sample_node("Add", 2, 1, {{"broadcast", attr_i(1)}, {"axis", attr_i(0)}}, 6),
                         {Tensor::floats({2, 2}, {1, 2, 3, 4}), Tensor::floats({2}, {10, 20})}),
              {11, 12, 23, 24});
}

TEST_CASE("ew ops: shape and attribute errors name the node") {
  try {
    OpRun(sample_node("Add", 2), {Tensor::floats({2, 3}, {}), Tensor::floats({2}, {})});
    FAIL("expected ShapeError");
  } catch (const dl::ShapeError& e) {
    CHECK(std::string(e.what()).find("sample_Add") != std::string::npos);
  }
  CHECK_THROWS_AS(OpRun(sample_node("Add", 2), {Tensor::floats({2}, {}), Tensor::ints({2}, {})}), dl::ShapeError);
  CHECK_THROWS_AS(OpRun(sample_node("Add", 2, 1, {}, 6), {Tensor::floats({2, 3}, {}), Tensor::floats({3}, {})}),
                  dl::ShapeError);  // legacy broadcast=0 requires equal shapes
  CHECK_THROWS_AS(OpRun(sample_node("Add", 2, 1, {{"broadcast", attr_i(1)}}, 13), {Tensor::floats({1}, {}), Tensor::floats({1}, {})}),
                  dl::ModelError);  // opset 13 has no `broadcast`
  CHECK_THROWS_AS(OpRun(sample_node("Tanh", 1, 1, {{"alpha", attr_f(1)}}), {Tensor::floats({1}, {})}), dl::ModelError);
  CHECK_THROWS_AS(OpRun(sample_node("Clip", 2, 1, {}, 13), {Tensor::floats({2}, {}), Tensor::floats({2}, {})}),
                  dl::ShapeError);
  CHECK_THROWS_AS(OpRun(sample_node("Dropout", 1, 1, {{"ratio", attr_f(1.0f)}}, 7), {Tensor::floats({2}, {})}),
                  dl::ModelError);
}

TEST_CASE("ew ops: Clip bounds from attributes and inputs") {
  const Tensor x = Tensor::floats({4}, {-2.0f, -0.5f, 0.5f, 2.0f});
  check_close(run_floats(sample_node("Clip", 1, 1, {{"min", attr_f(-1)}, {"max", attr_f(1)}}, 6), {x}), {-1, -0.5, 0.5, 1});
  check_close(run_floats(sample_node("Clip", 1, 1, {}, 11), {x}), {-2, -0.5, 0.5, 2});
  check_close(run_floats(sample_node("Clip", 3, 1, {}, 13), {x, Tensor::floats({}, {1.0f}), Tensor::floats({}, {0.0f})}),
              {0, 0, 0, 0});  // min > max: everything becomes max
  OpRun ci(sample_node("Clip", 3, 1, {}, 13), {Tensor::ints({3}, {-5, 1, 9}), Tensor::ints({}, {0}), Tensor::ints({}, {4})});
  ci.forward();
  CHECK(ci.outputs[0].ivec() == std::vector<int64_t>{0, 1, 4});
  // Plan-time bounds make the traits exact.
  OpRun relu6(sample_node("Clip", 3, 1, {}, 13), {x, Tensor::floats({}, {0.0f}), Tensor::floats({}, {6.0f})});
  CHECK(relu6.op->traits().out_lo == 0.0);
  CHECK(relu6.op->traits().out_hi == 6.0);
  CHECK(relu6.op->traits().has_dead_zone);
  CHECK_FALSE(relu6.op->differentiable_input(1));
}

// A bound of -0 reaches every lane as -0 (broadcast as v - 0, not 0 + v, which is +0): the
// vector body and the scalar tail clamp to the same zero, -0, as the definition does.
TEST_CASE("ew ops: Clip to a bound of -0 gives -0 in every element") {
  std::vector<float> v(37);
  for (size_t k = 0; k < v.size(); ++k) v[k] = -1.0f - float(k);
  const Tensor x = Tensor::floats({37}, v);
  const std::vector<float> y = run_floats(sample_node("Clip", 3, 1, {}, 13), {x, Tensor::floats({}, {-0.0f}), Tensor::floats({}, {6.0f})});
  REQUIRE(y.size() == v.size());
  for (size_t k = 0; k < y.size(); ++k) {
    INFO("element " << k);
    CHECK(y[k] == 0.0f);
    CHECK(std::signbit(y[k]));
  }
}

TEST_CASE("ew ops: Dropout modes, mask and scaling") {
  std::vector<float> v(4000);
  for (size_t k = 0; k < v.size(); ++k) v[k] = 1.0f + float(k % 7);
  const Tensor x = Tensor::floats({4000}, v);
  // Inference (opset 13 without training_mode): identity, mask all true.
  OpRun inf(sample_node("Dropout", 1, 2, {}, 13), {x});
  inf.forward();
  CHECK(inf.outputs[0].fvec() == v);
  CHECK(inf.outputs[1].dtype() == dl::rt::DType::kBool);
  for (int64_t m : inf.outputs[1].ivec()) REQUIRE(m == 1);
  CHECK(inf.op->stochastic());
  // Training via the training_mode input: about (1 - ratio) kept, kept values scaled.
  OpRun tr(sample_node("Dropout", 3, 2, {}, 13), {x, Tensor::floats({}, {0.25f}), Tensor::ints({}, {1})});
  tr.forward();
  int64_t kept = 0;
  for (size_t k = 0; k < v.size(); ++k) {
    const float y = tr.outputs[0].f()[k];
    const int64_t m = tr.outputs[1].i()[k];
    if (m) {
      ++kept;
      REQUIRE(y == doctest::Approx(v[k] / 0.75f));
    } else {
      REQUIRE(y == 0.0f);
    }
  }
  CHECK(kept > 2850);
  CHECK(kept < 3150);
  // Backward uses the same mask.
  Tensor ones = Tensor::floats({4000}, std::vector<float>(4000, 1.0f));
  std::vector<Tensor> g = tr.backward({&ones, nullptr}, {true, false, false});
  for (size_t k = 0; k < v.size(); ++k) REQUIRE(g[0].f()[k] == (tr.outputs[1].i()[k] ? doctest::Approx(1 / 0.75f) : doctest::Approx(0.0f)));
  // Opset 7: the graph's training flag drives it; the mask is float.
  OpRun v7(sample_node("Dropout", 1, 2, {{"ratio", attr_f(0.5f)}}, 7), {x}, true);
  v7.forward();
  CHECK(v7.outputs[1].dtype() == dl::rt::DType::kFloat32);
  // Ratio 0 in training: identity.
  OpRun zero(sample_node("Dropout", 3, 1, {}, 13), {x, Tensor::floats({}, {0.0f}), Tensor::ints({}, {1})});
  zero.forward();
  CHECK(zero.outputs[0].fvec() == v);
}

// An elementwise op's loops without a probe run on vectors (Relu's and Clip's); the values
// must be the scalar definition's, y = fwd(x), dX = dX0 + term(x, dY), bit for bit,
// through the vector body and the scalar tail (lengths around the vector width), for
// NaN, infinities, signed zeros and values at `bounds` (an activation's kinks), in the
// forward pass (twice: the second onto the first's outputs, so a store left out shows)
// and in both backward modes (dX assigned, dX added to). `extra`: the op's other inputs
// (Clip's bounds). (The fused loops, with light probes, give these loops' values:
// probe_sink_test.cpp, probe_fused_test.cpp.)
template <class Fwd, class Term>
void check_vector_loops(const dl::ir::Node& node, const std::vector<Tensor>& extra, const std::vector<float>& bounds,
                        Fwd fwd, Term term) {
  std::vector<float> specials = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-30f, -1e-30f, 3.5f, -2.25f};
  for (float b : bounds) specials.insert(specials.end(), {b, std::nextafter(b, -INFINITY), std::nextafter(b, INFINITY)});
  const int64_t m = int64_t(specials.size());
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{15}, int64_t{16}, int64_t{17}, int64_t{33}, int64_t{70001}}) {
    INFO("n = " << n);
    std::vector<float> x(static_cast<size_t>(n)), dy(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) {
      x[size_t(k)] = specials[size_t(k % m)];
      dy[size_t(k)] = k % 7 == 3    ? NAN
                      : k % 11 == 5 ? -INFINITY
                      : k % 17 == 8 ? INFINITY
                      : k % 19 == 9 ? -0.0f
                                    : 0.25f * float(k % 13) - 1.0f;
    }
    std::vector<float> neg(x);  // the first forward pass's input: other outputs everywhere
    for (float& v : neg) v = v == 0.0f || std::isnan(v) ? 5.0f : -v;
    std::vector<Tensor> in = {Tensor::floats({n}, neg)};
    in.insert(in.end(), extra.begin(), extra.end());
    OpRun run(node, in, true);
    run.forward();
    run.inputs[0] = Tensor::floats({n}, x);
    run.forward();
    const Tensor dyt = Tensor::floats({n}, dy);
    run.din_fill = 0.75f;  // (dX added to: onto 0.75)
    for (uint32_t assign : {0u, 1u}) {
      const std::vector<float> y = run.outputs[0].fvec(), dx = run.backward({&dyt}, {true}, assign)[0].fvec();
      for (int64_t k = 0; k < n; ++k) {
        const float xv = x[size_t(k)], want_y = fwd(xv);
        const float want_dx = (assign ? 0.0f : 0.75f) + term(xv, dy[size_t(k)]);
        INFO("k = " << k << ", x = " << xv << ", assign " << assign);
        if (std::isnan(want_y)) CHECK(std::isnan(y[size_t(k)]));
        else CHECK(std::memcmp(&y[size_t(k)], &want_y, sizeof(float)) == 0);
        if (std::isnan(want_dx)) CHECK(std::isnan(dx[size_t(k)]));
        else CHECK(std::memcmp(&dx[size_t(k)], &want_dx, sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("ew ops: Relu's vector loops give the scalar definition's bits") {
  check_vector_loops(sample_node("Relu", 1, 1, {}, 14), {}, {}, [](float x) { return x > 0.0f ? x : 0.0f; },
                     [](float x, float g) { return g * (x > 0.0f ? 1.0f : 0.0f); });
}

TEST_CASE("ew ops: Clip's vector loops give the scalar definition's bits") {
  // ReLU6 from inputs, a lower bound alone, attributes (opset 6) and lo > hi (all hi).
  // A NaN x stays NaN; dX takes dY where lo <= x <= hi, else 0 (even for a NaN dY).
  struct Case {
    const char* label;
    dl::ir::Node node;
    std::vector<Tensor> extra;
    float lo, hi;
  };
  const std::vector<Case> cases = {
      {"ReLU6 (inputs 0, 6)", sample_node("Clip", 3, 1, {}, 13), {Tensor::floats({}, {0.0f}), Tensor::floats({}, {6.0f})}, 0.0f, 6.0f},
      {"min -0.5 alone", sample_node("Clip", 2, 1, {}, 11), {Tensor::floats({}, {-0.5f})}, -0.5f, INFINITY},
      {"attributes -1, 1", sample_node("Clip", 1, 1, {{"min", attr_f(-1.0f)}, {"max", attr_f(1.0f)}}, 6), {}, -1.0f, 1.0f},
      {"min 1 > max 0", sample_node("Clip", 3, 1, {}, 13), {Tensor::floats({}, {1.0f}), Tensor::floats({}, {0.0f})}, 1.0f, 0.0f},
  };
  for (const Case& c : cases) {
    INFO(c.label);
    const float lo = c.lo, hi = c.hi;
    check_vector_loops(
        c.node, c.extra, {lo, hi},
        [=](float x) {
          const float v = x < lo ? lo : x;
          return v > hi ? hi : v;
        },
        [=](float x, float g) { return x >= lo && x <= hi ? g : 0.0f; });
  }
}
