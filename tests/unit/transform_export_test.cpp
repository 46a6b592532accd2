// save_model (converter/transform.h): an ir::Model written as ONNX imports back into the
// same model, runs the same, and passes onnx.checker (where /usr/bin/python3 has onnx),
// including benchmark models after the repairs the verified fixes try on them.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "converter/errors.h"
#include "converter/import.h"
#include "converter/transform.h"
#include "runtime/param_roles.h"
#include "tests/unit/transform_fixtures.h"

using namespace dl;
using namespace dl::test;

namespace {

void check_same_values(const std::vector<ir::ValueInfo>& a, const std::vector<ir::ValueInfo>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    INFO("value " << a[k].name);
    CHECK(a[k].name == b[k].name);
    CHECK(a[k].dtype == b[k].dtype);
    CHECK(a[k].has_shape == b[k].has_shape);
    REQUIRE(a[k].dims.size() == b[k].dims.size());
    for (size_t d = 0; d < a[k].dims.size(); ++d) {
      CHECK(a[k].dims[d].value == b[k].dims[d].value);
      CHECK(a[k].dims[d].param == b[k].dims[d].param);
    }
  }
}

void check_same_tensor(const ir::TensorData& a, const ir::TensorData& b) {
  CHECK(a.name == b.name);
  CHECK(a.dtype == b.dtype);
  CHECK(a.dims == b.dims);
  CHECK(a.floats == b.floats);
  CHECK(a.ints == b.ints);
}

// Nodes with their attributes, initializers, graph inputs/outputs, metadata, opset.
void check_same_model(const ir::Model& a, const ir::Model& b) {
  CHECK(a.opset == b.opset);
  CHECK(a.producer_name == b.producer_name);
  CHECK(a.producer_version == b.producer_version);
  CHECK(a.metadata == b.metadata);
  check_same_values(a.graph.inputs, b.graph.inputs);
  check_same_values(a.graph.outputs, b.graph.outputs);
  REQUIRE(a.graph.nodes.size() == b.graph.nodes.size());
  for (size_t k = 0; k < a.graph.nodes.size(); ++k) {
    const ir::Node &x = a.graph.nodes[k], &y = b.graph.nodes[k];
    INFO("node " << x.name);
    CHECK(x.name == y.name);
    CHECK(x.op_type == y.op_type);
    CHECK(x.domain == y.domain);
    CHECK(x.since_version == y.since_version);
    CHECK(x.inputs == y.inputs);
    CHECK(x.outputs == y.outputs);
    REQUIRE(x.attrs.size() == y.attrs.size());
    for (const auto& entry : x.attrs) {  // no structured binding: INFO's lambda cannot take one in C++17 (clang)
      const std::string& name = entry.first;
      const ir::Attribute& p = entry.second;
      INFO("attribute " << name);
      REQUIRE(y.attrs.count(name));
      const ir::Attribute& q = y.attrs.at(name);
      CHECK(p.kind == q.kind);
      CHECK(p.f == q.f);
      CHECK(p.i == q.i);
      CHECK(p.s == q.s);
      CHECK(p.floats == q.floats);
      CHECK(p.ints == q.ints);
      CHECK(p.strings == q.strings);
      check_same_tensor(p.t, q.t);
    }
  }
  REQUIRE(a.graph.initializers.size() == b.graph.initializers.size());
  for (const auto& entry : a.graph.initializers) {
    const std::string& name = entry.first;
    const auto& t = entry.second;
    INFO("initializer " << name);
    REQUIRE(b.graph.initializers.count(name));
    check_same_tensor(t, b.graph.initializers.at(name));
  }
}

ir::Attribute attr(Kind kind) {
  ir::Attribute a;
  a.kind = kind;
  return a;
}

ir::Attribute tensor_attr(ir::DType dtype, std::vector<int64_t> dims, std::vector<float> f, std::vector<int64_t> i) {
  ir::Attribute a = attr(Kind::kTensor);
  a.t = ir::TensorData{"", dtype, std::move(dims), std::move(f), std::move(i)};
  return a;
}

// The MLP plus a node of a custom domain holding an attribute of every kind, Constants
// holding tensors of every dtype, and initializers of every dtype.
ir::Model every_kind() {
  ir::Model m = mlp();
  m.producer_version = "0.1";
  m.metadata["deeplocalize.optimizer"] = "sgd";
  ir::Node custom = node("custom", "Custom", {"y", "f64", "i64", "i32", "b"}, {"z"}, 0);
  custom.domain = "com.example";
  custom.attrs["f"] = attr(Kind::kFloat);
  custom.attrs["f"].f = 0.25f;
  custom.attrs["i"] = attr_i(-3);
  custom.attrs["s"] = attr(Kind::kString);
  custom.attrs["s"].s = "same";
  custom.attrs["fs"] = attr(Kind::kFloats);
  custom.attrs["fs"].floats = {1.5f, -2};
  custom.attrs["is"] = attr(Kind::kInts);
  custom.attrs["is"].ints = {4, 5, 6};
  custom.attrs["ss"] = attr(Kind::kStrings);
  custom.attrs["ss"].strings = {"a", ""};
  custom.attrs["t"] = tensor_attr(ir::DType::kFloat32, {2}, {1, 2}, {});
  m.graph.nodes.push_back(custom);
  const std::vector<ir::Attribute> constants = {tensor_attr(ir::DType::kFloat64, {2}, {0.5f, -1}, {}),
                                                tensor_attr(ir::DType::kInt64, {3}, {}, {1, -2, 1LL << 40}),
                                                tensor_attr(ir::DType::kInt32, {1, 2}, {}, {7, -8}),
                                                tensor_attr(ir::DType::kBool, {2}, {}, {1, 0}),
                                                tensor_attr(ir::DType::kFloat32, {}, {3}, {})};
  for (size_t k = 0; k < constants.size(); ++k) {
    ir::Node c = node("const" + std::to_string(k), "Constant", {}, {"c" + std::to_string(k)}, 13);
    c.attrs["value"] = constants[k];
    m.graph.nodes.insert(m.graph.nodes.begin() + static_cast<std::ptrdiff_t>(k), c);
  }
  m.graph.initializers["f64"] = ir::TensorData{"f64", ir::DType::kFloat64, {2}, {0.1f, 2}, {}};
  m.graph.initializers["i64"] = ir::TensorData{"i64", ir::DType::kInt64, {2}, {}, {-1, 9}};
  m.graph.initializers["i32"] = ir::TensorData{"i32", ir::DType::kInt32, {1}, {}, {300}};
  m.graph.initializers["b"] = ir::TensorData{"b", ir::DType::kBool, {3}, {}, {1, 1, 0}};
  m.graph.outputs.push_back(vinfo("z", {-1, 2}));
  return m;
}

}  // namespace

