// Steps that only re-view their input (Op::views_input) planned as views of it
// (runtime/graph_views.cpp): the graph with views against the same graph with copies gives
// the same outputs and gradients, bit for bit, in less memory; which steps become views,
// forward only or with their gradients, and which stay copies; Tensor's view semantics.
#include <doctest/doctest.h>

#include <cstring>

#include "converter/errors.h"
#include "runtime/attrs.h"
#include "runtime/graph.h"
#include "tests/unit/fuse_fixtures.h"
#include "tests/unit/op_harness.h"
#include "tests/unit/transform_fixtures.h"

using namespace dl;
using dl::rt::Tensor;
using dl::test::random_values;
using dl::test::Trained;

namespace {

// The same bits (a copy is exact: no tolerance).
void check_same(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
}

ir::TensorData int64s(const std::string& name, std::vector<int64_t> dims, std::vector<int64_t> v) {
  ir::TensorData t;
  t.name = name;
  t.dtype = ir::DType::kInt64;
  t.dims = std::move(dims);
  t.ints = std::move(v);
  return t;
}

ir::TensorData scalar(const std::string& name, ir::DType dtype, double v) {
  ir::TensorData t;
  t.name = name;
  t.dtype = dtype;
  if (dtype == ir::DType::kFloat32) t.floats = {float(v)};
  else t.ints = {int64_t(v)};
  return t;
}

// x [N, 4, 6] -> MatMul w1 -> h [N, 4, 8] -> Reshape [-1, 32] -> r -> Dropout (ratio
// `ratio`, training, its mask unread) -> d -> Relu -> a -> Identity -> i -> Unsqueeze [1]
// -> u [N, 1, 32] -> Flatten -> f -> Add(f, r) -> s -> MatMul w2 -> y [N, 3] (output 0)
// -> Reshape [-1] -> z (output 1).
// r is read twice (the Dropout, the Add): its gradient is theirs added, so the Dropout's
// output may view it but not its gradient; y is an output (the loss writes its gradient):
// z views it, forward only.
ir::Model chain(float ratio) {
  ir::Model m = test::opset13_model("views", {test::vinfo("x", {-1, 4, 6})},
                                    {test::vinfo("y", {-1, 3}), test::vinfo("z", {-1})});
  ir::Graph& g = m.graph;
  g.initializers["w1"] = test::floats("w1", {6, 8}, random_values(48, 81));
  g.initializers["w2"] = test::floats("w2", {32, 3}, random_values(96, 82));
  g.initializers["shape_r"] = int64s("shape_r", {2}, {-1, 32});
  g.initializers["shape_z"] = int64s("shape_z", {1}, {-1});
  g.initializers["axes"] = int64s("axes", {1}, {1});
  g.initializers["ratio"] = scalar("ratio", ir::DType::kFloat32, ratio);
  g.initializers["train"] = scalar("train", ir::DType::kBool, 1);
  g.nodes.push_back(test::node("mm1", "MatMul", {"x", "w1"}, {"h"}, 13));
  g.nodes.push_back(test::node("reshape", "Reshape", {"h", "shape_r"}, {"r"}, 13));
  g.nodes.push_back(test::node("drop", "Dropout", {"r", "ratio", "train"}, {"d", "mask"}, 13));
  g.nodes.push_back(test::node("relu", "Relu", {"d"}, {"a"}, 13));
  g.nodes.push_back(test::node("id", "Identity", {"a"}, {"i"}, 13));
  g.nodes.push_back(test::node("unsq", "Unsqueeze", {"i", "axes"}, {"u"}, 13));
  g.nodes.push_back(test::node("flat", "Flatten", {"u"}, {"f"}, 13));
  g.nodes.push_back(test::node("add", "Add", {"f", "r"}, {"s"}, 13));
  g.nodes.push_back(test::node("mm2", "MatMul", {"s", "w2"}, {"y"}, 13));
  g.nodes.push_back(test::node("flat_out", "Reshape", {"y", "shape_z"}, {"z"}, 13));
  return m;
}

// chain()'s steps (mm1, reshape, drop, relu, id, unsq, flat, add, mm2, flat_out): whether
// each is a view, and whether its input's gradient is a view of its output's.
std::vector<std::pair<bool, bool>> chain_views() {
  return {{false, false}, {true, true}, {true, false}, {false, false}, {true, true},
          {true, true},   {true, true}, {false, false}, {false, false}, {true, false}};
}

// Two passes: a view's gradient must be zeroed, or written whole, again in the second.
Trained run(const ir::Model& m, bool views, int64_t batch, int passes = 2) {
  rt::GraphOptions o;
  o.batch_size = batch;
  o.views = views;
  return test::run_planned(m, o, 83, passes);
}

// x [N, 4, 6] -> MatMul w1 -> h [N, 4, 8] -> Reshape [-1, 4, 2, 4] -> r -> Transpose [0, 2,
// 1, 3] -> t [N, 2, 4, 4]; y = MatMul(z, t) [N, 2, 5, 4] for a second input z [N, 2, 5, 4]
// (attention's values, split into heads: the planner folds the Transpose into the batched
// MatMul, which then reads the view r, and writes its gradient, at the strides of the
// permutation).
ir::Model heads() {
  ir::Model m = test::opset13_model("heads", {test::vinfo("x", {-1, 4, 6}), test::vinfo("z", {-1, 2, 5, 4})},
                                    {test::vinfo("y", {-1, 2, 5, 4})});
  ir::Graph& g = m.graph;
  g.initializers["w1"] = test::floats("w1", {6, 8}, random_values(48, 84));
  g.initializers["shape"] = int64s("shape", {4}, {-1, 4, 2, 4});
  g.nodes.push_back(test::node("mm1", "MatMul", {"x", "w1"}, {"h"}, 13));
  g.nodes.push_back(test::node("split", "Reshape", {"h", "shape"}, {"r"}, 13));
  ir::Node tr = test::node("tr", "Transpose", {"r"}, {"t"}, 13);
  tr.attrs["perm"] = test::ints_attr({0, 2, 1, 3});
  g.nodes.push_back(tr);
  g.nodes.push_back(test::node("mix", "MatMul", {"z", "t"}, {"y"}, 13));
  return m;
}

// x [N, 4, 6] -> MatMul w1 -> h [N, 4, 8] -> Dropout (opset 10, ratio attribute 0) -> d ->
// Relu -> a -> Reshape [-1, 32] -> y, an output: the loss writes y's gradient, which a's
// gradient views (and h's views d's).
ir::Model dropout10() {
  ir::Model m = test::opset13_model("dropout10", {test::vinfo("x", {-1, 4, 6})}, {test::vinfo("y", {-1, 32})});
  m.opset = m.original_opset = 10;
  ir::Graph& g = m.graph;
  g.initializers["w1"] = test::floats("w1", {6, 8}, random_values(48, 86));
  g.initializers["shape"] = int64s("shape", {2}, {-1, 32});
  g.nodes.push_back(test::node("mm1", "MatMul", {"x", "w1"}, {"h"}, 9));
  ir::Node drop = test::node("drop", "Dropout", {"h"}, {"d"}, 10);
  drop.attrs["ratio"] = rt::attr_f(0.0f);
  g.nodes.push_back(drop);
  g.nodes.push_back(test::node("relu", "Relu", {"d"}, {"a"}, 6));
  g.nodes.push_back(test::node("flat", "Reshape", {"a", "shape"}, {"y"}, 5));
  return m;
}

void check_same_run(const Trained& got, const Trained& want) {
  REQUIRE(got.steps == want.steps);
  check_same(got.y, want.y);
  REQUIRE(got.grads.size() == want.grads.size());
  for (const auto& [name, g] : want.grads) {
    INFO(name);
    REQUIRE(got.grads.count(name));
    check_same(got.grads.at(name), g);
  }
}

}  // namespace

