// Repairs as model edits (converter/transform.h): activation edits and re-initialisation,
// checked on the IR and by running the edited model (transform_export_test.cpp: export).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "converter/errors.h"
#include "converter/import.h"
#include "converter/transform.h"
#include "runtime/param_roles.h"
#include "tests/unit/transform_fixtures.h"

using namespace dl;
using namespace dl::test;

TEST_CASE("transform: settable activations") {
  for (const char* op : {"Relu", "LeakyRelu", "Elu", "Selu", "Sigmoid", "HardSigmoid", "Tanh", "Softplus",
                         "Softsign", "Softmax", "LogSoftmax", "Identity"})
    CHECK(conv::is_settable_activation(op));
  for (const char* op : {"Gemm", "Swish", "relu", ""}) CHECK_FALSE(conv::is_settable_activation(op));
}

TEST_CASE("transform: inserting an activation in a hidden layer rewires its readers") {
  ir::Model m = mlp();
  check_values(run(m, kX), {1.5, 1.5, -6.5, 2.5});
  const std::string change = conv::set_layer_activation(m, {"fc1"}, "Relu");
  CHECK(change == "layer nodes fc1: Relu inserted after fc1 (fc1_Relu)");
  REQUIRE(m.graph.nodes.size() == 3);
  const ir::Node& relu = m.graph.nodes[1];
  CHECK(relu.name == "fc1_Relu");
  CHECK(relu.since_version == 13);  // the schema version at the model's opset
  CHECK(relu.inputs == std::vector<std::string>{"h"});
  CHECK(relu.outputs == std::vector<std::string>{"fc1_Relu_output_0"});
  CHECK(m.graph.nodes[2].inputs[0] == "fc1_Relu_output_0");
  REQUIRE(m.graph.value_info.count("fc1_Relu_output_0"));
  CHECK(m.graph.value_info.at("fc1_Relu_output_0").dims.size() == 2);
  check_values(run(m, kX), {2, 1, 0, 0});  // relu(h) = [1, 1, 0; 0, 0, 0]
  CHECK(conv::set_layer_activation(m, {"fc1", "fc1_Relu"}, "Relu") == "");  // already there
  // Inserting again (the layer named without its Relu) picks names that do not clash.
  conv::set_layer_activation(m, {"fc1"}, "Relu");
  REQUIRE(m.graph.nodes.size() == 4);
  CHECK(m.graph.nodes[1].name == "fc1_Relu_1");
  CHECK(m.graph.nodes[2].inputs[0] == "fc1_Relu_1_output_0");
  check_values(run(m, kX), {2, 1, 0, 0});
}

