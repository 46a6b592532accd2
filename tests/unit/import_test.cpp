// Converter tests on ModelProtos built in code: valid models, each kind of invalid
// model with the error it must produce, opset upgrade, tensor files, saving.
#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>
#include <string>
#include <vector>

#include "converter/errors.h"
#include "converter/import.h"

namespace {

namespace fs = std::filesystem;
using dl::ModelError;
using dl::conv::import_model_bytes;

constexpr int64_t kBatch = -1;  // a symbolic "batch" dimension in make_value

onnx::ValueInfoProto make_value(const std::string& name, std::vector<int64_t> dims,
                                int elem = onnx::TensorProto::FLOAT) {
  onnx::ValueInfoProto v;
  v.set_name(name);
  auto* t = v.mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem);
  auto* shape = t->mutable_shape();
  for (int64_t d : dims) {
    if (d == kBatch) shape->add_dim()->set_dim_param("batch");
    else shape->add_dim()->set_dim_value(d);
  }
  return v;
}

onnx::TensorProto raw_floats(const std::string& name, std::vector<int64_t> dims, const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  return t;
}

onnx::TensorProto typed_floats(const std::string& name, std::vector<int64_t> dims, const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  for (float v : values) t.add_float_data(v);
  return t;
}

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, const std::string& name,
                          std::vector<std::string> inputs, std::vector<std::string> outputs) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

onnx::ModelProto empty_model(int64_t opset) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.set_producer_name("import_test");
  m.set_producer_version("1");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  m.mutable_graph()->set_name("g");
  return m;
}

// x[batch,4] -> fc1 (Gemm) -> h -> unnamed Relu -> r -> fc2 (Gemm) -> y[batch,2].
// W1, W2 in raw_data, B1, B2 in float_data.
onnx::ModelProto mlp(int64_t opset = 13) {
  onnx::ModelProto m = empty_model(opset);
  auto* g = m.mutable_graph();
  *g->add_input() = make_value("x", {kBatch, 4});
  std::vector<float> w1(12), w2(6);
  for (size_t i = 0; i < w1.size(); ++i) w1[i] = 0.1f * static_cast<float>(i);
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = -0.5f + 0.25f * static_cast<float>(i);
  *g->add_initializer() = raw_floats("W1", {4, 3}, w1);
  *g->add_initializer() = typed_floats("B1", {3}, {1, 2, 3});
  *g->add_initializer() = raw_floats("W2", {3, 2}, w2);
  *g->add_initializer() = typed_floats("B2", {2}, {0.5f, -0.5f});
  add_node(g, "Gemm", "fc1", {"x", "W1", "B1"}, {"h"});
  add_node(g, "Relu", "", {"h"}, {"r"});
  add_node(g, "Gemm", "fc2", {"r", "W2", "B2"}, {"y"});
  *g->add_output() = make_value("y", {kBatch, 2});
  return m;
}

std::string bytes_of(const onnx::ModelProto& m) { return m.SerializeAsString(); }

