// A MatMul and the Add of its bias planned as one step (runtime/graph_fuse.cpp,
// runtime/ops/mat_mul.cpp): the op against a MatMul and an Add (Y left to the probe, dY
// reported, dC the column sums), and graphs
// planned with and without fusing: the same values, gradients and layers, one step less;
// what is not a bias stays an Add.
#include <doctest/doctest.h>

#include <cmath>
#include <map>

#include "runtime/graph.h"
#include "runtime/ops/fused.h"
#include "runtime/ops/shape_util.h"
#include "runtime/probe_stats.h"
#include "tests/unit/op_harness.h"
#include "tests/unit/parallel_test_util.h"
#include "tests/unit/small_cnn.h"
#include "tests/unit/fuse_fixtures.h"
#include "tests/unit/transform_fixtures.h"

using namespace dl;
using dl::rt::SinkSums;
using dl::rt::Tensor;
using dl::test::check_close;
using dl::test::OpRun;
using dl::test::run_graph;
using dl::test::Trained;
using dl::test::random_values;

namespace {

rt::stats::Bands bands_of(bool light) {
  rt::stats::Bands b;
  b.light = light;
  return b;
}

void check_reported(const SinkSums& sink, const Tensor& t, bool light) {
  REQUIRE(sink.reported() == t.numel());
  rt::stats::Sums want;
  rt::stats::add_values_parallel(t.f(), t.numel(), bands_of(light), want);
  test::check_same_stats(rt::stats::finish(sink.total(), t.numel()), rt::stats::finish(want, t.numel()));
}

OpRun fused_run(const std::vector<Tensor>& in) {
  ir::Node node = rt::sample_node("MatMul", 3, 1, {}, 13);
  rt::MatMulFusion f;
  f.bias_add = "bias_add";
  return OpRun(rt::make_mat_mul_fused(node, f), in, 1, true);
}

}  // namespace

TEST_CASE("MatMul with a bias: Y = A B + C, dA and dB the MatMul's, dC the column sums, dY reported") {
  // Folded batches (B without batch dimensions), per-product batches (B with them, A
  // broadcast), a 1-D A; one large enough to wake a helper. Run on 2 threads and on 1:
  // the same bits. K is below Eigen's depth block, so Y is exactly the MatMul's product
  // plus the bias (the kernel adds each finished dot product onto the bias once).
  struct Case {
    rt::Shape a, b;
  };
  const std::vector<Case> cases = {{{2, 150, 64}, {64, 200}},   {{1, 100, 40}, {40, 1000}}, {{2, 300, 96}, {96, 200}},
                                   {{3, 1, 4, 5}, {2, 5, 6}},    {{5}, {2, 5, 6}},          {{2, 3, 4, 5}, {5, 7}}};
  for (const Case& c : cases) {
    INFO("A " << rt::shape_str(c.a) << " B " << rt::shape_str(c.b));
    const Tensor a = Tensor::floats(c.a, random_values(rt::shape_numel(c.a), 11)),
                 b = Tensor::floats(c.b, random_values(rt::shape_numel(c.b), 12));
    const int64_t n = c.b.back();
    const Tensor bias = Tensor::floats({n}, random_values(n, 13));
    std::map<int, std::vector<std::vector<float>>> by_threads;
    test::on_two_then_one([&](int threads) {
      for (const bool light : {true, false}) {
        OpRun fused = fused_run({a, b, bias}), again = fused_run({a, b, bias});
        OpRun product(rt::sample_node("MatMul", 2, 1, {}, 13), {a, b}, true);
        CHECK(fused.op->describe() == "adds the bias of 'bias_add' in the same step");
        SinkSums y, dy;
        y.reset(bands_of(light));
        dy.reset(bands_of(light));
        fused.out_stats = &y;
        fused.dout_stats = &dy;
        fused.forward();
        again.forward();
        product.forward();
        const std::vector<float> got = fused.outputs[0].fvec(), ab = product.outputs[0].fvec();
        REQUIRE(got.size() == ab.size());
        bool exact = true;
        for (size_t i = 0; i < got.size(); ++i) exact = exact && got[i] == ab[i] + bias.fvec()[i % size_t(n)];
        CHECK(exact);
        CHECK(y.reported() == 0);  // left to the probe's pass or the next step
        // Backward: dA and dB as the MatMul's (the same products); dC the column sums of dY,
        // written whole as the first writer (assign: the buffer starts as NaN) or added onto
        // zeros: the same bits.
        const Tensor g = Tensor::floats(fused.outputs[0].shape(), random_values(int64_t(got.size()), 14));
        CHECK(fused.op->assigns_gradient(2));
        const std::vector<Tensor> d = fused.backward({&g}, {true, true, true}, 7u);
        const std::vector<Tensor> added = again.backward({&g}, {true, true, true}, 3u);
        const std::vector<Tensor> dp = product.backward({&g}, {true, true}, 3u);
        CHECK(d[0].fvec() == dp[0].fvec());
        CHECK(d[1].fvec() == dp[1].fvec());
        CHECK(d[2].fvec() == added[2].fvec());
        check_reported(dy, g, light);
        const int64_t rows = int64_t(got.size()) / n;
        for (int64_t j = 0; j < n; ++j) {
          double want = 0;
          for (int64_t r = 0; r < rows; ++r) want += g.fvec()[size_t(r * n + j)];
          CHECK(std::fabs(d[2].fvec()[size_t(j)] - want) < 1e-4);
        }
        if (light) by_threads[threads] = {got, d[0].fvec(), d[1].fvec(), d[2].fvec()};
      }
    });
    CHECK(by_threads[2] == by_threads[1]);
  }
}

