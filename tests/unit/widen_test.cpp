// The width repair (analysis/repair_list.def `width`, converter/widen.h, cli/repairs/width.cpp):
// a dense hidden layer and the layer it feeds get more units / inputs, the steps between
// them their per-unit constants padded with identity values, and propose_fixes offers it
// for a layer narrower than what follows it (a one-unit bottleneck), nowhere else.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "analysis/fixes.h"
#include "cli/fix_trials.h"
#include "converter/errors.h"
#include "converter/widen.h"
#include "fixes_test_util.h"
#include "runtime/param_roles.h"
#include "tests/unit/transform_fixtures.h"
#include "trace_builder.h"

using namespace dl;
using Kind = an::FixAction::Kind;
using test::fixes::action;

namespace {

// x[N, 2] -> fc1 (Gemm, 1 unit) -> BatchNormalization -> Relu -> Dropout -> fc2 (Gemm, 3 units).
ir::Model narrow_mlp() {
  ir::Model m = test::mlp();
  ir::Graph& g = m.graph;
  g.outputs = {test::vinfo("y", {-1, 3})};
  g.initializers["W1"] = test::floats("W1", {1, 2}, {0.5f, -0.25f});
  g.initializers["b1"] = test::floats("b1", {1}, {0.1f});
  g.initializers["W2"] = test::floats("W2", {3, 1}, {1, 2, 3});
  g.initializers["b2"] = test::floats("b2", {3}, {0, 0, 0});
  for (const char* s : {"s", "B", "mean", "var"}) g.initializers[s] = test::floats(s, {1}, {0.5f});
  g.initializers["ratio"] = test::floats("ratio", {}, {0.2f});
  g.value_info["h"] = test::vinfo("h", {-1, 1});
  g.nodes = {g.nodes[0], test::node("bn", "BatchNormalization", {"h", "s", "B", "mean", "var"}, {"hb"}, 15),
             test::node("relu", "Relu", {"hb"}, {"hr"}, 14), test::node("drop", "Dropout", {"hr", "ratio"}, {"hd"}, 13),
             g.nodes[1]};
  g.nodes.back().inputs[0] = "hd";
  return m;
}

an::Trace narrow_trace(const ir::Model& m) {
  an::Trace t;
  an::LayerInfo l0, l1;
  l0.index = 0, l0.nodes = {"fc1", "bn", "relu", "drop"}, l0.params = {"W1", "b1", "s", "B"}, l0.feeds = 1;
  l1.index = 1, l1.nodes = {"fc2"}, l1.params = {"W2", "b2"}, l1.feeds = an::LayerInfo::kNoChain;
  t.header.layers = {l0, l1};
  (void)m;
  return t;
}

cli::LoadedCase case_of(ir::Model m) {
  cli::LoadedCase c;
  c.config.loss = "mse";
  c.config.optimizer.name = "sgd";
  c.config.optimizer.learning_rate = 0.1;
  c.config.seed = 7;
  c.model = std::make_shared<ir::Model>(std::move(m));
  return c;
}

}  // namespace

