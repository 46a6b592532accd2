// Transposes folded into the MatMul that reads or writes them (runtime/graph_fuse.cpp,
// runtime/ops/mat_mul.cpp, runtime/ops/mat_mul_layout.h): the op against a MatMul on the
// transposed copies (Y and dA the same products, dW the transpose of dB up to the order
// of the sums; attention's [1, 2, 0] keys, [1, 0, 2] values and merged heads; broadcast
// batches), and graphs planned with and without fusing: the same values, gradients and
// layers, fewer steps; a Transpose read elsewhere too stays a step.
#include <doctest/doctest.h>

#include <map>

#include "converter/errors.h"
#include "runtime/attrs.h"
#include "runtime/graph.h"
#include "runtime/ops/fused.h"
#include "runtime/ops/shape_util.h"
#include "tests/unit/op_harness.h"
#include "tests/unit/parallel_test_util.h"
#include "tests/unit/fuse_fixtures.h"
#include "tests/unit/transform_fixtures.h"

using namespace dl;
using dl::rt::Tensor;
using dl::test::check_close;
using dl::test::OpRun;
using dl::test::run_graph;
using dl::test::Trained;
using dl::test::random_values;

namespace {

Tensor transposed(const Tensor& w) {
  const int64_t r = w.dim(0), c = w.dim(1);
  std::vector<float> v(size_t(r * c));
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) v[size_t(j * r + i)] = w.fvec()[size_t(i * c + j)];
  return Tensor::floats({c, r}, v);
}

}  // namespace

TEST_CASE("MatMul reading W transposed: Y and dA as MatMul(A, W^T), dW the transpose of its dB") {
  struct Case {
    rt::Shape a;
    int64_t n;
    bool bias;
  };
  // Folded batches (one large enough to wake a helper), a 2-D A, a 1-D A; with and without a bias.
  const std::vector<Case> cases = {{{2, 150, 64}, 200, false}, {{4, 64, 128}, 512, true}, {{7, 5}, 3, true},
                                   {{5}, 4, false}};
  for (const Case& c : cases) {
    const int64_t k = c.a.back();
    INFO("A " << rt::shape_str(c.a) << " W [" << c.n << ", " << k << "] bias " << c.bias);
    const Tensor a = Tensor::floats(c.a, random_values(rt::shape_numel(c.a), 31)),
                 w = Tensor::floats({c.n, k}, random_values(c.n * k, 32)),
                 bias = Tensor::floats({c.n}, random_values(c.n, 33));
    std::map<int, std::vector<std::vector<float>>> by_threads;
    test::on_two_then_one([&](int threads) {
      ir::Node node = rt::sample_node("MatMul", c.bias ? 3 : 2, 1, {}, 13);
      std::vector<Tensor> in = {a, w};
      if (c.bias) in.push_back(bias);
      rt::MatMulFusion f;
      f.bias_add = c.bias ? "add" : "";
      f.transpose_b = "tr";
      f.perm_b = {1, 0};
      OpRun fused(rt::make_mat_mul_fused(node, f), in, 1, true);
      const std::string bias_text = c.bias ? ", adds the bias of 'add'" : "";
      CHECK(fused.op->describe() == "reads B in place of 'tr'" + bias_text + " in the same step");
      ir::Node plain = rt::sample_node("MatMul", 2, 1, {}, 13);
      OpRun product(plain, {a, transposed(w)}, true);
      fused.forward();
      product.forward();
      const std::vector<float> got = fused.outputs[0].fvec();
      std::vector<float> want = product.outputs[0].fvec();
      if (c.bias)
        for (size_t i = 0; i < want.size(); ++i) want[i] += bias.fvec()[i % size_t(c.n)];
      CHECK(fused.outputs[0].shape() == product.outputs[0].shape());
      check_close(got, want);
      const Tensor g = Tensor::floats(fused.outputs[0].shape(), random_values(int64_t(got.size()), 34));
      const std::vector<bool> wanted(in.size(), true);
      const std::vector<Tensor> d = fused.backward({&g}, wanted, (1u << in.size()) - 1);  // (assigned onto NaN)
      const std::vector<Tensor> dp = product.backward({&g}, {true, true}, 3u);
      check_close(d[0].fvec(), dp[0].fvec());
      CHECK(d[1].shape() == w.shape());
      check_close(d[1].fvec(), transposed(dp[1]).fvec());
      by_threads[threads] = {got, d[0].fvec(), d[1].fvec()};
    });
    CHECK(by_threads[2] == by_threads[1]);
  }
}