TEST_CASE("graph views: re-viewing steps share their input's storage; outputs and gradients the same bits") {
  for (const int64_t batch : {int64_t(1), int64_t(5)}) {
    INFO("batch " << batch);
    const ir::Model m = chain(0.0f);
    const Trained viewed = run(m, true, batch), copied = run(m, false, batch);
    check_same_run(viewed, copied);  // the steps stay (their layers and probes too)
    CHECK(viewed.layer_nodes == copied.layer_nodes);
    REQUIRE(viewed.more_outputs.size() == 1);
    check_same(viewed.more_outputs[0], copied.more_outputs[0]);
    REQUIRE(viewed.grads.size() == 2);
    CHECK(viewed.views == chain_views());
    for (const auto& v : copied.views) CHECK(v == std::pair<bool, bool>{false, false});
    // No buffers for r, d, i, u and f (N x 32 floats each) and z (N x 3), nor for the
    // gradients of h, a, i and u (N x 32 each), nor for the Dropout's unread mask (N x 32
    // bools, 8 bytes each).
    const int64_t saved = (5 * 32 + 3 + 4 * 32) * batch * int64_t(sizeof(float)) + 32 * batch * 8;
    CHECK(copied.planned_bytes - viewed.planned_bytes == saved);
  }
}

TEST_CASE("graph views: a Dropout that may drop, or whose mask is read, and a parameter's Reshape stay copies") {
  // A ratio of 0.5: the output is not its input in training.
  const Trained dropping = run(chain(0.5f), true, 3);
  CHECK(dropping.views[2] == std::pair<bool, bool>{false, false});
  check_same_run(dropping, run(chain(0.5f), false, 3));  // (the same random stream: the same mask)

  // A ratio of 0 whose mask is a graph output: skipping the op would leave it unwritten.
  ir::Model masked = chain(0.0f);
  masked.graph.outputs.push_back(test::vinfo("mask", {-1, 32}));
  masked.graph.outputs.back().dtype = ir::DType::kBool;
  rt::GraphOptions o;
  o.batch_size = 2;
  rt::ExecutionGraph g(masked, o);
  CHECK_FALSE(g.steps()[2].view);

  // A Reshape of a weight: the store's storage, shared with other graphs, stays its own.
  ir::Model weight = chain(0.0f);
  weight.graph.initializers["w2flat"] = int64s("w2flat", {2}, {32, 3});
  weight.graph.nodes.insert(weight.graph.nodes.end() - 2,
                            test::node("w2view", "Reshape", {"w2", "w2flat"}, {"w2r"}, 13));
  weight.graph.nodes[weight.graph.nodes.size() - 2].inputs[1] = "w2r";
  o.training = true;
  rt::ExecutionGraph wg(weight, o);
  bool found = false;
  for (const rt::Step& st : wg.steps())
    if (st.node->name == "w2view") {
      found = true;
      CHECK_FALSE(st.view);
    }
  CHECK(found);
  const Trained wv = run(weight, true, 2), wc = run(weight, false, 2);
  check_same_run(wv, wc);
}

