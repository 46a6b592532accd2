// conv::fuse_layer_norms: torch's opset < 17 LayerNorm decomposition becomes one
// LayerNormalization (matched exactly, near misses left alone), computes the same values,
// makes the scale and bias trainable, and is written back decomposed at the model's opset.
#include <doctest/doctest.h>

#include <functional>

#include "converter/fuse_layer_norm.h"
#include "converter/import.h"
#include "converter/transform.h"
#include "runtime/export_adapt.h"
#include "runtime/param_roles.h"
#include "transform_fixtures.h"

namespace {

using namespace dl;
using test::attr_i;
using test::floats;
using test::node;
using test::vinfo;

ir::Attribute ints(std::vector<int64_t> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}

ir::Node constant(const std::string& name, std::vector<int64_t> dims, std::vector<float> values) {
  ir::Node n = node(name, "Constant", {}, {name + "_output_0"}, 13);
  n.attrs["value"].kind = ir::Attribute::Kind::kTensor;
  n.attrs["value"].t = floats("", std::move(dims), std::move(values));
  return n;
}

std::vector<float> ramp(size_t n, float scale, float offset) {
  std::vector<float> v(n);
  for (size_t k = 0; k < n; ++k) v[k] = offset + scale * static_cast<float>((k * 7) % 11);
  return v;
}

// x[N, 4, 6] -> the torch decomposition of nn.LayerNorm(6) -> Relu -> y, as exported at
// opset 13 ('/1/...' nodes, Constant nodes for 2 and eps); `edit` makes the near misses.
ir::Model decomposed(const std::function<void(ir::Model&)>& edit = {}) {
  ir::Model m;
  m.path = "ln.onnx";
  m.ir_version = 7;
  m.opset = m.original_opset = 13;
  m.producer_name = "pytorch";
  ir::Graph& g = m.graph;
  g.name = "ln";
  g.inputs = {vinfo("x", {-1, 4, 6})};
  g.outputs = {vinfo("y", {-1, 4, 6})};
  for (const char* v : {"mean", "d", "sq", "var", "ve", "sd", "xhat", "scaled", "ln"}) g.value_info[v] = vinfo(v, {-1, 4, 6});
  g.value_info["mean"] = vinfo("mean", {-1, 4, 1});
  g.value_info["var"] = vinfo("var", {-1, 4, 1});
  g.initializers["w"] = floats("w", {6}, ramp(6, 0.2f, 0.5f));
  g.initializers["b"] = floats("b", {6}, ramp(6, -0.1f, 0.3f));
  g.nodes.push_back(node("/1/ReduceMean", "ReduceMean", {"x"}, {"mean"}, 13));
  g.nodes.back().attrs["axes"] = ints({-1});
  g.nodes.push_back(node("/1/Sub", "Sub", {"x", "mean"}, {"d"}, 13));
  g.nodes.push_back(constant("/1/Constant", {}, {2.0f}));
  g.nodes.push_back(node("/1/Pow", "Pow", {"d", "/1/Constant_output_0"}, {"sq"}, 13));
  g.nodes.push_back(node("/1/ReduceMean_1", "ReduceMean", {"sq"}, {"var"}, 13));
  g.nodes.back().attrs["axes"] = ints({-1});
  g.nodes.push_back(constant("/1/Constant_1", {}, {1e-5f}));
  g.nodes.push_back(node("/1/Add", "Add", {"var", "/1/Constant_1_output_0"}, {"ve"}, 13));
  g.nodes.push_back(node("/1/Sqrt", "Sqrt", {"ve"}, {"sd"}, 13));
  g.nodes.push_back(node("/1/Div", "Div", {"d", "sd"}, {"xhat"}, 13));
  g.nodes.push_back(node("/1/Mul", "Mul", {"xhat", "w"}, {"scaled"}, 13));
  g.nodes.push_back(node("/1/Add_1", "Add", {"scaled", "b"}, {"ln"}, 13));
  g.nodes.push_back(node("/2/Relu", "Relu", {"ln"}, {"y"}, 14));
  if (edit) edit(m);
  return m;
}

ir::Node& named(ir::Model& m, const std::string& name) {
  for (ir::Node& n : m.graph.nodes)
    if (n.name == name) return n;
  FAIL("no node " << name);
  throw 0;
}

std::vector<float> run(const ir::Model& m) {
  rt::GraphOptions options;
  options.batch_size = 2;
  rt::ExecutionGraph graph(m, options);
  std::vector<float>& in = graph.input(0).fvec();
  for (size_t k = 0; k < in.size(); ++k) in[k] = static_cast<float>(std::sin(0.9 * double(k)) * 2.0 + 0.1 * double(k % 5));
  graph.forward();
  return graph.output(0).fvec();
}

}  // namespace

