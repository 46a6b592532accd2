// Parameters decided by the ops (runtime/param_roles.h): roles from Op::param_role,
// tied initializers, embedding tables trained through Gather, int64 ids from data files.
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/model_view.h"
#include "converter/errors.h"
#include "runtime/attrs.h"
#include "runtime/param_roles.h"
#include "runtime/registry.h"
#include "runtime/trainer.h"
#include "tests/unit/transform_fixtures.h"

using namespace dl;
using namespace dl::test;
using K = rt::ParamRole::Kind;

namespace {

// ids[N, 4] int64 -> Gather(E [6, 3]) -> ReduceMean over the sequence -> Gemm -> logits [N, 2].
ir::Model embedding_model() {
  ir::Model m;
  m.path = "embedding";
  m.ir_version = 8;
  m.opset = m.original_opset = 13;
  ir::Graph& g = m.graph;
  ir::ValueInfo ids = vinfo("ids", {-1, 4});
  ids.dtype = ir::DType::kInt64;
  g.inputs = {ids};
  g.outputs = {vinfo("logits", {-1, 2})};
  std::vector<float> table(18);
  for (size_t k = 0; k < table.size(); ++k) table[k] = 0.1f * float(k % 7) - 0.3f;
  g.initializers["E"] = floats("E", {6, 3}, table);
  g.initializers["W"] = floats("W", {2, 3}, {0.5f, -0.4f, 0.3f, -0.2f, 0.6f, 0.1f});
  g.initializers["b"] = floats("b", {2}, {0, 0});
  g.nodes.push_back(node("emb", "Gather", {"E", "ids"}, {"e"}, 13));
  g.nodes.push_back(node("pool", "ReduceMean", {"e"}, {"m"}, 13));
  g.nodes.back().attrs["axes"] = ints_attr({1});
  g.nodes.back().attrs["keepdims"] = attr_i(0);
  g.nodes.push_back(node("fc", "Gemm", {"m", "W", "b"}, {"logits"}, 13));
  g.nodes.back().attrs["transB"] = attr_i(1);
  return m;
}

std::string temp_csv(const std::string& name, const std::string& text) {
  const std::string path = (fs::temp_directory_path() / (name + "_" + std::to_string(getpid()) + ".csv")).string();
  std::ofstream(path) << text;
  return path;
}

rt::DatasetSpec ids_spec() {
  rt::DatasetSpec spec;
  spec.sample_shape = {4};
  spec.input_name = "ids";
  spec.output_width = 2;
  spec.encoding = rt::DatasetSpec::Encoding::kSparse;
  return spec;
}

rt::TrainConfig sgd_config() {
  rt::TrainConfig c;
  c.loss = "sparse_categorical_crossentropy";
  c.from_logits = true;
  c.optimizer.name = "sgd";
  c.optimizer.learning_rate = 0.5;
  c.epochs = 3;
  c.batch_size = 4;
  return c;
}

// Ids 0..3 only: rows 4 and 5 of the table are never used.
const char* kIdsCsv =
    "t0,t1,t2,t3,label\n0,1,2,3,0\n3,2,1,0,1\n0,0,1,1,0\n2,3,3,2,1\n1,0,3,2,0\n2,2,0,1,1\n";

std::unique_ptr<rt::Op> op_for(const std::string& type, std::map<std::string, ir::Attribute> attrs = {},
                               int since = 0) {
  ir::Node n = rt::sample_node(type, 3, 1, std::move(attrs), since);
  return rt::make_op(n);
}

}  // namespace

