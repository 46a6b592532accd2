// linear_stack by data flow (LayerInfo::feeds) and with designed bottlenecks exempt: the
// healthy graphs that used to raise it (ResNet's downsample branch, MobileNetV2's linear
// bottlenecks) and the plain chain that must still raise it. The end-to-end check on
// real exported graphs is in export_adapt_test.cpp.
#include <doctest/doctest.h>

#include "analysis/analyzer.h"
#include "rules_stat_util.h"

using namespace dl;
using namespace dl::test::rules_stat;
using dl::an::LayerInfo;

namespace {

void set_weight_count(dl::an::Trace& t, int layer, int64_t count) {
  for (auto& s : t.header.initializers)
    if (s.name == t.header.layers[size_t(layer)].params[0]) s.count = count;
}

}  // namespace

TEST_CASE("rule linear_stack: a plain chain in data flow is a stack") {
  TraceBuilder b;
  Trace t = b.dense("linear", 16).dense("relu", 8).dense("softmax", 3).build(5);
  t.header.layers[0].feeds = 1;
  t.header.layers[1].feeds = 2;
  t.header.layers[2].feeds = LayerInfo::kNoChain;
  auto f = run("linear_stack", t);
  REQUIRE(f.size() == 1);
  CHECK(f[0].layer == 0);
}

TEST_CASE("rule linear_stack: a branch or residual next in graph order is not a stack") {
  // Layer 0 (the block's last conv) is read by an Add in layer 1 (the downsample conv's
  // layer), not by layer 1's parameterised node: parallel, not in series.
  TraceBuilder b;
  Trace t = b.dense("linear", 16).dense("relu", 8).dense("softmax", 3).build(5);
  t.header.layers[0].feeds = LayerInfo::kNoChain;
  t.header.layers[1].feeds = 2;
  CHECK(run("linear_stack", t).empty());
  // ... and it feeds another layer than the next one: not this pair either.
  t.header.layers[0].feeds = 2;
  CHECK(run("linear_stack", t).empty());
}

TEST_CASE("rule linear_stack: a designed bottleneck is not a stack") {
  // 32 inputs -> 8 units (linear) -> 64 units: narrower than both sides, the rank is
  // restricted on purpose (MobileNetV2's projection before the next expansion).
  TraceBuilder b;
  Trace t = b.dense("linear", 8).dense("relu", 64).dense("softmax", 3).build(5);
  t.header.layers[0].feeds = 1;
  t.header.probes[b.forward(0, false)].op.units = 8;  // a linear layer's units are its Gemm's
  set_weight_count(t, 0, 8 * 32);
  CHECK(run("linear_stack", t).empty());
  // The same layer widening its input (4 -> 8 -> 64) is no bottleneck: flagged.
  set_weight_count(t, 0, 8 * 4);
  CHECK(run("linear_stack", t).size() == 1);
  // Narrowing but the next layer narrower still (32 -> 8 -> 3): a stack.
  TraceBuilder b2;
  Trace u = b2.dense("linear", 8).dense("softmax", 3).build(5);
  u.header.probes[b2.forward(0, false)].op.units = 8;
  set_weight_count(u, 0, 8 * 32);
  CHECK(run("linear_stack", u).size() == 1);
}

TEST_CASE("rule linear_stack: no hidden non-linearity at all is a fault (a single-layer model)") {
  TraceBuilder b;
  Trace t = b.dense("linear", 32).dense("linear", 16).dense("softmax", 3).build(200);
  auto f = run("linear_stack", t);
  REQUIRE(f.size() == 1);
  CHECK(f[0].conclusive);
  CHECK(f[0].evidence["hidden_layers_linear"] == true);
  CHECK(f[0].evidence["model_is_linear"] == false);  // the softmax output is not linear
  CHECK(f[0].message.find("single-layer model") != std::string::npos);
  CHECK(dl::an::analyze(t, dl::an::Settings(), true).fault);  // even though the run learns
  CHECK_FALSE(run("linear_stack", t, true, with("linear_stack.conclusive_all_linear=0"))[0].conclusive);
  // One hidden ReLU anywhere: a redundant layer, a warning.
  TraceBuilder b2;
  Trace w = b2.dense("linear", 32).dense("relu", 16).dense("softmax", 3).build(200);
  auto g = run("linear_stack", w);
  REQUIRE(g.size() == 1);
  CHECK_FALSE(g[0].conclusive);
}

TEST_CASE("rule linear_stack: an all-linear stack no wider than its output is a warning (a linear model)") {
  // Dense(1)-Dense(1) linear regression (stats.SE 418955's fix keeps it): the hidden layer
  // adds a redundant factor, not lost capacity.
  TraceBuilder b;
  Trace t = b.dense("linear", 1).dense("linear", 1).config("loss", "mse").build(200);
  t.header.probes[b.forward(0, false)].op.units = 1;
  t.header.probes[b.forward(1, false)].op.units = 1;
  auto f = run("linear_stack", t);
  REQUIRE(f.size() == 1);
  CHECK_FALSE(f[0].conclusive);
  CHECK(f[0].evidence["widest_hidden_units"] == 1);
  // A hidden layer wider than the output: its width is lost, a fault.
  t.header.probes[b.forward(0, false)].op.units = 32;
  f = run("linear_stack", t);
  REQUIRE(f.size() == 1);
  CHECK(f[0].conclusive);
}