TEST_CASE("fuse layer norm: torch's opset-13 decomposition becomes one LayerNormalization") {
  ir::Model m = decomposed();
  const std::vector<float> before = run(m);
  const std::vector<std::string> notes = conv::fuse_layer_norms(m.graph);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("'/1/LayerNormalization'") != std::string::npos);
  CHECK(notes[0].find("scale 'w' and bias 'b' are trained") != std::string::npos);
  CHECK(notes[0].find("'/1/ReduceMean' ... '/1/Add_1'") != std::string::npos);
  REQUIRE(m.graph.nodes.size() == 2);
  const ir::Node& ln = m.graph.nodes[0];
  CHECK(ln.name == "/1/LayerNormalization");
  CHECK(ln.op_type == "LayerNormalization");
  CHECK(ln.since_version == 17);
  CHECK(ln.inputs == std::vector<std::string>{"x", "w", "b"});
  CHECK(ln.outputs == std::vector<std::string>{"ln"});
  CHECK(ln.attrs.at("axis").i == -1);
  CHECK(ln.attrs.at("epsilon").f == 1e-5f);
  CHECK(m.graph.nodes[1].name == "/2/Relu");
  // The same values, and now the scale and bias are parameters (they were none before).
  const std::vector<float> after = run(m);
  REQUIRE(after.size() == before.size());
  for (size_t k = 0; k < after.size(); ++k) CHECK(after[k] == doctest::Approx(before[k]).epsilon(1e-5));
  const auto params = rt::model_params(m);
  REQUIRE(params.count("w"));
  REQUIRE(params.count("b"));
  CHECK(params.at("w").role.kind == rt::ParamRole::Kind::kScale);
  CHECK(params.at("b").role.kind == rt::ParamRole::Kind::kBias);
  CHECK(params.at("w").trainable());
  CHECK(rt::model_params(decomposed()).count("w") == 0);
}

TEST_CASE("fuse layer norm: two trailing axes, operands swapped, no bias, positive axes") {
  SUBCASE("axes [-2, -1] with a [4, 6] weight: axis -2") {
    ir::Model m = decomposed([](ir::Model& m) {
      named(m, "/1/ReduceMean").attrs["axes"] = ints({-1, -2});
      named(m, "/1/ReduceMean_1").attrs["axes"] = ints({-2, -1});
      m.graph.initializers["w"] = floats("w", {4, 6}, ramp(24, 0.1f, 0.4f));
      m.graph.initializers["b"] = floats("b", {1, 4, 6}, ramp(24, 0.05f, -0.2f));
    });
    const std::vector<float> before = run(m);
    REQUIRE(conv::fuse_layer_norms(m.graph).size() == 1);
    CHECK(m.graph.nodes[0].attrs.at("axis").i == -2);
    const std::vector<float> after = run(m);
    for (size_t k = 0; k < after.size(); ++k) CHECK(after[k] == doctest::Approx(before[k]).epsilon(1e-5));
  }
  SUBCASE("X's shape unknown to shape inference (torch's attention output): the weight's rank decides") {
    ir::Model m = decomposed([](ir::Model& m) {
      m.graph.inputs[0].has_shape = false;
      m.graph.inputs[0].dims.clear();
    });
    REQUIRE(conv::fuse_layer_norms(m.graph).size() == 1);
    CHECK(m.graph.nodes[0].attrs.at("axis").i == -1);
    CHECK(m.graph.nodes[0].inputs == std::vector<std::string>{"x", "w", "b"});
    // A bias shaped unlike the weight is not taken for the LayerNorm's: its Add stays.
    ir::Model other = decomposed([](ir::Model& m) {
      m.graph.inputs[0].has_shape = false;
      m.graph.inputs[0].dims.clear();
      m.graph.initializers["b"] = floats("b", {1, 6}, ramp(6, 0.1f, 0.5f));
    });
    REQUIRE(conv::fuse_layer_norms(other.graph).size() == 1);
    REQUIRE(other.graph.nodes.size() == 3);
    CHECK(other.graph.nodes[0].inputs == std::vector<std::string>{"x", "w"});
    CHECK(other.graph.nodes[1].name == "/1/Add_1");
  }
  SUBCASE("Mul(w, xhat), eps first in its Add, no bias Add, axes given as 2 on rank 3") {
    ir::Model m = decomposed([](ir::Model& m) {
      named(m, "/1/Mul").inputs = {"w", "xhat"};
      named(m, "/1/Add").inputs = {"/1/Constant_1_output_0", "var"};
      named(m, "/1/ReduceMean").attrs["axes"] = ints({2});
      auto& nodes = m.graph.nodes;
      nodes.erase(nodes.begin() + 10);  // /1/Add_1
      nodes.back().inputs = {"scaled"};
    });
    REQUIRE(conv::fuse_layer_norms(m.graph).size() == 1);
    const ir::Node& ln = m.graph.nodes[0];
    CHECK(ln.inputs == std::vector<std::string>{"x", "w"});
    CHECK(ln.outputs == std::vector<std::string>{"scaled"});
  }
}