namespace {

// t permuted: output axis k is t's axis perm[k] (as the Transpose op).
Tensor permute(const Tensor& t, const std::vector<int64_t>& perm) {
  const rt::Shape& s = t.shape();
  const size_t r = s.size();
  rt::Shape out(r);
  for (size_t k = 0; k < r; ++k) out[k] = s[size_t(perm[k])];
  std::vector<int64_t> st(r, 1);
  for (size_t d = r; d-- > 1;) st[d - 1] = st[d] * s[d];
  std::vector<float> v(size_t(t.numel()));
  std::vector<int64_t> idx(r, 0);
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t off = 0;
    for (size_t k = 0; k < r; ++k) off += idx[k] * st[size_t(perm[k])];
    v[i] = t.fvec()[size_t(off)];
    for (size_t k = r; k-- > 0;)
      if (++idx[k] < out[k]) break;
      else idx[k] = 0;
  }
  return Tensor::floats(out, v);
}

std::vector<int64_t> inverse(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) inv[size_t(perm[k])] = int64_t(k);
  return inv;
}

}  // namespace

TEST_CASE("MatMul reading A or B and writing Y in place of Transposes: as the copies, at any thread count") {
  struct Case {
    rt::Shape xa, xb;
    std::vector<int64_t> pa, pb, py;  // empty: not folded
  };
  const std::vector<Case> cases = {
      {{6, 4, 5}, {4, 5, 3}, {1, 0, 2}, {}, {1, 0, 2}},          // A row-major at a stride, Y's heads merged back
      {{4, 7, 5}, {6, 4, 5}, {}, {1, 2, 0}, {}},                  // attention's keys: B stored transposed
      {{3, 5, 7}, {5, 2}, {0, 2, 1}, {}, {}},                     // A stored transposed, B without batches
      {{2, 1, 4, 3}, {5, 4, 6}, {0, 1, 3, 2}, {}, {1, 0, 2, 3}},  // broadcast batches
      {{64, 64, 32}, {64, 64, 32}, {1, 0, 2}, {1, 2, 0}, {1, 0, 2}},  // a whole attention product: helpers wake
      {{64, 64, 64}, {64, 64, 32}, {}, {1, 0, 2}, {1, 0, 2}}};  // attention's values and merged heads
  for (const Case& c : cases) {
    INFO("A " << rt::shape_str(c.xa) << " B " << rt::shape_str(c.xb) << " perms " << rt::shape_str(c.pa) << " "
              << rt::shape_str(c.pb) << " " << rt::shape_str(c.py));
    const Tensor xa = Tensor::floats(c.xa, random_values(rt::shape_numel(c.xa), 41)),
                 xb = Tensor::floats(c.xb, random_values(rt::shape_numel(c.xb), 42));
    const Tensor a = c.pa.empty() ? xa : permute(xa, c.pa), b = c.pb.empty() ? xb : permute(xb, c.pb);
    std::map<int, std::vector<std::vector<float>>> by_threads;
    test::on_two_then_one([&](int threads) {
      rt::MatMulFusion f;
      f.perm_a = c.pa, f.perm_b = c.pb, f.perm_y = c.py;
      f.transpose_a = c.pa.empty() ? "" : "ta";
      f.transpose_b = c.pb.empty() ? "" : "tb";
      f.transpose_y = c.py.empty() ? "" : "ty";
      OpRun fused(rt::make_mat_mul_fused(rt::sample_node("MatMul", 2, 1, {}, 13), f), {xa, xb}, 1, true);
      OpRun product(rt::sample_node("MatMul", 2, 1, {}, 13), {a, b}, true);
      fused.forward();
      product.forward();
      const Tensor want = c.py.empty() ? product.outputs[0] : permute(product.outputs[0], c.py);
      CHECK(fused.outputs[0].shape() == want.shape());
      check_close(fused.outputs[0].fvec(), want.fvec());
      const Tensor gz = Tensor::floats(want.shape(), random_values(want.numel(), 43));
      const Tensor gy = c.py.empty() ? gz : permute(gz, inverse(c.py));
      const std::vector<Tensor> d = fused.backward({&gz}, {true, true}, 3u);  // (assigned onto NaN)
      const std::vector<Tensor> dp = product.backward({&gy}, {true, true}, 3u);
      check_close(d[0].fvec(), (c.pa.empty() ? dp[0] : permute(dp[0], inverse(c.pa))).fvec());
      check_close(d[1].fvec(), (c.pb.empty() ? dp[1] : permute(dp[1], inverse(c.pb))).fvec());
      by_threads[threads] = {fused.outputs[0].fvec(), d[0].fvec(), d[1].fvec()};
    });
    CHECK(by_threads[2] == by_threads[1]);
  }
}

