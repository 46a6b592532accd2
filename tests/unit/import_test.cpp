// Converter tests on ModelProtos built in code (import_fixtures.h): a valid model, attributes
// and initializers of every kind, and bad initializers with the error each must produce.
// Graph structure and opsets: import_graph_test.cpp; files, bytes, saving:
// import_files_test.cpp.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "import_fixtures.h"

namespace {

using namespace dl::test::onnx_build;

}  // namespace

TEST_CASE("import: a small MLP with a symbolic batch dimension") {
  onnx::ModelProto proto = mlp();
  auto* meta = proto.add_metadata_props();
  meta->set_key("deeplocalize.loss");
  meta->set_value("mse");
  const dl::ir::Model m = import_model_bytes(bytes_of(proto), "mlp.onnx");

  CHECK(m.path == "mlp.onnx");
  CHECK(m.ir_version == 7);
  CHECK(m.opset == 13);
  CHECK(m.original_opset == 13);
  CHECK(m.producer_name == "import_test");
  CHECK(m.metadata.at("deeplocalize.loss") == "mse");
  CHECK(m.warnings.empty());
  CHECK(m.graph.name == "g");

  REQUIRE(m.graph.inputs.size() == 1);  // initializers are not inputs
  const auto& x = m.graph.inputs[0];
  CHECK(x.name == "x");
  CHECK(x.dtype == dl::ir::DType::kFloat32);
  REQUIRE(x.has_shape);
  REQUIRE(x.dims.size() == 2);
  CHECK_FALSE(x.dims[0].known());
  CHECK(x.dims[0].param == "batch");
  CHECK(x.dims[1].value == 4);
  REQUIRE(m.graph.outputs.size() == 1);
  CHECK(m.graph.outputs[0].name == "y");

  REQUIRE(m.graph.nodes.size() == 3);
  CHECK(m.graph.nodes[0].name == "fc1");
  CHECK(m.graph.nodes[1].name == "Relu_1");
  CHECK(m.graph.nodes[2].name == "fc2");
  CHECK(m.graph.nodes[0].op_type == "Gemm");
  CHECK(m.graph.nodes[0].domain.empty());
  CHECK(m.graph.nodes[0].since_version == 13);
  CHECK(m.graph.nodes[1].since_version == 13);
  CHECK(m.graph.nodes[0].inputs == std::vector<std::string>{"x", "W1", "B1"});
  CHECK(m.graph.nodes[0].outputs == std::vector<std::string>{"h"});

  // Shape inference fills in the intermediate values.
  REQUIRE(m.graph.value_info.count("h"));
  const auto& h = m.graph.value_info.at("h");
  REQUIRE(h.dims.size() == 2);
  CHECK(h.dims[0].param == "batch");
  CHECK(h.dims[1].value == 3);

  REQUIRE(m.graph.initializers.size() == 4);
  const auto& w1 = m.graph.initializers.at("W1");
  CHECK(w1.dtype == dl::ir::DType::kFloat32);
  CHECK(w1.dims == std::vector<int64_t>{4, 3});
  CHECK(w1.numel() == 12);
  REQUIRE(w1.floats.size() == 12);
  CHECK(w1.floats[11] == doctest::Approx(1.1f));
  CHECK(m.graph.initializers.at("B1").floats == std::vector<float>{1, 2, 3});
}

TEST_CASE("import: attributes of every kind") {
  onnx::ModelProto proto = mlp();
  auto* fc1 = proto.mutable_graph()->mutable_node(0);
  auto* alpha = fc1->add_attribute();
  alpha->set_name("alpha");
  alpha->set_type(onnx::AttributeProto::FLOAT);
  alpha->set_f(0.5f);
  auto* trans = fc1->add_attribute();
  trans->set_name("transB");
  trans->set_type(onnx::AttributeProto::INT);
  trans->set_i(0);
  auto* g = proto.mutable_graph();
  auto* c = add_node(g, "Constant", "c", {}, {"c_out"});
  auto* value = c->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  *value->mutable_t() = typed_floats("", {2}, {7, 8});
  *g->add_output() = make_value("c_out", {2});

  const dl::ir::Model m = import_model_bytes(bytes_of(proto), "m.onnx");
  using Kind = dl::ir::Attribute::Kind;
  const auto& attrs = m.graph.nodes[0].attrs;
  CHECK(attrs.at("alpha").kind == Kind::kFloat);
  CHECK(attrs.at("alpha").f == 0.5f);
  CHECK(attrs.at("transB").kind == Kind::kInt);
  CHECK(attrs.at("transB").i == 0);
  const auto& constant = m.graph.nodes.back();
  CHECK(constant.name == "c");
  CHECK(constant.attrs.at("value").kind == Kind::kTensor);
  CHECK(constant.attrs.at("value").t.floats == std::vector<float>{7, 8});
}

