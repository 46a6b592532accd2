// Graphs planned with and without the planner's fusing (runtime/graph_fuse.cpp) or views
// (runtime/graph_views.cpp), for the tests that compare the two: forward and backward
// passes on seeded inputs and output gradients (run_planned).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <utility>
#include <string>
#include <vector>

#include "runtime/graph.h"
#include "tests/unit/parallel_test_util.h"

namespace dl::test {

struct Trained {
  std::vector<float> y;                                 // output 0
  std::map<std::string, std::vector<float>> grads;      // per parameter
  std::vector<std::string> steps;                       // the steps' nodes
  std::vector<std::vector<std::string>> layer_nodes;    // per layer
  std::vector<std::vector<float>> more_outputs;         // outputs 1, 2, ...
  std::vector<std::pair<bool, bool>> views;             // per step: Step::view, Step::grad_view
  int64_t planned_bytes = 0;
};

// An opset-13 model of these graph inputs and outputs (nodes and initializers are the caller's).
inline ir::Model opset13_model(const std::string& name, std::vector<ir::ValueInfo> inputs,
                               std::vector<ir::ValueInfo> outputs) {
  ir::Model m;
  m.path = name;
  m.ir_version = 8;
  m.opset = m.original_opset = 13;
  m.graph.inputs = std::move(inputs);
  m.graph.outputs = std::move(outputs);
  return m;
}

// `passes` forward and backward passes (other inputs and output gradients each pass) of a
// graph planned with options o (training unless o.training is false and `passes` is 0: then
// one pass of an inference graph, whose gradients are allocated by output_grad()).
inline Trained run_planned(const ir::Model& m, rt::GraphOptions o, unsigned seed, int passes = 1) {
  if (passes > 0) o.training = true;
  rt::ExecutionGraph g(m, o);
  for (int pass = 0; pass < std::max(passes, 1); ++pass, seed += 7) {
    for (const std::string& name : g.input_names()) {
      rt::Tensor& t = g.input(name);
      const std::vector<float> v = random_values(t.numel(), seed);
      std::copy(v.begin(), v.end(), t.f());
    }
    g.forward();
    for (size_t i = 0; i < g.output_names().size(); ++i) {
      rt::Tensor& d = g.output_grad(i);
      const std::vector<float> v = random_values(d.numel(), seed + 1 + unsigned(i));
      std::copy(v.begin(), v.end(), d.f());
    }
    g.backward();
  }
  Trained t;
  t.y = g.output(0).fvec();
  for (rt::Param& p : g.params()) t.grads[p.name] = p.grad->fvec();
  for (const rt::Step& s : g.steps()) t.steps.push_back(s.node->name);
  for (const rt::Layer& l : g.layers()) t.layer_nodes.push_back(l.nodes);
  for (size_t i = 1; i < g.output_names().size(); ++i) t.more_outputs.push_back(g.output(i).fvec());
  for (const rt::Step& s : g.steps()) t.views.push_back({s.view, s.grad_view});
  t.planned_bytes = g.planned_bytes();
  return t;
}

inline Trained run_graph(const ir::Model& m, bool fuse, int64_t batch, unsigned seed) {
  rt::GraphOptions o;
  o.batch_size = batch;
  o.fuse = fuse;
  return run_planned(m, o, seed);
}

inline void check_close(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5));
}

}  // namespace dl::test