TEST_CASE("MatMul writing Y in place of a Transpose charges its block of products to the budget, refused over the cap") {
  rt::MatMulFusion f;
  f.perm_y = {1, 0, 2};
  f.transpose_y = "ty";
  const ir::Node node = rt::sample_node("MatMul", 2, 1, {}, 13);
  Tensor a = Tensor::floats({8, 4, 5}, random_values(160, 51)), b = Tensor::floats({8, 5, 3}, random_values(120, 52));
  const int64_t block = 8 * 4 * 3 * int64_t(sizeof(float));  // every product's Y, contiguous
  const auto plan = [&](int64_t cap) {
    std::unique_ptr<rt::Op> op = rt::make_mat_mul_fused(node, f);
    rt::InferCtx ic;
    ic.in = {&a, &b};
    ic.known = {false, false};
    ic.param = {false, false};
    Tensor out;
    ic.out = {&out};
    ic.out_known = {false};
    ic.max_bytes = cap;
    int64_t charged = 0;
    ic.charge_buffer = [&](int64_t bytes, const std::string&) { charged += bytes; };
    op->infer(ic);
    CHECK(out.shape() == rt::Shape{4, 8, 3});
    return charged;
  };
  CHECK(plan(int64_t(1) << 20) == block);
  CHECK_THROWS_AS(plan(block - 1), ResourceError);
}

TEST_CASE("MatMul reading an operand in place: a permutation that moves the last axis out of the matrix is refused") {
  ir::Node node = rt::sample_node("MatMul", 2, 1, {}, 13);
  rt::MatMulFusion f;
  f.transpose_b = "tr";
  f.perm_b = {2, 0, 1};
  CHECK_THROWS_WITH_AS(OpRun(rt::make_mat_mul_fused(node, f),
                             {Tensor::floats({2, 3}, random_values(6, 35)), Tensor::floats({2, 4, 3}, random_values(24, 36))},
                             1, true),
                       doctest::Contains("the input of 'tr' [2, 4, 3] cannot be read in place as permuted by [2, 0, 1]"),
                       dl::ShapeError);
}

namespace {

// x [N, 5, 6] -> MatMul(x, Transpose(W [4, 6])) + b -> Relu -> y; `kind` varies the Transpose.
ir::Model linear(const std::string& kind) {
  ir::Model m = test::opset13_model("linear", {test::vinfo("x", {-1, 5, 6})}, {test::vinfo("y", {-1, 5, 4})});
  ir::Graph& g = m.graph;
  g.initializers["w"] = test::floats("w", {4, 6}, random_values(24, 37));
  g.initializers["b"] = test::floats("b", {4}, random_values(4, 38));
  ir::Node tr = test::node("tr", "Transpose", {"w"}, {"wt"}, 13);
  if (kind == "perm") tr.attrs["perm"] = rt::attr_ints({1, 0});
  if (kind == "data") {  // a matrix fed as data, not a parameter
    g.initializers.erase("w");
    g.inputs.push_back(test::vinfo("w", {4, 6}));
  }
  g.nodes.push_back(tr);
  g.nodes.push_back(test::node("mm", "MatMul", {"x", "wt"}, {"h0"}, 13));
  g.nodes.push_back(test::node("add", "Add", {"h0", "b"}, {"h"}, 13));
  g.nodes.push_back(test::node("relu", "Relu", {"h"}, {"y"}, 13));
  if (kind == "shared") g.outputs.push_back(test::vinfo("wt", {6, 4}));  // W^T read outside
  return m;
}


}  // namespace

TEST_CASE("graphs: a weight's Transpose, its MatMul and the bias Add run as one step, with the values of three") {
  for (const std::string kind : {"default", "perm"}) {
    INFO(kind);
    const ir::Model m = linear(kind);
    const Trained fused = run_graph(m, true, 3, 39), apart = run_graph(m, false, 3, 39);
    CHECK(apart.steps == std::vector<std::string>{"tr", "mm", "add", "relu"});
    CHECK(fused.steps == std::vector<std::string>{"mm", "relu"});
    CHECK(fused.layer_nodes == apart.layer_nodes);
    CHECK(fused.layer_nodes == std::vector<std::vector<std::string>>{{"tr", "mm", "add", "relu"}});
    check_close(fused.y, apart.y);
    REQUIRE(fused.grads.size() == 2);
    for (const auto& [name, g] : apart.grads) {
      INFO(name);
      REQUIRE(fused.grads.count(name));
      check_close(fused.grads.at(name), g);
    }
  }
  rt::GraphOptions o;
  o.batch_size = 1;
  rt::ExecutionGraph g(linear("default"), o);
  REQUIRE(g.steps().size() == 2);
  REQUIRE(g.steps()[0].merged_before.size() == 1);
  CHECK(g.steps()[0].merged_before[0]->name == "tr");
  CHECK(g.steps()[0].merged->name == "add");
  CHECK(g.value_name(g.steps()[0].inputs[1]) == "w");
}