std::string error_of(const std::string& bytes, const dl::conv::ImportOptions& options = {}) {
  try {
    import_model_bytes(bytes, "m.onnx", options);
  } catch (const ModelError& e) {
    return e.what();
  }
  return "(no error)";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("dl_import_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

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

TEST_CASE("import: a node input nobody produces names the node and the value") {
  onnx::ModelProto proto = mlp();
  proto.mutable_graph()->mutable_initializer()->DeleteSubrange(0, 1);  // drop W1
  const std::string e = error_of(bytes_of(proto));
  CHECK(contains(e, "m.onnx: node 'fc1' (Gemm) input 'W1'"));
}

TEST_CASE("import: a cycle is an error listing its nodes") {
  onnx::ModelProto proto = empty_model(13);
  auto* g = proto.mutable_graph();
  *g->add_input() = make_value("x", {2});
  add_node(g, "Add", "start", {"x", "b"}, {"a"});
  add_node(g, "Relu", "r", {"a"}, {"b"});
  add_node(g, "Neg", "out", {"a"}, {"y"});
  *g->add_output() = make_value("y", {2});
  const std::string e = error_of(bytes_of(proto));
  CHECK(contains(e, "cycle"));
  CHECK(contains(e, "'start'"));
  CHECK(contains(e, "'r'"));
  CHECK_FALSE(contains(e, "'out'"));  // downstream of the cycle, not on it
}

TEST_CASE("import: nodes out of order are sorted, including subgraph reads") {
  onnx::ModelProto proto = mlp();
  auto* nodes = proto.mutable_graph()->mutable_node();
  nodes->SwapElements(0, 2);  // fc2, Relu, fc1
  const dl::ir::Model m = import_model_bytes(bytes_of(proto), "m.onnx");
  REQUIRE(m.graph.nodes.size() == 3);
  CHECK(m.graph.nodes[0].name == "fc1");
  CHECK(m.graph.nodes[1].name == "Relu_1");  // named by its position in the file
  CHECK(m.graph.nodes[2].name == "fc2");

  // An If whose branches read "v", produced by a node listed after it.
  onnx::ModelProto with_if = empty_model(13);
  auto* g = with_if.mutable_graph();
  *g->add_input() = make_value("cond", {}, onnx::TensorProto::BOOL);
  *g->add_input() = make_value("x", {2});
  auto* branch_node = add_node(g, "If", "choose", {"cond"}, {"y"});
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* attr = branch_node->add_attribute();
    attr->set_name(branch);
    attr->set_type(onnx::AttributeProto::GRAPH);
    auto* sub = attr->mutable_g();
    sub->set_name(branch);
    add_node(sub, "Identity", std::string(branch) + "_id", {"v"}, {std::string(branch) + "_out"});
    *sub->add_output() = make_value(std::string(branch) + "_out", {2});
  }
  add_node(g, "Relu", "make_v", {"x"}, {"v"});
  *g->add_output() = make_value("y", {2});
  const dl::ir::Model mi = import_model_bytes(bytes_of(with_if), "if.onnx");
  REQUIRE(mi.graph.nodes.size() == 2);
  CHECK(mi.graph.nodes[0].name == "make_v");
  CHECK(mi.graph.nodes[1].name == "choose");
  CHECK(mi.graph.nodes[1].attrs.at("then_branch").kind == dl::ir::Attribute::Kind::kOther);

  // A subgraph reading a value that does not exist anywhere.
  g->mutable_node(1)->set_output(0, "w");
  const std::string e = error_of(bytes_of(with_if));
  CHECK(contains(e, "node 'choose' (If) uses 'v' inside a subgraph"));
}

TEST_CASE("import: a value produced twice, and an output nobody produces") {
  onnx::ModelProto twice = mlp();
  twice.mutable_graph()->mutable_node(2)->set_output(0, "h");
  const std::string e = error_of(bytes_of(twice));
  CHECK(contains(e, "'h' is produced twice"));
  CHECK(contains(e, "'fc1'"));
  CHECK(contains(e, "'fc2'"));

  onnx::ModelProto shadow = mlp();
  shadow.mutable_graph()->mutable_node(0)->set_output(0, "x");
  CHECK(contains(error_of(bytes_of(shadow)), "node 'fc1' (Gemm) output 'x' has the same name as a graph input"));

  onnx::ModelProto orphan = mlp();
  *orphan.mutable_graph()->add_output() = make_value("z", {2});
  CHECK(contains(error_of(bytes_of(orphan)), "graph output 'z' is not produced"));
}

TEST_CASE("import: opsets") {
  SUBCASE("an ONNX op the runtime may not support imports; the runtime reports it") {
    onnx::ModelProto proto = empty_model(13);
    auto* g = proto.mutable_graph();
    *g->add_input() = make_value("x", {3, 3});
    add_node(g, "Det", "det", {"x"}, {"y"});
    *g->add_output() = make_value("y", {});
    const dl::ir::Model m = import_model_bytes(bytes_of(proto), "m.onnx");
    CHECK(m.graph.nodes[0].op_type == "Det");
    CHECK(m.graph.nodes[0].since_version == 11);
  }
  SUBCASE("an op of a custom domain imports with since_version 0") {
    onnx::ModelProto proto = empty_model(13);
    auto* custom = proto.add_opset_import();
    custom->set_domain("com.example");
    custom->set_version(1);
    auto* g = proto.mutable_graph();
    *g->add_input() = make_value("x", {2});
    add_node(g, "Swish", "s", {"x"}, {"y"})->set_domain("com.example");
    *g->add_output() = make_value("y", {2});
    const dl::ir::Model m = import_model_bytes(bytes_of(proto), "m.onnx");
    CHECK(m.graph.nodes[0].domain == "com.example");
    CHECK(m.graph.nodes[0].since_version == 0);
  }
  SUBCASE("an unknown op in the ONNX domain fails the checker") {
    onnx::ModelProto proto = mlp();
    proto.mutable_graph()->mutable_node(1)->set_op_type("NoSuchOp");
    const std::string e = error_of(bytes_of(proto));
    CHECK(contains(e, "m.onnx: invalid ONNX model"));
    CHECK(contains(e, "NoSuchOp"));
  }
  SUBCASE("opset 99 is too new") {
    CHECK(error_of(bytes_of(mlp(99))) == "m.onnx: opset 99 is newer than this deeplocalize supports (max " +
                                             std::to_string(dl::conv::max_known_opset()) + ")");
    CHECK(dl::conv::max_known_opset() >= 17);
  }
  SUBCASE("no default-domain opset") {
    onnx::ModelProto proto = mlp();
    proto.mutable_opset_import(0)->set_domain("com.example");
    CHECK(contains(error_of(bytes_of(proto)), "m.onnx: the model imports no opset for the default ONNX domain"));
  }
  SUBCASE("opset 11 is upgraded to 13, keeping names, weights and metadata") {
    onnx::ModelProto proto = mlp(11);
    auto* meta = proto.add_metadata_props();
    meta->set_key("deeplocalize.epochs");
    meta->set_value("3");
    const dl::ir::Model m = import_model_bytes(bytes_of(proto), "m.onnx");
    CHECK(m.original_opset == 11);
    CHECK(m.opset == 13);
    CHECK(m.metadata.at("deeplocalize.epochs") == "3");
    REQUIRE(m.graph.nodes.size() == 3);
    CHECK(m.graph.nodes[0].name == "fc1");
    CHECK(m.graph.nodes[1].name == "Relu_1");
    CHECK(m.graph.nodes[0].since_version == 13);
    CHECK(m.graph.initializers.at("W1").floats[11] == doctest::Approx(1.1f));
    CHECK(m.graph.initializers.at("B2").floats == std::vector<float>{0.5f, -0.5f});
    REQUIRE(m.graph.inputs.size() == 1);
    CHECK(m.graph.inputs[0].dims[0].param == "batch");

    dl::conv::ImportOptions keep;
    keep.upgrade_opset = false;
    const dl::ir::Model kept = import_model_bytes(bytes_of(proto), "m.onnx", keep);
    CHECK(kept.opset == 11);
    CHECK(kept.graph.nodes[0].since_version == 11);
  }
}

TEST_CASE("import: a declared shape that contradicts the ops is an error") {
  onnx::ModelProto proto = mlp();
  *proto.mutable_graph()->mutable_output(0) = make_value("y", {kBatch, 5});
  const std::string e = error_of(bytes_of(proto));
  CHECK(contains(e, "m.onnx: a declared type or shape contradicts"));
  CHECK(contains(e, "fc2"));
}

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
  CHECK_FALSE(fs::exists(dir.file("out.onnx.tmp")));

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
