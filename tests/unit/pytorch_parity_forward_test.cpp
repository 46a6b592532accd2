// Whole-model forward parity with PyTorch: the fixtures in tests/fixtures (made by
// gen_models.py, committed so this test needs no Python) are imported, planned for the
// golden batch, and must reproduce PyTorch's eval-mode outputs and the layer grouping
// computed from the exported graph.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "converter/import.h"
#include "runtime/graph.h"

namespace {

const std::string kFixtures = std::string(DL_SOURCE_DIR) + "/tests/fixtures/";

struct Golden {
  dl::rt::Shape shape;
  std::vector<float> values;
};

// Format: '#' comment lines; per tensor a header `<name> <rank> <dims...>` followed by
// numel whitespace-separated values.
std::map<std::string, Golden> read_golden(const std::string& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  std::stringstream body;
  std::string line;
  while (std::getline(in, line))
    if (line.empty() || line[0] != '#') body << line << '\n';
  std::map<std::string, Golden> out;
  std::string name;
  while (body >> name) {
    Golden g;
    size_t rank = 0;
    body >> rank;
    g.shape.resize(rank);
    for (auto& d : g.shape) body >> d;
    g.values.resize(static_cast<size_t>(dl::rt::shape_numel(g.shape)));
    for (auto& v : g.values) body >> v;
    REQUIRE_MESSAGE(!body.fail(), path << ": truncated tensor '" << name << "'");
    out[name] = std::move(g);
  }
  return out;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  return nlohmann::json::parse(in);
}

void check_layers(const dl::rt::ExecutionGraph& graph, const std::string& json_path) {
  const nlohmann::json expected = read_json(json_path)["layers"];
  const auto& layers = graph.layers();
  REQUIRE(layers.size() == expected.size());
  for (size_t k = 0; k < layers.size(); ++k) {
    INFO("layer " << k);
    CHECK(layers[k].index == static_cast<int>(k));
    CHECK(layers[k].nodes == expected[k]["nodes"].get<std::vector<std::string>>());
    CHECK(layers[k].params == expected[k]["params"].get<std::vector<std::string>>());
  }
}

void check_forward(const std::string& stem) {
  const auto model = dl::conv::import_model(kFixtures + stem + ".onnx");
  const auto golden = read_golden(kFixtures + stem + "_golden.txt");
  const Golden& x = golden.at("input");
  const Golden& y = golden.at("output");

  dl::rt::GraphOptions options;
  options.batch_size = x.shape[0];
  dl::rt::ExecutionGraph graph(model, options);
  check_layers(graph, kFixtures + stem + "_layers.json");

  REQUIRE(graph.input_names() == std::vector<std::string>{"input"});
  REQUIRE(graph.output_names() == std::vector<std::string>{"output"});
  dl::rt::Tensor& in = graph.input("input");
  REQUIRE(in.shape() == x.shape);
  in.fvec() = x.values;
  graph.forward();

  const dl::rt::Tensor& out = graph.output(0);
  REQUIRE(out.shape() == y.shape);
  int bad = 0;
  double worst = 0;
  for (size_t k = 0; k < y.values.size(); ++k) {
    const double a = out.fvec()[k], b = y.values[k];
    const double d = std::fabs(a - b);
    if (!(d <= 1e-5 + 1e-4 * std::fabs(b))) {
      if (bad++ < 5) MESSAGE("output[" << k << "] = " << a << ", PyTorch " << b);
      worst = std::isnan(d) ? d : std::max(worst, d);
    }
  }
  INFO(stem << ": max |diff| " << worst);
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("pytorch parity: MLP forward and layers") {
  check_forward("mlp");
  const auto model = dl::conv::import_model(kFixtures + "mlp.onnx");
  CHECK(model.metadata.at("deeplocalize.loss") == "categorical_crossentropy");
  CHECK(model.metadata.at("deeplocalize.optimizer") == "sgd");
  CHECK(model.metadata.at("deeplocalize.batch_size") == "16");
}

TEST_CASE("pytorch parity: CNN forward and layers (BN running stats, dynamic flatten)") {
  check_forward("cnn");
}