TEST_CASE("widen: a dense layer, its per-unit steps and the next layer's inputs grow together") {
  ir::Model m = narrow_mlp();
  const conv::WidenEdit e = conv::widen_dense_layer(m, {"fc1", "bn", "relu", "drop"}, {"fc2"}, 4);
  CHECK(e.node == "fc1");
  CHECK(e.consumer == "fc2");
  CHECK(e.old_units == 1);
  CHECK(e.new_units == 4);
  CHECK(e.layer_params == std::vector<std::string>{"W1", "b1"});
  CHECK(e.consumer_weight == "W2");
  CHECK(e.per_unit == std::vector<std::string>{"s", "B", "mean", "var"});
  const auto& init = m.graph.initializers;
  CHECK(init.at("W1").dims == std::vector<int64_t>{4, 2});  // transB: [units, inputs]
  CHECK(init.at("W1").floats == std::vector<float>{0.5f, -0.25f, 0, 0, 0, 0, 0, 0});  // old row kept
  CHECK(init.at("b1").floats == std::vector<float>{0.1f, 0, 0, 0});
  CHECK(init.at("W2").dims == std::vector<int64_t>{3, 4});
  CHECK(init.at("W2").floats == std::vector<float>{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0});
  CHECK(init.at("s").floats == std::vector<float>{0.5f, 1, 1, 1});  // scale and variance pad with 1
  CHECK(init.at("var").floats == std::vector<float>{0.5f, 1, 1, 1});
  CHECK(init.at("B").floats == std::vector<float>{0.5f, 0, 0, 0});  // bias and mean with 0
  CHECK(init.at("ratio").floats == std::vector<float>{0.2f});       // a scalar stays
  CHECK(m.graph.value_info.count("h") == 0);                        // its declared width is stale
  CHECK(m.rewritten);
  // The widened graph runs, and its output keeps its shape.
  CHECK(test::run_random(m).size() == 2 * 3);
  CHECK_THROWS_WITH_AS(conv::widen_dense_layer(m, {"fc1"}, {"fc2"}, 4), doctest::Contains("asked for 4 units, but it has 4 already"),
                       ModelError);
}

TEST_CASE("widen: MatMul + Add, whose Add is the layer's bias") {
  ir::Model m = test::mlp();
  ir::Graph& g = m.graph;
  g.initializers["W1"] = test::floats("W1", {2, 1}, {1, 1});  // MatMul: [inputs, units]
  g.initializers["b1"] = test::floats("b1", {1}, {0.5f});
  g.initializers["W2"] = test::floats("W2", {1, 2}, {2, 3});
  g.nodes = {test::node("mm", "MatMul", {"x", "W1"}, {"p"}, 13), test::node("add", "Add", {"p", "b1"}, {"h"}, 14),
             test::node("mm2", "MatMul", {"h", "W2"}, {"y"}, 13)};
  const conv::WidenEdit e = conv::widen_dense_layer(m, {"mm", "add"}, {"mm2"}, 3);
  CHECK(e.layer_params == std::vector<std::string>{"W1", "b1"});
  CHECK(e.per_unit.empty());
  CHECK(g.initializers.at("W1").floats == std::vector<float>{1, 0, 0, 1, 0, 0});
  CHECK(g.initializers.at("W2").dims == std::vector<int64_t>{3, 2});
  CHECK(g.initializers.at("W2").floats == std::vector<float>{2, 3, 0, 0, 0, 0});
  CHECK(test::run_random(m).size() == 2 * 2);
}

TEST_CASE("widen: what cannot be widened is named") {
  {
    ir::Model m = narrow_mlp();  // a branch: the layer's values are read twice
    m.graph.nodes.insert(m.graph.nodes.begin() + 1, test::node("side", "Relu", {"h"}, {"side_out"}, 14));
    CHECK_THROWS_WITH_AS(conv::widen_dense_layer(m, {"fc1"}, {"fc2"}, 4), doctest::Contains("has 2 readers"),
                         ModelError);
  }
  {
    ir::Model m = narrow_mlp();  // a reshape in between is not element-wise
    m.graph.nodes[2].op_type = "Flatten";
    CHECK_THROWS_WITH_AS(conv::widen_dense_layer(m, {"fc1"}, {"fc2"}, 4),
                         doctest::Contains("'relu' (Flatten) stands between"), ModelError);
  }
  {
    ir::Model m = narrow_mlp();  // a tied weight
    m.graph.nodes.push_back(test::node("tie", "Identity", {"W2"}, {"W2_alias"}, 14));
    CHECK_THROWS_WITH_AS(conv::widen_dense_layer(m, {"fc1"}, {"fc2"}, 4), doctest::Contains("shared with other nodes"),
                         ModelError);
  }
  ir::Model m = narrow_mlp();
  CHECK_THROWS_WITH_AS(conv::widen_dense_layer(m, {"relu"}, {"fc2"}, 4), doctest::Contains("no dense node"), ModelError);
  CHECK_THROWS_WITH_AS(conv::widen_dense_layer(m, {"nope"}, {"fc2"}, 4), doctest::Contains("no node named 'nope'"),
                       ModelError);
}

