// Converter tests on bytes and files: bytes that are not a model, model files, backend test
// data (load_tensor_file), and saving a model with new weights and metadata.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "import_fixtures.h"

namespace {

using namespace dl::test::onnx_build;

}  // namespace

TEST_CASE("import: bytes that are not an ONNX model") {
  const std::string good = bytes_of(mlp());
  for (size_t cut : {good.size() / 2, good.size() - 3, size_t{1}}) {
    CAPTURE(cut);
    CHECK(contains(error_of(good.substr(0, cut)), "m.onnx: not an ONNX model ("));
  }
  std::mt19937 rng(42);
  for (int trial = 0; trial < 20; ++trial) {
    std::string garbage(1 + rng() % 4096, '\0');
    for (char& c : garbage) c = static_cast<char>(rng());
    CHECK(contains(error_of(garbage), "m.onnx: not an ONNX model ("));
  }
  CHECK(contains(error_of(""), "not an ONNX model (the file is empty)"));
  onnx::ModelProto no_graph = mlp();
  no_graph.clear_graph();
  CHECK(contains(error_of(bytes_of(no_graph)), "not an ONNX model (no graph)"));
}

TEST_CASE("import: files") {
  TempDir dir;
  CHECK_THROWS_WITH_AS(dl::conv::import_model(dir.file("missing.onnx")),
                       doctest::Contains("missing.onnx: cannot open (No such file or directory)"), ModelError);
  CHECK_THROWS_WITH_AS(dl::conv::import_model(dir.path.string()), doctest::Contains("cannot read"), ModelError);
  write_file(dir.file("mlp.onnx"), bytes_of(mlp()));
  const dl::ir::Model m = dl::conv::import_model(dir.file("mlp.onnx"));
  CHECK(m.path == dir.file("mlp.onnx"));
  CHECK(m.graph.nodes.size() == 3);
}

TEST_CASE("load_tensor_file: backend test data") {
  TempDir dir;
  write_file(dir.file("input_0.pb"), raw_floats("x", {2, 2}, {1, 2, 3, 4}).SerializeAsString());
  const dl::ir::TensorData x = dl::conv::load_tensor_file(dir.file("input_0.pb"));
  CHECK(x.name == "x");
  CHECK(x.dims == std::vector<int64_t>{2, 2});
  CHECK(x.floats == std::vector<float>{1, 2, 3, 4});

  onnx::TensorProto ints;
  ints.set_data_type(onnx::TensorProto::INT64);
  ints.add_dims(3);
  for (int64_t v : {4, -5, 6}) ints.add_int64_data(v);
  write_file(dir.file("output_0.pb"), ints.SerializeAsString());
  CHECK(dl::conv::load_tensor_file(dir.file("output_0.pb")).ints == std::vector<int64_t>{4, -5, 6});

  onnx::TensorProto half;
  half.set_name("h");
  half.set_data_type(onnx::TensorProto::FLOAT16);
  half.add_dims(1);
  half.add_int32_data(0x3c00);
  write_file(dir.file("input_1.pb"), half.SerializeAsString());
  CHECK_THROWS_WITH_AS(dl::conv::load_tensor_file(dir.file("input_1.pb")),
                       doctest::Contains("input_1.pb: tensor 'h' has data type FLOAT16"), ModelError);

  write_file(dir.file("bad.pb"), std::string("\xff\xff\xff", 3));
  CHECK_THROWS_WITH_AS(dl::conv::load_tensor_file(dir.file("bad.pb")), doctest::Contains("bad.pb: not an ONNX TensorProto"),
                       ModelError);
}

TEST_CASE("save_model_with: replaces weights and metadata, then imports") {
  TempDir dir;
  onnx::ModelProto proto = mlp();
  auto* meta = proto.add_metadata_props();
  meta->set_key("deeplocalize.loss");
  meta->set_value("mse");
  write_file(dir.file("in.onnx"), bytes_of(proto));

  dl::ir::TensorData b1;  // typed float_data in the source, raw_data in the copy
  b1.dims = {3};
  b1.floats = {-1, -2, -3};
  dl::ir::TensorData w2;
  w2.dims = {3, 2};
  w2.floats = {6, 5, 4, 3, 2, 1};
  dl::conv::save_model_with(dir.file("in.onnx"), dir.file("out.onnx"), {{"B1", b1}, {"W2", w2}},
                            {{"deeplocalize.loss", "mae"}, {"deeplocalize.trained", "true"}});
  for (const auto& e : fs::directory_iterator(dir.path))  // in.onnx and out.onnx, no temporary file
    CHECK((e.path().filename() == "in.onnx" || e.path().filename() == "out.onnx"));

  const dl::ir::Model m = dl::conv::import_model(dir.file("out.onnx"));
  CHECK(m.graph.initializers.at("B1").floats == b1.floats);
  CHECK(m.graph.initializers.at("W2").floats == w2.floats);
  CHECK(m.graph.initializers.at("B2").floats == std::vector<float>{0.5f, -0.5f});
  CHECK(m.metadata.at("deeplocalize.loss") == "mae");
  CHECK(m.metadata.at("deeplocalize.trained") == "true");
  CHECK(m.metadata.size() == 2);
  CHECK(m.graph.nodes.size() == 3);

  dl::ir::TensorData wrong_dims = w2;
  wrong_dims.dims = {2, 3};
  CHECK_THROWS_WITH_AS(dl::conv::save_model_with(dir.file("in.onnx"), dir.file("o2.onnx"), {{"W2", wrong_dims}}, {}),
                       doctest::Contains("initializer 'W2' has other dims"), ModelError);
  CHECK_THROWS_WITH_AS(dl::conv::save_model_with(dir.file("in.onnx"), dir.file("o2.onnx"), {{"nope", w2}}, {}),
                       doctest::Contains("no initializer named 'nope'"), ModelError);
  CHECK_FALSE(fs::exists(dir.file("o2.onnx")));
  CHECK_THROWS_AS(dl::conv::save_model_with(dir.file("in.onnx"), dir.file("no/such/dir/o.onnx"), {}, {}),
                  dl::ConfigError);
}