TEST_CASE("MatMul with a bias: a bias that is not one value per column is refused by name") {
  const Tensor a = Tensor::floats({2, 3}, random_values(6, 15)), b = Tensor::floats({3, 4}, random_values(12, 16));
  CHECK_THROWS_WITH_AS(fused_run({a, b, Tensor::floats({3}, random_values(3, 17))}),
                       doctest::Contains("the bias of 'bias_add' [3] is not one value per output column (4)"),
                       dl::ShapeError);
}

namespace {

// x [N, 5, 6] -> MatMul(x, W [6, 4]) + bias -> Relu -> MatMul(., W2 [4, 3]) + bias2 (bias first).
ir::Model biased(const std::string& bias2_kind) {
  ir::Model m = test::opset13_model("biased", {test::vinfo("x", {-1, 5, 6})}, {test::vinfo("y", {-1, 5, 3})});
  ir::Graph& g = m.graph;
  g.initializers["w1"] = test::floats("w1", {6, 4}, random_values(24, 18));
  g.initializers["b1"] = test::floats("b1", {4}, random_values(4, 19));
  g.initializers["w2"] = test::floats("w2", {4, 3}, random_values(12, 20));
  g.nodes.push_back(test::node("mm1", "MatMul", {"x", "w1"}, {"h0"}, 13));
  g.nodes.push_back(test::node("add1", "Add", {"h0", "b1"}, {"h1"}, 13));
  g.nodes.push_back(test::node("relu", "Relu", {"h1"}, {"h"}, 13));
  g.nodes.push_back(test::node("mm2", "MatMul", {"h", "w2"}, {"z"}, 13));
  if (bias2_kind == "input") {  // a bias fed as data, not a parameter
    g.inputs.push_back(test::vinfo("b2", {3}));
  } else if (bias2_kind == "2d") {  // [1, 3]: broadcast, but not a row of N
    g.initializers["b2"] = test::floats("b2", {1, 3}, random_values(3, 21));
  } else {
    g.initializers["b2"] = test::floats("b2", {3}, random_values(3, 21));
  }
  g.nodes.push_back(test::node("add2", "Add", {"b2", "z"}, {"y"}, 13));
  if (bias2_kind == "shared") g.outputs.push_back(test::vinfo("z", {-1, 5, 3}));  // the product is read outside
  return m;
}


}  // namespace

TEST_CASE("graphs: a MatMul and its bias Add run as one step, with the values, gradients and layers of two") {
  const ir::Model m = biased("bias");
  const Trained fused = run_graph(m, true, 2, 22), apart = run_graph(m, false, 2, 22);
  CHECK(apart.steps.size() == 5);
  CHECK(fused.steps.size() == 3);
  CHECK(fused.layer_nodes == apart.layer_nodes);
  CHECK(fused.layer_nodes == std::vector<std::vector<std::string>>{{"mm1", "add1", "relu"}, {"mm2", "add2"}});
  check_close(fused.y, apart.y);
  REQUIRE(fused.grads.size() == 4);
  for (const auto& [name, g] : apart.grads) {
    INFO(name);
    REQUIRE(fused.grads.count(name));
    check_close(fused.grads.at(name), g);
  }
  rt::GraphOptions o;
  o.batch_size = 1;
  rt::ExecutionGraph g(m, o);
  REQUIRE(g.steps().size() == 3);
  CHECK(g.steps()[0].node->name == "mm1");
  CHECK(g.steps()[0].merged->name == "add1");
  CHECK(g.value_name(g.steps()[0].outputs[0]) == "h1");
  CHECK(g.steps()[2].merged->name == "add2");
}

TEST_CASE("graphs: an Add of data, of a [1, N] tensor or of a product read elsewhere stays a step") {
  for (const char* kind : {"input", "2d", "shared"}) {
    INFO(kind);
    const ir::Model m = biased(kind);
    const Trained fused = run_graph(m, true, 2, 22), apart = run_graph(m, false, 2, 22);
    CHECK(fused.steps.size() == 4);  // only the first layer's bias is fused
    CHECK(apart.steps.size() == 5);
    check_close(fused.y, apart.y);
    for (const auto& [name, g] : apart.grads) check_close(fused.grads.at(name), g);
  }
}
