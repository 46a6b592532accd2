// Converter tests on the graph of ModelProtos built in code (import_fixtures.h): values
// nobody produces or produced twice, cycles, node order, opsets and their upgrade, declared
// shapes that contradict the ops.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "import_fixtures.h"

namespace {

using namespace dl::test::onnx_build;

}  // namespace

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