TEST_CASE("transform: export round trip of every attribute kind and tensor dtype") {
  TempDir dir;
  const ir::Model m = every_kind();
  const std::string path = dir.file("every_kind.onnx");
  conv::save_model(m, path);
  const ir::Model back = conv::import_model(path);
  check_same_model(m, back);
  CHECK(back.ir_version == 8);
  CHECK(back.graph.value_info.count("h"));
  python_check({path});  // the runtime has no Custom op: running is tested below
}

TEST_CASE("transform: export of an edited model imports back and runs the same") {
  TempDir dir;
  ir::Model m = mlp();
  m.ir_version = 3;  // an old file upgraded to opset 13: written with a version that allows it
  conv::set_layer_activation(m, {"fc1"}, "Tanh");
  conv::set_layer_activation(m, {"fc2"}, "Softmax");
  rt::reinitialize_params(m, {"W1", "b1"}, "glorot_uniform", 3);
  const std::string path = dir.file("edited.onnx");
  conv::save_model(m, path);
  const ir::Model back = conv::import_model(path);
  check_same_model(m, back);
  CHECK(back.ir_version == 7);
  CHECK(run(back, kX) == run(m, kX));
  python_check({path});
}

TEST_CASE("transform: export errors") {
  TempDir dir;
  ir::Model m = mlp();
  CHECK_THROWS_AS(conv::save_model(m, dir.file("no/such/dir/m.onnx")), ConfigError);
  CHECK_THROWS_AS(conv::save_model(m, dir.path.string()), ConfigError);  // a directory
  CHECK(fs::is_directory(dir.path));
  CHECK_FALSE(fs::exists(dir.path.string() + ".tmp"));

  const std::string path = dir.file("bad.onnx");
  ir::Model other = m;
  other.graph.nodes[0].attrs["g"] = attr(Kind::kOther);
  CHECK_THROWS_WITH_AS(conv::save_model(other, path), doctest::Contains("node 'fc1' attribute 'g'"), ModelError);
  other = m;
  other.graph.nodes[0].attrs["alpha"] = tensor_attr(ir::DType::kOther, {1}, {}, {});
  CHECK_THROWS_AS(conv::save_model(other, path), ModelError);
  other = m;
  other.graph.initializers["W1"].floats.pop_back();
  CHECK_THROWS_WITH_AS(conv::save_model(other, path), doctest::Contains("initializer 'W1' holds 5 values"),
                       ModelError);
  other = m;
  other.graph.nodes[1].inputs[0] = "undefined";  // the checker refuses what the edits must never make
  CHECK_THROWS_WITH_AS(conv::save_model(other, path), doctest::Contains("not valid ONNX"), ModelError);
  CHECK_FALSE(fs::exists(path));
}

TEST_CASE("transform: benchmark models repaired, exported, imported back and run") {
  TempDir dir;
  struct Case {
    std::string name;
    void (*edit)(ir::Model&);
  };
  const std::vector<Case> cases = {
      {"so_31880720_buggy", [](ir::Model& m) { conv::set_layer_activation(m, {"/7/Gemm", "/8/Softmax"}, "Sigmoid"); }},
      {"so_48385830_buggy", [](ir::Model& m) { conv::set_layer_activation(m, {"/0/Gemm"}, "Relu"); }},
      {"zero_init_buggy",
       [](ir::Model& m) {
         rt::reinitialize_params(m, {"0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"},
                                   "glorot_uniform", 1);
       }},
      {"healthy_digits_cnn",
       [](ir::Model& m) {
         conv::set_layer_activation(m, {"/0/Conv", "/1/Relu", "/2/MaxPool"}, "Elu");
         conv::set_layer_activation(m, {"/9/Gemm", "/10/Softmax"}, "Identity");
         rt::reinitialize_params(m, {"0.weight", "3.weight", "7.weight"}, "he_uniform", 2);
       }},
      {"dead_relu_bias_buggy", [](ir::Model& m) {
         for (const auto& n : std::vector<ir::Node>(m.graph.nodes))
           if (n.op_type == "Relu") conv::set_layer_activation(m, {n.name}, "LeakyRelu", 0.2f);
       }}};
  std::vector<std::string> paths;
  for (const auto& c : cases) {
    INFO(c.name);
    ir::Model m = conv::import_model(kBenchmark + c.name + "/model.onnx");
    c.edit(m);
    paths.push_back(dir.file(c.name + ".onnx"));
    conv::save_model(m, paths.back());
    const ir::Model back = conv::import_model(paths.back());
    check_same_model(m, back);
    const auto out = run_random(back);
    CHECK(out == run_random(m));
    for (float v : out) CHECK(std::isfinite(v));
  }
  python_check(paths);
}