TEST_CASE("fuse layer norm: near misses are left as they are") {
  const std::vector<std::pair<const char*, std::function<void(ir::Model&)>>> misses = {
      {"the two means over other axes",
       [](ir::Model& m) { named(m, "/1/ReduceMean_1").attrs["axes"] = ints({-2}); }},
      {"axes not the trailing ones",
       [](ir::Model& m) {
         named(m, "/1/ReduceMean").attrs["axes"] = ints({-2});
         named(m, "/1/ReduceMean_1").attrs["axes"] = ints({-2});
         m.graph.initializers["w"] = floats("w", {4, 1}, ramp(4, 0.1f, 0.5f));
       }},
      {"keepdims 0", [](ir::Model& m) { named(m, "/1/ReduceMean").attrs["keepdims"] = attr_i(0); }},
      {"the centring reads another tensor than the mean",
       [](ir::Model& m) {
         m.graph.inputs.push_back(vinfo("x2", {-1, 4, 6}));
         named(m, "/1/Sub").inputs[0] = "x2";
       }},
      {"an exponent of 3", [](ir::Model& m) { named(m, "/1/Constant").attrs["value"].t.floats = {3.0f}; }},
      {"eps not a scalar", [](ir::Model& m) { named(m, "/1/Constant_1").attrs["value"].t = floats("", {6}, ramp(6, 0, 1e-5f)); }},
      {"eps a computed value, not a constant",
       [](ir::Model& m) {
         m.graph.inputs.push_back(vinfo("e", {1}));
         named(m, "/1/Add").inputs[1] = "e";
       }},
      {"a weight of the wrong shape", [](ir::Model& m) { m.graph.initializers["w"] = floats("w", {4, 1}, ramp(4, 0.1f, 0.5f)); }},
      {"a weight that is a graph input, not an initializer",
       [](ir::Model& m) {
         m.graph.initializers.erase("w");
         m.graph.inputs.push_back(vinfo("w", {6}));
       }},
      {"the centred values read by a third node",
       [](ir::Model& m) {
         m.graph.nodes.push_back(node("/3/Neg", "Neg", {"d"}, {"nd"}, 13));
         m.graph.outputs.push_back(vinfo("nd", {-1, 4, 6}));
       }},
      {"the variance is a graph output", [](ir::Model& m) { m.graph.outputs.push_back(vinfo("var", {-1, 4, 1})); }},
      {"X's shape unknown and a weight of more axes than normalised",
       [](ir::Model& m) {
         m.graph.inputs[0].has_shape = false;
         m.graph.inputs[0].dims.clear();
         m.graph.initializers["w"] = floats("w", {1, 6}, ramp(6, 0.1f, 0.5f));
       }},
      {"X's type unknown", [](ir::Model& m) { m.graph.inputs[0].dtype = ir::DType::kOther; }},
      {"Sqrt replaced by Exp", [](ir::Model& m) { named(m, "/1/Sqrt").op_type = "Exp"; }},
  };
  for (const auto& [what, edit] : misses) {
    const std::string label(what);  // (INFO's lambda cannot capture a structured binding in C++17)
    INFO(label);
    ir::Model m = decomposed(edit);
    const size_t n = m.graph.nodes.size();
    CHECK(conv::fuse_layer_norms(m.graph).empty());
    CHECK(m.graph.nodes.size() == n);
  }
}