TEST_CASE("transform: inserting at the graph output keeps the output name") {
  ir::Model m = mlp();
  const std::string change = conv::set_layer_activation(m, {"fc2"}, "Sigmoid");
  CHECK(change.find("Sigmoid inserted after fc2") != std::string::npos);
  REQUIRE(m.graph.nodes.size() == 3);
  CHECK(m.graph.nodes[1].outputs[0] == "fc2_output_0");
  CHECK(m.graph.nodes[2].inputs[0] == "fc2_output_0");
  CHECK(m.graph.nodes[2].outputs[0] == "y");
  CHECK(m.graph.outputs[0].name == "y");
  CHECK(m.graph.value_info.count("fc2_output_0"));
  check_values(run(m, kX), {sigmoid(1.5), sigmoid(1.5), sigmoid(-6.5), sigmoid(2.5)});

  // Replacing: Sigmoid -> Softmax (axis -1) -> LeakyRelu with alpha -> removed.
  CHECK(conv::set_layer_activation(m, {"fc2", "fc2_Sigmoid"}, "Softmax") ==
        "layer nodes fc2, fc2_Sigmoid: Sigmoid -> Softmax");
  CHECK(node_named(m, "fc2_Sigmoid").attrs.at("axis").i == -1);
  CHECK(node_named(m, "fc2_Sigmoid").since_version == 13);
  const double e = std::exp(-9.0);
  check_values(run(m, kX), {0.5, 0.5, e / (1 + e), 1 / (1 + e)});
  CHECK(conv::set_layer_activation(m, {"fc2", "fc2_Sigmoid"}, "LeakyRelu", 0.1f).find("(alpha 0.1)") !=
        std::string::npos);
  check_values(run(m, kX), {1.5, 1.5, -0.65, 2.5});
  CHECK(conv::set_layer_activation(m, {"fc2", "fc2_Sigmoid"}, "LeakyRelu", 0.1f) == "");
  conv::set_layer_activation(m, {"fc2", "fc2_Sigmoid"}, "LeakyRelu");
  CHECK(node_named(m, "fc2_Sigmoid").attrs.at("alpha").f == doctest::Approx(0.01));
  CHECK(node_named(m, "fc2_Sigmoid").since_version == 6);  // LeakyRelu-16 is newer than opset 13
  conv::set_layer_activation(m, {"fc2", "fc2_Sigmoid"}, "Elu");
  CHECK(node_named(m, "fc2_Sigmoid").attrs.at("alpha").f == 1.0f);
  conv::set_layer_activation(m, {"fc2", "fc2_Sigmoid"}, "LogSoftmax");
  CHECK(node_named(m, "fc2_Sigmoid").attrs.at("axis").i == -1);
  // The removed activation produced the graph output: it becomes an Identity node.
  CHECK(conv::set_layer_activation(m, {"fc2", "fc2_Sigmoid"}, "Identity") ==
        "layer nodes fc2, fc2_Sigmoid: LogSoftmax -> Identity (fc2_Sigmoid)");
  CHECK(node_named(m, "fc2_Sigmoid").op_type == "Identity");
  CHECK(node_named(m, "fc2_Sigmoid").attrs.empty());
  check_values(run(m, kX), {1.5, 1.5, -6.5, 2.5});
  CHECK(conv::set_layer_activation(m, {"fc2", "fc2_Sigmoid"}, "Identity") == "");  // none left
}

TEST_CASE("transform: removing a hidden activation deletes it") {
  ir::Model m = mlp();
  conv::set_layer_activation(m, {"fc1"}, "Relu");
  CHECK(conv::set_layer_activation(m, {"fc1", "fc1_Relu"}, "Identity") ==
        "layer nodes fc1, fc1_Relu: Relu -> Identity (fc1_Relu)");
  REQUIRE(m.graph.nodes.size() == 2);
  CHECK(m.graph.nodes[1].inputs[0] == "h");
  CHECK_FALSE(m.graph.value_info.count("fc1_Relu_output_0"));
  check_values(run(m, kX), {1.5, 1.5, -6.5, 2.5});
}

TEST_CASE("transform: activation edit errors") {
  ir::Model m = mlp();
  CHECK_THROWS_WITH_AS(conv::set_layer_activation(m, {"fc1", "nope"}, "Relu"),
                       doctest::Contains("no node named 'nope'"), ModelError);
  CHECK_THROWS_AS(conv::set_layer_activation(m, {}, "Relu"), ModelError);
  CHECK_THROWS_WITH_AS(conv::set_layer_activation(m, {"fc1"}, "Swish"), doctest::Contains("'Swish'"), ConfigError);
  m.opset = 0;
  CHECK_THROWS_AS(conv::set_layer_activation(m, {"fc1"}, "Relu"), ModelError);
}