TEST_CASE("graphs: a Transpose of data is read in place too; one read elsewhere stays a step") {
  for (const std::string kind : {"data", "shared"}) {
    INFO(kind);
    const ir::Model m = linear(kind);
    const Trained fused = run_graph(m, true, 3, 39), apart = run_graph(m, false, 3, 39);
    // (With W as data, b is no layer's bias (runtime/param_roles.cpp): a constant, its Add a step.)
    const std::vector<std::string> want =
        kind == "data" ? std::vector<std::string>{"mm", "add", "relu"} : std::vector<std::string>{"tr", "mm", "relu"};
    CHECK(fused.steps == want);
    check_close(fused.y, apart.y);
    for (const auto& [name, g] : apart.grads) check_close(fused.grads.at(name), g);
  }
}

namespace {

// x [N, 6, 4] -> a = x Wq, b = x Wk -> s = a Transpose(b, [0, 2, 1]) -> y = Transpose(s,
// [1, 0, 2]) [6, N, 6]: one head's scores, their rows merged back.
ir::Model one_head() {
  ir::Model m = test::opset13_model("one_head", {test::vinfo("x", {-1, 6, 4})}, {test::vinfo("y", {6, -1, 6})});
  ir::Graph& g = m.graph;
  g.initializers["wq"] = test::floats("wq", {4, 4}, random_values(16, 44));
  g.initializers["wk"] = test::floats("wk", {4, 4}, random_values(16, 45));
  g.nodes.push_back(test::node("q", "MatMul", {"x", "wq"}, {"a"}, 13));
  g.nodes.push_back(test::node("k", "MatMul", {"x", "wk"}, {"b"}, 13));
  ir::Node kt = test::node("kt", "Transpose", {"b"}, {"bt"}, 13);
  kt.attrs["perm"] = rt::attr_ints({0, 2, 1});
  g.nodes.push_back(kt);
  g.nodes.push_back(test::node("scores", "MatMul", {"a", "bt"}, {"s"}, 13));
  ir::Node merge = test::node("merge", "Transpose", {"s"}, {"y"}, 13);
  merge.attrs["perm"] = rt::attr_ints({1, 0, 2});
  g.nodes.push_back(merge);
  return m;
}

}  // namespace

TEST_CASE("graphs: what is folded does not depend on the batch size (the probes index the steps)") {
  const ir::Model m = one_head();
  const Trained one = run_graph(m, true, 1, 46), three = run_graph(m, true, 3, 46);
  CHECK(one.steps == three.steps);
  CHECK(three.steps == std::vector<std::string>{"q", "k", "scores"});
  const Trained apart = run_graph(m, false, 3, 46);
  check_close(three.y, apart.y);
  for (const auto& [name, g] : apart.grads) check_close(three.grads.at(name), g);
}

TEST_CASE("graphs: MatMul(X, X) and MatMul(X, X^T) add both gradients into X's, the same at any thread count") {
  // X = x W (W a parameter, x [N, 64, 64]), then X X or X Transpose(X): X's gradient takes
  // dA and dB from one step (a Transpose of X is not folded there: the step would read X twice).
  for (const std::string kind : {"xx", "xxt"}) {
    INFO(kind);
    ir::Model m = test::opset13_model("self_product", {test::vinfo("x", {-1, 64, 64})}, {test::vinfo("y", {-1, 64, 64})});
    ir::Graph& g = m.graph;
    g.initializers["w"] = test::floats("w", {64, 64}, random_values(4096, 47));
    g.nodes.push_back(test::node("proj", "MatMul", {"x", "w"}, {"h"}, 13));
    std::string rhs = "h";
    if (kind == "xxt") {
      ir::Node t = test::node("t", "Transpose", {"h"}, {"ht"}, 13);
      t.attrs["perm"] = rt::attr_ints({0, 2, 1});
      g.nodes.push_back(t);
      rhs = "ht";
    }
    g.nodes.push_back(test::node("mm", "MatMul", {"h", rhs}, {"y"}, 13));
    std::map<int, Trained> by_threads;
    test::on_two_then_one([&](int threads) { by_threads[threads] = run_graph(m, true, 16, 48); });
    REQUIRE(by_threads[1].grads.count("w"));
    CHECK(by_threads[2].grads.at("w") == by_threads[1].grads.at("w"));
    CHECK(by_threads[2].y == by_threads[1].y);
    if (kind == "xxt") CHECK(by_threads[1].steps == std::vector<std::string>{"proj", "t", "mm"});
    check_close(by_threads[1].grads.at("w"), run_graph(m, false, 16, 48).grads.at("w"));
  }
}