TEST_CASE("fuse layer norm: a saved model is written decomposed at its opset 13, and imports fused again") {
  test::TempDir dir;
  ir::Model m = decomposed();
  REQUIRE(conv::fuse_layer_norms(m.graph).size() == 1);
  m.graph.initializers["w"].floats[0] = 4.0f;  // a trained value goes with it
  const std::string path = dir.file("ln13.onnx");
  conv::save_model(m, path);  // the checker refuses LayerNormalization at opset 13
  ir::Model back = conv::import_model(path);
  CHECK(back.opset == 13);
  REQUIRE(back.graph.nodes.size() == 2);
  CHECK(back.graph.nodes[0].op_type == "LayerNormalization");
  CHECK(back.graph.nodes[0].name == "/1/LayerNormalization");
  CHECK(back.graph.initializers.at("w").floats[0] == 4.0f);
  REQUIRE(back.warnings.size() == 1);
  CHECK(back.warnings[0].find("was fused into one LayerNormalization") != std::string::npos);
  test::python_check({path});
}

TEST_CASE("constant initializers: an affine Mul/Add with no parameterised op is named as trained as a constant") {
  // Mul(x, g) + h with g, h of 6 values: no op reads them as parameters, so they stay fixed.
  ir::Model m = decomposed();
  ir::Graph& g = m.graph;
  g.nodes = {node("/1/Mul", "Mul", {"x", "w"}, {"scaled"}, 14), node("/1/Add", "Add", {"scaled", "b"}, {"y"}, 14)};
  g.value_info.clear();
  const rt::ExportAdaptation a = rt::adapt_export(m);
  CHECK(a.constants == std::vector<std::string>{"b", "w"});
  REQUIRE(m.warnings.size() == 1);
  CHECK(m.warnings[0] ==
        "2 float initializer(s) ('b', 'w') enter element-wise arithmetic but are no op's weight, bias or scale, so "
        "they are treated as constants and not trained");
  // Fused, the LayerNorm's scale and bias are parameters: no such note.
  ir::Model fused = decomposed();
  conv::fuse_layer_norms(fused.graph);
  CHECK(rt::adapt_export(fused).constants.empty());
  // A scalar initializer (eps here; torch's GELU 0.5) is not named.
  ir::Model scalar = decomposed([](ir::Model& m) {
    m.graph.initializers["eps"] = floats("eps", {}, {1e-5f});
    named(m, "/1/Add").inputs[1] = "eps";
    named(m, "/1/Sqrt").op_type = "Exp";  // not a LayerNorm: w and b stay constants
  });
  CHECK(rt::adapt_export(scalar).constants == std::vector<std::string>{"b", "w"});
}

TEST_CASE("fuse layer norm: torch 1.13's opset-13 exports import with every LayerNorm fused and trainable") {
  const std::string dir = std::string(DL_SOURCE_DIR) + "/tests/fixtures/parity/";
  const std::vector<std::pair<std::string, size_t>> files = {{"layernorm_gelu_mlp_opset13_scce_adam.onnx", 1},
                                                             {"transformer_encoder_opset13_scce_sgd.onnx", 4}};
  for (const auto& [file, norms] : files) {
    const std::string label = file;  // (INFO's lambda cannot capture a structured binding in C++17)
    INFO(label);
    ir::Model m = conv::import_model(dir + file);
    CHECK(m.opset == 13);
    size_t fused = 0;
    for (const ir::Node& n : m.graph.nodes) fused += n.op_type == "LayerNormalization";
    CHECK(fused == norms);
    CHECK(m.warnings.size() == norms);
    const auto params = rt::model_params(m);
    for (const auto& [name, t] : m.graph.initializers) {
      if (name.find("norm") == std::string::npos || t.dtype != ir::DType::kFloat32) continue;
      const std::string param = name;
      INFO(param);
      REQUIRE(params.count(name));
      CHECK(params.at(name).trainable());
    }
    CHECK(rt::adapt_export(m).constants.empty());
  }
}