TEST_CASE("param roles: each op reports which inputs are its parameters") {
  auto gemm = op_for("Gemm", {{"transB", attr_i(1)}});
  CHECK(gemm->param_role(0, {4, 3}).kind == K::kWeight);  // an initializer A is a weight too
  const rt::ParamRole w = gemm->param_role(1, {5, 3});     // B^T [N, K]
  CHECK(w.kind == K::kWeight);
  CHECK(w.fan_in == 3);
  CHECK(w.fan_out == 5);
  CHECK(gemm->param_role(2, {5}).kind == K::kBias);
  CHECK(op_for("Gemm")->param_role(1, {5, 3}).fan_in == 5);  // B [K, N]

  auto conv = op_for("Conv");
  const rt::ParamRole k = conv->param_role(1, {8, 2, 3, 3});
  CHECK(k.kind == K::kWeight);
  CHECK(k.fan_in == 18);
  CHECK(k.fan_out == 72);
  CHECK(conv->param_role(2, {8}).kind == K::kBias);
  CHECK(conv->param_role(0, {1, 2, 5, 5}).kind == K::kNone);

  ir::Node bn_node = rt::sample_node("BatchNormalization", 5, 1, {}, 15);
  auto bn = rt::make_op(bn_node);
  CHECK(bn->param_role(0, {2, 3}).kind == K::kNone);
  CHECK(bn->param_role(1, {3}).kind == K::kScale);
  CHECK(bn->param_role(2, {3}).kind == K::kBias);
  CHECK(bn->param_role(3, {3}).kind == K::kRunningMean);
  CHECK(bn->param_role(4, {3}).kind == K::kRunningVar);
  CHECK_FALSE(bn->param_role(3, {3}).trainable());

  auto ln = op_for("LayerNormalization", {}, 17);
  CHECK(ln->param_role(1, {4}).kind == K::kScale);
  CHECK(ln->param_role(2, {4}).kind == K::kBias);
  CHECK(ln->param_role(0, {2, 4}).kind == K::kNone);

  ir::Node g_node = rt::sample_node("Gather", 2);
  auto gather = rt::make_op(g_node);
  const rt::ParamRole e = gather->param_role(0, {100, 16});
  CHECK(e.kind == K::kEmbedding);
  CHECK(e.trainable());
  CHECK(e.fan_in == 100);
  CHECK(e.fan_out == 16);
  CHECK(gather->param_role(1, {4}).kind == K::kNone);

  // Ops without parameters claim none.
  CHECK(op_for("Add")->param_role(1, {3}).kind == K::kNone);
  CHECK(op_for("Relu")->param_role(0, {3}).kind == K::kNone);
}

TEST_CASE("param roles: the model's parameters, the bias after MatMul, running statistics") {
  ir::Model m = mlp();
  auto params = rt::model_params(m);
  REQUIRE(params.size() == 4);
  CHECK(params.at("W1").role.kind == K::kWeight);
  CHECK(params.at("b1").role.kind == K::kBias);
  CHECK_FALSE(params.at("W1").tied());
  // MatMul + Add: the added initializer is the MatMul's bias.
  m.graph.nodes[1] = node("fc2", "MatMul", {"h", "W2t"}, {"z"}, 13);
  m.graph.initializers["W2t"] = floats("W2t", {3, 2}, std::vector<float>(6, 0.5f));
  m.graph.nodes.push_back(node("add", "Add", {"z", "b2"}, {"y"}, 14));
  params = rt::model_params(m);
  CHECK(params.at("W2t").role.fan_in == 3);
  CHECK(params.at("b2").role.kind == K::kBias);
  CHECK(params.count("W2") == 0);  // no longer read by anything
}

TEST_CASE("param roles: tied initializers, directly and through Identity aliases") {
  ir::Model m = mlp();
  // fc2 reads fc1's bias-free weight through an Identity, as eval-mode exports
  // deduplicate identical initializers.
  m.graph.initializers["W2"] = floats("W2", {3, 3}, std::vector<float>(9, 0.1f));
  m.graph.initializers["W1"] = floats("W1", {3, 2}, std::vector<float>(6, 0.1f));
  m.graph.nodes.insert(m.graph.nodes.begin(), node("alias", "Identity", {"W1"}, {"W1_alias"}, 16));
  m.graph.nodes.push_back(node("fc3", "Gemm", {"y", "W1_alias"}, {"y3"}, 13));
  m.graph.nodes.back().attrs["transB"] = attr_i(0);
  m.graph.outputs = {vinfo("y3", {-1, 2})};
  m.graph.nodes[2].inputs[1] = "W2";
  m.graph.nodes[2].outputs = {"y"};
  m.graph.value_info["y"] = vinfo("y", {-1, 3});
  m.graph.initializers["b2"] = floats("b2", {3}, {0, 0, 0});
  auto params = rt::model_params(m);
  REQUIRE(params.count("W1"));
  const rt::ModelParam& w1 = params.at("W1");
  CHECK(w1.tied());
  REQUIRE(w1.uses.size() == 2);
  CHECK(w1.uses[0].node == "fc1");
  CHECK(w1.uses[1].node == "fc3");
  CHECK(w1.aliases == std::vector<std::string>{"W1_alias"});
  CHECK_FALSE(params.at("W2").tied());
  const auto notes = rt::tied_param_notes(params);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] == "'W1' (weight) is read by 'fc1' (Gemm) and 'fc3' (Gemm) (also as 'W1_alias')");

  // inspect shows it, and counts the tied tensor once.
  std::ostringstream out;
  cli::print_inspect(m, out);
  INFO(out.str());
  CHECK(out.str().find("tied parameters (1)") != std::string::npos);
  CHECK(out.str().find("'W1' (weight) is read by 'fc1' (Gemm) and 'fc3' (Gemm)") != std::string::npos);
  CHECK(out.str().find("parameters: 21 in 4 tensors") != std::string::npos);  // W1 6 + b1 3 + W2 9 + b2 3
}