TEST_CASE("Dropout views its input only for a constant ratio of 0 (or is_test)") {
  auto dropout = [](int since, std::vector<std::string> in, std::map<std::string, ir::Attribute> attrs = {}) {
    ir::Node n = test::node("d", "Dropout", std::move(in), {"y"}, since);
    n.attrs = std::move(attrs);
    return n;
  };
  const Tensor x = Tensor::floats({4}, {1, 2, 3, 4});
  const Tensor zero = Tensor::floats({}, {0.0f}), half = Tensor::floats({}, {0.5f});
  CHECK(test::OpRun(dropout(13, {"x", "r"}), {x, zero}).op->views_input());
  CHECK_FALSE(test::OpRun(dropout(13, {"x", "r"}), {x, half}).op->views_input());
  CHECK_FALSE(test::OpRun(dropout(13, {"x"}), {x}).op->views_input());  // the default ratio, 0.5
  CHECK(test::OpRun(dropout(10, {"x"}, {{"ratio", rt::attr_f(0.0f)}}), {x}).op->views_input());
  CHECK(test::OpRun(dropout(6, {"x"}, {{"is_test", test::attr_i(1)}}), {x}).op->views_input());
  // A ratio that is not a plan-time constant (a graph input): not known to be 0.
  test::OpRun unknown(dropout(13, {"x", "r"}), {x, zero});
  rt::InferCtx ic;
  ic.in = {&unknown.inputs[0], &unknown.inputs[1]};
  ic.known = {true, false};
  Tensor y;
  ic.out = {&y};
  ic.out_known = {false};
  unknown.op->infer(ic);
  CHECK_FALSE(unknown.op->views_input());
}