TEST_CASE("widen: the repair draws both layers' weights again, seeded, and leaves the case's model alone") {
  const ir::Model m = narrow_mlp();
  const cli::LoadedCase c = case_of(m);
  const an::Trace t = narrow_trace(m);
  const cli::RepairedCase base = cli::unrepaired(c);
  an::FixAction a = action(Kind::kWidth, 0);
  a.count = 16;
  const cli::RepairedCase r = cli::apply_fix(base, {a}, t, c);
  REQUIRE(r.changes.size() == 1);
  CHECK(cli::describe(r) == "layer 0 (fc1): width 1 -> 16 units (weights of layer 0 (fc1) and layer 1 (fc2) drawn again)");
  const auto& w1 = r.model->graph.initializers.at("W1").floats;
  const auto& w2 = r.model->graph.initializers.at("W2").floats;
  CHECK(w1.size() == 32);
  CHECK(w2.size() == 48);
  // Glorot uniform by the new fans: no zero rows left, within the bound.
  CHECK(std::count(w1.begin(), w1.end(), 0.0f) == 0);
  CHECK(std::count(w2.begin(), w2.end(), 0.0f) == 0);
  const float bound2 = std::sqrt(6.0f / (16 + 3));
  CHECK(*std::max_element(w2.begin(), w2.end()) <= bound2);
  CHECK(r.model->graph.initializers.at("b1").floats == std::vector<float>(16, 0.0f));
  CHECK(base.model->graph.initializers.at("W1").floats.size() == 2);  // the case's model is never edited
  // The same seed draws the same weights.
  CHECK(cli::apply_fix(base, {a}, t, c).model->graph.initializers.at("W1").floats == w1);

  an::Trace branchy = t;
  branchy.header.layers[0].feeds = an::LayerInfo::kNoChain;
  CHECK_THROWS_WITH_AS(cli::apply_fix(base, {a}, branchy, c), doctest::Contains("does not feed a single next layer"),
                       ModelError);
}

TEST_CASE("widen: proposed for a layer narrower than what follows it, and for no other") {
  auto trace = [](int64_t hidden) {
    test::TraceBuilder b;
    an::Trace t = b.dense("relu", 16).dense("relu", hidden).dense("softmax", 4).build(60);
    for (an::Probe& p : t.header.probes)
      if (p.kind == an::ProbeKind::kForward && p.op.role == "parameterized") {
        const int64_t units[] = {16, hidden, 4};
        p.op.units = p.op.sample_size = units[p.layer];
      }
    for (size_t l = 0; l < t.header.layers.size(); ++l)
      t.header.layers[l].feeds = l + 1 < t.header.layers.size() ? static_cast<int>(l) + 1 : an::LayerInfo::kNoChain;
    return t;
  };
  auto widths = [](const an::Trace& t, int layer) {
    const an::Diagnosis d = test::fixes::faulty({test::fixes::finding("bottleneck_layer", an::RootCause::kArchitecture, layer)});
    std::vector<int64_t> out;
    for (const an::FixCandidate& c : an::propose_fixes(d, t, {}))
      for (const an::FixAction& a : c.actions)
        if (a.kind == Kind::kWidth) {
          CHECK(a.layer == layer);
          CHECK(c.root_cause == an::RootCause::kArchitecture);
          out.push_back(a.count);
        }
    return out;
  };
  CHECK(widths(trace(1), 1) == std::vector<int64_t>{16});  // one unit before four outputs: as wide as the widest
  CHECK(widths(trace(2), 1) == std::vector<int64_t>{16});  // fewer units than outputs
  CHECK(widths(trace(8), 1).empty());                       // wide enough
  CHECK(widths(trace(1), 2).empty());                       // the output layer is never widened
  an::Trace branch = trace(1);
  branch.header.layers[1].feeds = an::LayerInfo::kNoChain;  // a branch or merge: not a plain chain
  CHECK(widths(branch, 1).empty());
}