TEST_CASE("transform: re-initialisation follows each weight's fans") {
  ir::Model m = mlp();
  // fc2 reads W2 untransposed: [K = 3, N = 2] after this.
  m.graph.nodes[1].attrs["transB"] = attr_i(0);
  m.graph.initializers["W2"].dims = {3, 2};
  // Conv [M = 4, C = 2, 3, 3] and a MatMul [K = 5, N = 7] weight, read by extra nodes.
  m.graph.initializers["K"] = floats("K", {4, 2, 3, 3}, std::vector<float>(72, 0.f));
  m.graph.initializers["M"] = floats("M", {5, 7}, std::vector<float>(35, 0.f));
  m.graph.nodes.push_back(node("conv", "Conv", {"img", "K"}, {"c"}, 11));
  m.graph.nodes.push_back(node("mm", "MatMul", {"v", "M"}, {"mv"}, 13));
  const std::vector<std::string> names = {"W1", "b1", "W2", "K", "M"};
  const std::string change = rt::reinitialize_params(m, names, "glorot_uniform", 7);
  CHECK(change.find("glorot_uniform: W1 [3, 2] U(+-1.09545)") == 0);
  CHECK(change.find("b1 zeros") != std::string::npos);
  auto check_range = [&](const std::string& name, double limit) {
    INFO(name);
    const auto& v = m.graph.initializers.at(name).floats;
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    CHECK(*lo >= -limit);
    CHECK(*hi <= limit);
    CHECK(*hi - *lo > (v.size() > 30 ? 1.4 : 0.5) * limit);  // spread over the range
  };
  check_range("W1", std::sqrt(6.0 / 5));
  check_range("W2", std::sqrt(6.0 / 5));
  check_range("K", std::sqrt(6.0 / (18 + 36)));
  check_range("M", std::sqrt(6.0 / 12));
  CHECK(m.graph.initializers.at("b1").floats == std::vector<float>(3, 0.f));

  ir::Model he = mlp();
  he.graph.initializers = m.graph.initializers;
  he.graph.nodes = m.graph.nodes;
  rt::reinitialize_params(he, {"W1", "W2", "K", "M"}, "he_uniform", 7);
  auto check_he = [&](const std::string& name, double limit) {
    INFO(name);
    const auto& v = he.graph.initializers.at(name).floats;
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    CHECK(*lo >= -limit);
    CHECK(*hi <= limit);
    CHECK(std::max(-*lo, *hi) > 0.6 * limit);
  };
  check_he("W1", std::sqrt(3.0));  // [N, K] = [3, 2]: fan_in 2
  check_he("W2", std::sqrt(2.0));  // [K, N] = [3, 2]: fan_in 3
  check_he("K", std::sqrt(6.0 / 18));
  check_he("M", std::sqrt(6.0 / 5));

  // Same seed, same values, in any order of the names; another seed, other values.
  ir::Model again = m;
  rt::reinitialize_params(again, {"M", "W1"}, "glorot_uniform", 7);
  CHECK(again.graph.initializers.at("W1").floats == m.graph.initializers.at("W1").floats);
  CHECK(again.graph.initializers.at("M").floats == m.graph.initializers.at("M").floats);
  rt::reinitialize_params(again, {"W1"}, "glorot_uniform", 8);
  CHECK(again.graph.initializers.at("W1").floats != m.graph.initializers.at("W1").floats);
}

TEST_CASE("transform: re-initialisation errors") {
  ir::Model m = mlp();
  CHECK_THROWS_WITH_AS(rt::reinitialize_params(m, {"nope"}, "he_uniform", 1),
                       doctest::Contains("no initializer named 'nope'"), ModelError);
  m.graph.initializers["shape"] = ir::TensorData{"shape", ir::DType::kInt64, {2}, {}, {1, 2}};
  CHECK_THROWS_WITH_AS(rt::reinitialize_params(m, {"shape"}, "he_uniform", 1),
                       doctest::Contains("'shape' is int64"), ModelError);
  m.graph.initializers["s"] = floats("s", {}, {1});
  CHECK_THROWS_AS(rt::reinitialize_params(m, {"s"}, "he_uniform", 1), ModelError);
  m.graph.initializers["scale"] = floats("scale", {2, 2}, {1, 1, 1, 1});
  m.graph.nodes.push_back(node("mul", "Mul", {"y", "scale"}, {"z"}, 14));
  CHECK_THROWS_WITH_AS(rt::reinitialize_params(m, {"scale"}, "he_uniform", 1),
                       doctest::Contains("not the weight"), ModelError);
  CHECK_THROWS_AS(rt::reinitialize_params(m, {"W1"}, "lecun_normal", 1), ConfigError);
  CHECK_THROWS_AS(rt::reinitialize_params(m, {}, "he_uniform", 1), ConfigError);
}

TEST_CASE("transform: zero_init_buggy re-initialised runs, with distinct hidden units") {
  ir::Model m = conv::import_model(kBenchmark + "zero_init_buggy/model.onnx");
  rt::reinitialize_params(m, {"0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"},
                            "he_uniform", 23);
  const auto& w = m.graph.initializers.at("2.weight").floats;
  CHECK(std::count(w.begin(), w.end(), 0.f) == 0);
  const auto out = run_random(m);
  REQUIRE(out.size() == 6);
  CHECK(out[0] + out[1] + out[2] == doctest::Approx(1.0));
  CHECK(out[0] != out[1]);
}
