// Shared by the transform and export tests: a small MLP built in code, and running a model.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "converter/ir.h"
#include "runtime/graph.h"

namespace dl::test {

namespace fs = std::filesystem;
using Kind = ir::Attribute::Kind;


inline const std::string kBenchmark = std::string(DL_SOURCE_DIR) + "/models/benchmark/";

inline ir::ValueInfo vinfo(const std::string& name, std::vector<int64_t> dims) {
  ir::ValueInfo v;
  v.name = name;
  v.has_shape = true;
  for (int64_t d : dims) v.dims.push_back(d < 0 ? ir::Dim{-1, "N"} : ir::Dim{d, ""});
  return v;
}

inline ir::TensorData floats(const std::string& name, std::vector<int64_t> dims, std::vector<float> values) {
  ir::TensorData t;
  t.name = name;
  t.dims = std::move(dims);
  t.floats = std::move(values);
  return t;
}

inline ir::Attribute attr_i(int64_t i) {
  ir::Attribute a;
  a.kind = Kind::kInt;
  a.i = i;
  return a;
}

inline ir::Attribute ints_attr(std::vector<int64_t> v) {
  ir::Attribute a;
  a.kind = Kind::kInts;
  a.ints = std::move(v);
  return a;
}

inline ir::Node node(const std::string& name, const std::string& op, std::vector<std::string> in,
              std::vector<std::string> out, int since) {
  ir::Node n;
  n.name = name;
  n.op_type = op;
  n.since_version = since;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

// x[N, 2] -> fc1 (Gemm) -> h[N, 3] -> fc2 (Gemm) -> y[N, 2], no activations.
inline ir::Model mlp() {
  ir::Model m;
  m.path = "mlp";
  m.ir_version = 8;
  m.opset = m.original_opset = 13;
  m.producer_name = "transform_test";
  m.metadata["deeplocalize.loss"] = "mse";
  ir::Graph& g = m.graph;
  g.name = "mlp";
  g.inputs = {vinfo("x", {-1, 2})};
  g.outputs = {vinfo("y", {-1, 2})};
  g.value_info["h"] = vinfo("h", {-1, 3});
  g.initializers["W1"] = floats("W1", {3, 2}, {1, 0, 0, 1, 1, -1});
  g.initializers["b1"] = floats("b1", {3}, {0, -1, 0.5f});
  g.initializers["W2"] = floats("W2", {2, 3}, {1, 1, 1, 0, 1, -1});
  g.initializers["b2"] = floats("b2", {2}, {0, 0});
  g.nodes.push_back(node("fc1", "Gemm", {"x", "W1", "b1"}, {"h"}, 13));
  g.nodes.push_back(node("fc2", "Gemm", {"h", "W2", "b2"}, {"y"}, 13));
  for (auto& n : g.nodes) n.attrs["transB"] = attr_i(1);
  return m;
}

// Runs the model for batch 2 on `x` and returns its first output.
inline std::vector<float> run(const ir::Model& model, const std::vector<float>& x) {
  rt::GraphOptions options;
  options.batch_size = 2;
  rt::ExecutionGraph graph(model, options);
  graph.input(0).fvec() = x;
  graph.forward();
  return graph.output(0).fvec();
}

inline std::vector<float> run_random(const ir::Model& model) {
  rt::GraphOptions options;
  options.batch_size = 2;
  rt::ExecutionGraph graph(model, options);
  auto& in = graph.input(0).fvec();
  for (size_t k = 0; k < in.size(); ++k) in[k] = static_cast<float>(std::sin(0.7 * static_cast<double>(k)));
  graph.forward();
  return graph.output(0).fvec();
}

inline const std::vector<float> kX = {1, 2, -3, 0.5f};  // two rows of x
// h = x W1^T + b1 = [1, 1, -0.5; -3, -0.5, -3]; y = h W2^T = [1.5, 1.5; -6.5, 2.5]

inline void check_values(const std::vector<float>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < got.size(); ++k) CHECK(got[k] == doctest::Approx(want[k]).epsilon(1e-5));
}

inline double sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

inline const ir::Node& node_named(const ir::Model& m, const std::string& name) {
  for (const auto& n : m.graph.nodes)
    if (n.name == name) return n;
  FAIL("no node " << name);
  throw 0;
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("dl_transform_test_" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

// onnx.checker (full check: shape inference too) on exported files, when available.
inline void python_check(const std::vector<std::string>& paths) {
  if (std::system("/usr/bin/python3 -c 'import onnx' >/dev/null 2>&1") != 0) {
    MESSAGE("skipped onnx.checker: /usr/bin/python3 with onnx is not available");
    return;
  }
  std::string cmd = "/usr/bin/python3 -c 'import onnx, sys\nfor p in sys.argv[1:]: "
                    "onnx.checker.check_model(p, full_check=True)'";
  for (const auto& p : paths) cmd += " '" + p + "'";
  CHECK_MESSAGE(std::system(cmd.c_str()) == 0, "onnx.checker rejected an exported model");
}

}  // namespace dl::test