TEST_CASE("import: initializers of every supported data type, raw and typed") {
  onnx::ModelProto proto = mlp();
  auto* g = proto.mutable_graph();
  auto add = [&](const std::string& name, int type) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    t->add_dims(2);
    return t;
  };
  const double d[2] = {1.5, -2.25};
  add("f64_raw", onnx::TensorProto::DOUBLE)->set_raw_data(std::string(reinterpret_cast<const char*>(d), sizeof d));
  auto* f64 = add("f64_typed", onnx::TensorProto::DOUBLE);
  f64->add_double_data(3.0);
  f64->add_double_data(4.0);
  const int64_t i64[2] = {-7, 1LL << 40};
  add("i64_raw", onnx::TensorProto::INT64)->set_raw_data(std::string(reinterpret_cast<const char*>(i64), sizeof i64));
  auto* i64t = add("i64_typed", onnx::TensorProto::INT64);
  i64t->add_int64_data(5);
  i64t->add_int64_data(6);
  auto* i32 = add("i32", onnx::TensorProto::INT32);
  i32->add_int32_data(-3);
  i32->add_int32_data(4);
  add("b", onnx::TensorProto::BOOL)->set_raw_data(std::string("\x01\x00", 2));
  add("u8", onnx::TensorProto::UINT8)->set_raw_data(std::string("\xff\x01", 2));
  add("i8", onnx::TensorProto::INT8)->set_raw_data(std::string("\xff\x01", 2));

  const dl::ir::Model m = import_model_bytes(bytes_of(proto), "m.onnx");
  const auto& in = m.graph.initializers;
  CHECK(in.at("f64_raw").dtype == dl::ir::DType::kFloat64);
  CHECK(in.at("f64_raw").floats == std::vector<float>{1.5f, -2.25f});
  CHECK(in.at("f64_typed").floats == std::vector<float>{3, 4});
  CHECK(in.at("i64_raw").dtype == dl::ir::DType::kInt64);
  CHECK(in.at("i64_raw").ints == std::vector<int64_t>{-7, 1LL << 40});
  CHECK(in.at("i64_typed").ints == std::vector<int64_t>{5, 6});
  CHECK(in.at("i32").dtype == dl::ir::DType::kInt32);
  CHECK(in.at("i32").ints == std::vector<int64_t>{-3, 4});
  CHECK(in.at("b").dtype == dl::ir::DType::kBool);
  CHECK(in.at("b").ints == std::vector<int64_t>{1, 0});
  CHECK(in.at("u8").ints == std::vector<int64_t>{255, 1});
  CHECK(in.at("i8").ints == std::vector<int64_t>{-1, 1});
}

TEST_CASE("import: bad initializers are errors naming the initializer") {
  SUBCASE("unsupported data type") {
    onnx::ModelProto proto = mlp();
    auto* t = proto.mutable_graph()->add_initializer();
    t->set_name("half");
    t->set_data_type(onnx::TensorProto::FLOAT16);
    t->add_dims(1);
    t->add_int32_data(0);
    const std::string e = error_of(bytes_of(proto));
    CHECK(contains(e, "m.onnx: initializer 'half'"));
    CHECK(contains(e, "FLOAT16"));
  }
  SUBCASE("raw_data of the wrong size") {
    onnx::ModelProto proto = mlp();
    proto.mutable_graph()->mutable_initializer(0)->mutable_raw_data()->resize(44);
    const std::string e = error_of(bytes_of(proto));
    CHECK(contains(e, "initializer 'W1'"));
    CHECK(contains(e, "44 bytes"));
  }
  SUBCASE("negative dimension") {
    onnx::ModelProto proto = mlp();
    auto* t = proto.mutable_graph()->add_initializer();
    t->set_name("neg");
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(-2);
    CHECK(contains(error_of(bytes_of(proto)), "'neg'"));
  }
  SUBCASE("external data") {
    onnx::ModelProto proto = mlp();
    auto* t = proto.mutable_graph()->mutable_initializer(0);
    t->clear_raw_data();
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* loc = t->add_external_data();
    loc->set_key("location");
    loc->set_value("weights.bin");
    const std::string e = error_of(bytes_of(proto));
    CHECK(contains(e, "m.onnx: initializer 'W1'"));
    CHECK(contains(e, "external"));
  }
}