TEST_CASE("embedding: Gather of an initializer by int64 ids trains the rows used") {
  const ir::Model m = embedding_model();
  auto params = rt::model_params(m);
  REQUIRE(params.count("E"));
  CHECK(params.at("E").role.kind == K::kEmbedding);
  CHECK(params.at("E").trainable());

  std::ostringstream out;
  cli::print_inspect(m, out);
  INFO(out.str());
  CHECK(out.str().find("input    ids: int64 [N, 4]") != std::string::npos);
  CHECK(out.str().find("parameters: 26 in 3 tensors") != std::string::npos);  // E 18 + W 6 + b 2
  CHECK(out.str().find("emb, pool") != std::string::npos);  // the embedding starts the first layer

  const std::string csv = temp_csv("ids", kIdsCsv);
  rt::Dataset data = rt::load_dataset(csv, ids_spec());
  std::remove(csv.c_str());
  rt::Trainer trainer(m, sgd_config(), data, rt::Dataset{});
  bool has_table = false;
  for (const rt::Param& p : trainer.graph().params()) has_table = has_table || p.name == "E";
  CHECK(has_table);
  REQUIRE(trainer.graph().layers().size() == 2);
  CHECK(trainer.graph().layers()[0].params == std::vector<std::string>{"E"});
  const std::vector<float> before = trainer.store()->values.at("E").fvec();
  const rt::TrainResult r = trainer.run();
  CHECK(r.iterations == 6);
  CHECK(r.loss.back() < r.loss.front());
  const std::vector<float>& after = trainer.store()->values.at("E").fvec();
  for (size_t row = 0; row < 6; ++row) {
    bool changed = false;
    for (size_t c = 0; c < 3; ++c) changed = changed || after[row * 3 + c] != before[row * 3 + c];
    INFO("row " << row);
    CHECK(changed == (row < 4));  // only ids 0..3 occur in the data
  }
}

TEST_CASE("embedding: ids that are not integers are a data error naming the cell") {
  const ir::Model m = embedding_model();
  const std::string csv = temp_csv("bad_ids", "t0,t1,t2,t3,label\n0,1,2,3,0\n3,2.5,1,0,1\n");
  rt::Dataset data = rt::load_dataset(csv, ids_spec());
  std::remove(csv.c_str());
  CHECK_THROWS_WITH_AS(rt::Trainer(m, sgd_config(), data, rt::Dataset{}),
                       doctest::Contains(":3:2: value 2.5 is not an integer, but the model input 'ids' is int64"),
                       DataError);
  const std::string big = temp_csv("big_ids", "t0,t1,t2,t3,label\n0,1,2,30000000,0\n");
  rt::Dataset data2 = rt::load_dataset(big, ids_spec());
  std::remove(big.c_str());
  CHECK_THROWS_WITH_AS(rt::Trainer(m, sgd_config(), data2, rt::Dataset{}),
                       doctest::Contains(":2:4: value 3e+07 is not an integer float32 holds exactly"), DataError);
}

TEST_CASE("embedding: an id outside the table stops training with a data error, not a crash") {
  const ir::Model m = embedding_model();
  const std::string csv = temp_csv("far_ids", "t0,t1,t2,t3,label\n0,1,2,3,0\n3,2,9,0,1\n");
  rt::Dataset data = rt::load_dataset(csv, ids_spec());
  std::remove(csv.c_str());
  rt::Trainer trainer(m, sgd_config(), data, rt::Dataset{});
  CHECK_THROWS_WITH_AS(trainer.run(), doctest::Contains(":3:3: id 9 is out of range: node 'emb' (Gather): index 9"), DataError);
}