TEST_CASE("Tensor views: read and write the owner's values; copies own theirs; planning drops the view") {
  Tensor owner = Tensor::floats({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor view, second;
  view.plan(rt::DType::kFloat32, {6});
  view.view_of(owner);
  second.plan(rt::DType::kFloat32, {3, 2});
  second.view_of(view);  // a view of a view reads the owner's
  CHECK(view.is_view());
  CHECK(view.allocated());
  CHECK(view.f() == owner.f());
  CHECK(second.f() == owner.f());
  CHECK(second.shape() == rt::Shape{3, 2});
  second.f()[4] = 50;
  CHECK(owner.f()[4] == 50);
  CHECK(view.at(4) == 50);
  const Tensor copy = second;  // a copy holds its own values, under the view's shape
  CHECK_FALSE(copy.is_view());
  CHECK(copy.shape() == rt::Shape{3, 2});
  CHECK(copy.f() != owner.f());
  CHECK(std::vector<float>(copy.f(), copy.f() + 6) == std::vector<float>{1, 2, 3, 4, 50, 6});
  Tensor moved = std::move(view);
  CHECK_FALSE(moved.is_view());
  CHECK(moved.f()[4] == 50);
  second.zero();
  CHECK(owner.f()[0] == 0);
  CHECK(owner.f()[5] == 0);
  second.plan(rt::DType::kFloat32, {6});
  CHECK_FALSE(second.is_view());
  CHECK_FALSE(second.allocated());
  Tensor ints = Tensor::ints({6}, {1, 2, 3, 4, 5, 6}), wrong;
  wrong.plan(rt::DType::kFloat32, {5});
  CHECK_THROWS_AS(wrong.view_of(owner), dl::InternalError);  // 5 values cannot view 6
  wrong.plan(rt::DType::kFloat32, {6});
  CHECK_THROWS_AS(wrong.view_of(ints), dl::InternalError);   // nor int64 ones
}

TEST_CASE("graph views: a view read by a fused MatMul, an output's gradient viewed, an opset-10 Dropout, inference") {
  for (const bool fuse : {true, false}) {
    INFO("fuse " << fuse);
    rt::GraphOptions o;
    o.batch_size = 3;
    o.fuse = fuse;
    o.views = true;
    const Trained viewed = test::run_planned(heads(), o, 87, 2);
    o.views = false;
    const Trained copied = test::run_planned(heads(), o, 87, 2);
    check_same_run(viewed, copied);
    CHECK(viewed.steps == (fuse ? std::vector<std::string>{"mm1", "split", "mix"}
                                : std::vector<std::string>{"mm1", "split", "tr", "mix"}));
    CHECK(viewed.views[1] == std::pair<bool, bool>{true, true});  // split: h's gradient is r's
  }
  const Trained viewed = run(dropout10(), true, 3), copied = run(dropout10(), false, 3);
  check_same_run(viewed, copied);
  using V = std::pair<bool, bool>;
  CHECK(viewed.views == std::vector<V>{{false, false}, {true, true}, {false, false}, {true, true}});
  // An inference graph: its gradients, views included, are allocated by output_grad().
  rt::GraphOptions inference;
  inference.batch_size = 2;
  inference.training = false;
  const Trained iv = test::run_planned(chain(0.0f), inference, 88, 0);
  inference.views = false;
  const Trained ic = test::run_planned(chain(0.0f), inference, 88, 0);
  check_same_run(iv, ic);
  CHECK(iv.views == chain_views());
  check_same(iv.more_outputs.at(0), ic.more_outputs.at(0));
}
