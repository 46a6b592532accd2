// Graphs planned with and without the planner's fusing (runtime/graph_fuse.cpp), for the
// fusing tests: one forward and backward pass on seeded inputs and output gradients.
#pragma once

#include <doctest/doctest.h>

#include <map>
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

inline Trained run_graph(const ir::Model& m, bool fuse, int64_t batch, unsigned seed) {
  rt::GraphOptions o;
  o.batch_size = batch;
  o.training = true;
  o.fuse = fuse;
  rt::ExecutionGraph g(m, o);
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
  Trained t;
  t.y = g.output(0).fvec();
  for (rt::Param& p : g.params()) t.grads[p.name] = p.grad->fvec();
  for (const rt::Step& s : g.steps()) t.steps.push_back(s.node->name);
  for (const rt::Layer& l : g.layers()) t.layer_nodes.push_back(l.nodes);
  return t;
}

inline void check_close(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5));
}

}  // namespace dl::test
