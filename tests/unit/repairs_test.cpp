// Repairs as a registry (analysis/repair_list.def, analysis/repair_kinds.h,
// cli/repairs/<stem>.cpp): every kind is named, applied and documented once; a repair's
// changes are values (converter edits and RepairChange), so node names that look like the
// old prose ("x: y", "a), b") do not garble the report.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "analysis/repair_kinds.h"
#include "cli/fix_trials.h"
#include "cli/repairs/repair.h"
#include "converter/errors.h"
#include "converter/transform.h"
#include "fixes_test_util.h"
#include "tests/unit/transform_fixtures.h"

using namespace dl;
using Kind = an::FixAction::Kind;
using test::fixes::action;

namespace {

// A trace header naming the mlp fixture's two layers as the analysis would.
an::Trace mlp_trace(const ir::Model& m) {
  an::Trace t;
  for (int l = 0; l < 2; ++l) {
    an::LayerInfo info;
    info.index = l;
    info.nodes = {m.graph.nodes[static_cast<size_t>(l)].name};
    info.params = {"W" + std::to_string(l + 1), "b" + std::to_string(l + 1)};
    t.header.layers.push_back(info);
  }
  return t;
}

cli::LoadedCase mlp_case(ir::Model m) {
  cli::LoadedCase c;
  c.config.loss = "mse";
  c.config.optimizer.name = "sgd";
  c.config.optimizer.learning_rate = 0.5;
  c.model = std::make_shared<ir::Model>(std::move(m));
  return c;
}

}  // namespace

TEST_CASE("repairs: every kind of repair_list.def has one name, its fields and an apply function") {
  const auto& kinds = an::repair_kinds();
  REQUIRE(kinds.size() >= 9);
  std::set<std::string> names;
  for (size_t i = 0; i < kinds.size(); ++i) {
    const an::RepairKindInfo& k = kinds[i];
    CAPTURE(k.name);
    CHECK(static_cast<size_t>(k.kind) == i);  // the enum and the table come from one list
    CHECK(names.insert(k.name).second);
    CHECK(std::string(an::fix_kind_name(k.kind)) == k.name);
    CHECK(an::repair_kind_from(k.name) == k.kind);
    CHECK(static_cast<bool>(cli::repairs::apply_fn(k.kind)));
    CHECK(std::ifstream(std::string(DL_SOURCE_DIR) + "/cli/repairs/" + k.name + ".cpp").good());  // its file stem
    CHECK(std::string(k.doc).size() > 10);
    // A kind that edits one layer names it; the others never do.
    CHECK(((k.fields & an::kRepairLayer) != 0) == (k.scope == an::RepairKindInfo::Scope::kModel));
  }
  CHECK_FALSE(an::repair_kind_from("learning rate").has_value());
  CHECK_FALSE(an::repair_kind_from("").has_value());
}

TEST_CASE("repairs: docs/fixes.md's table of repair kinds is the registry's") {
  std::ifstream in(std::string(DL_SOURCE_DIR) + "/docs/fixes.md");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  const std::string want = an::repair_kind_table();
  INFO("docs/fixes.md must contain, under '## Repair kinds':\n" << want);
  const std::string doc = text.str();
  const size_t from = doc.find("## Repair kinds\n");
  REQUIRE(from != std::string::npos);
  const std::string section = doc.substr(from, doc.find("\n## ", from + 1) - from);
  CHECK(section.find("\n\n" + want) != std::string::npos);
}

TEST_CASE("repairs: an action's JSON holds the fields its kind carries") {
  CHECK(an::to_json(action(Kind::kLearningRate, -1, "", 0.1)) == nlohmann::json{{"kind", "learning_rate"}, {"factor", 0.1}});
  CHECK(an::to_json(action(Kind::kActivation, 2, "Sigmoid")) ==
        nlohmann::json{{"kind", "activation"}, {"layer", 2}, {"value", "Sigmoid"}});
  CHECK(an::to_json(action(Kind::kTargets)) == nlohmann::json{{"kind", "targets"}});
  an::FixAction e = action(Kind::kEpochs, -1, "", 3);
  e.count = 30;
  CHECK(an::to_json(e) == nlohmann::json{{"kind", "epochs"}, {"factor", 3.0}, {"count", 30}});
  CHECK(an::is_layer_repair(action(Kind::kReinitialize, 0, "he_uniform")));
  CHECK_FALSE(an::is_layer_repair(action(Kind::kFeatures, -1, "standardize")));
  CHECK_FALSE(an::is_layer_repair(action(Kind::kLearningRate, -1, "", 10)));
}

TEST_CASE("repairs: a converter edit is returned as values") {
  ir::Model m = test::mlp();
  conv::ActivationEdit e = conv::edit_layer_activation(m, {"fc1"}, "Relu");
  CHECK(e.kind == conv::ActivationEdit::Kind::kInserted);
  CHECK(e.new_op == "Relu");
  CHECK(e.after == "fc1");
  CHECK(e.node == "fc1_Relu");
  e = conv::edit_layer_activation(m, {"fc1", "fc1_Relu"}, "LeakyRelu");
  CHECK(e.kind == conv::ActivationEdit::Kind::kReplaced);
  CHECK(e.old_op == "Relu");
  CHECK(e.alpha == doctest::Approx(0.01));
  CHECK(conv::to_string(e) == "layer nodes fc1, fc1_Relu: Relu -> LeakyRelu (alpha 0.01)");
  e = conv::edit_layer_activation(m, {"fc1", "fc1_Relu"}, "Identity");
  CHECK(e.kind == conv::ActivationEdit::Kind::kRemoved);
  CHECK(e.old_op == "LeakyRelu");
  CHECK(conv::edit_layer_activation(m, {"fc1"}, "Identity").kind == conv::ActivationEdit::Kind::kUnchanged);
}

TEST_CASE("repairs: changes are described from their fields, whatever the node names") {
  // Node names are free text in ONNX. The report text used to be cut out of the
  // converter's message at ": " and merged at "): ", which these names broke.
  ir::Model m = test::mlp();
  m.graph.nodes[0].name = "enc: fc1";
  m.graph.nodes[1].name = "head), x: fc2";
  const cli::LoadedCase c = mlp_case(m);
  const an::Trace t = mlp_trace(m);
  const cli::RepairedCase base = cli::unrepaired(c);

  cli::RepairedCase r = cli::apply_fix(base, {action(Kind::kActivation, 0, "Relu")}, t, c);
  REQUIRE(r.changes.size() == 1);
  CHECK(r.changes[0].layer == 0);
  CHECK(r.changes[0].what == "add Relu");
  CHECK(cli::describe(r) == "layer 0 (enc: fc1): add Relu");
  CHECK(base.model->graph.nodes.size() == 2);  // the case's model is never edited

  r = cli::apply_fix(base, {action(Kind::kActivation, 0, "Tanh"), action(Kind::kActivation, 1, "Tanh"),
                            action(Kind::kLearningRate, -1, "", 0.1)}, t, c);
  CHECK(cli::describe(r) == "layers 0 (enc: fc1), 1 (head), x: fc2): add Tanh; learning rate 0.5 -> 0.05");
  an::Trace after = t;  // the repaired run's layers hold the inserted nodes
  after.header.layers[1].nodes.push_back("head), x: fc2_Tanh");
  const cli::RepairedCase removed = cli::apply_fix(r, {action(Kind::kActivation, 1, "Identity")}, after, c);
  CHECK(removed.changes.back().what == "remove Tanh");
  CHECK(cli::describe(removed) ==
        "layers 0 (enc: fc1), 1 (head), x: fc2): add Tanh; learning rate 0.5 -> 0.05; layer 1 (head), x: fc2): remove Tanh");

  CHECK_THROWS_AS(cli::apply_fix(base, {action(Kind::kActivation, 5, "Relu")}, t, c), ModelError);
  CHECK_THROWS_WITH_AS(cli::apply_fix(base, {action(Kind::kActivation, 0, "Identity")}, t, c),
                       doctest::Contains("layer 0 (enc: fc1) already has activation Identity"), ModelError);
}

TEST_CASE("repairs: training-configuration kinds") {
  const ir::Model m = test::mlp();
  const cli::LoadedCase c = mlp_case(m);
  const an::Trace t = mlp_trace(m);
  an::FixAction epochs = action(Kind::kEpochs, -1, "", 3);
  epochs.count = 10;
  const cli::RepairedCase r = cli::apply_fix(
      cli::unrepaired(c), {action(Kind::kOptimizer, -1, "adam"), epochs, action(Kind::kLoss, -1, "mae")}, t, c);
  CHECK(r.config.optimizer.name == "adam");
  CHECK(r.config.epochs == 30);
  CHECK(r.config.loss == "mae");
  CHECK(r.loss_changed);
  CHECK(cli::describe(r) == "optimizer sgd -> adam (learning rate 0.001); epochs 10 -> 30; loss mse -> mae");
}

TEST_CASE("repairs: dropout sets the layer's Dropout rate, as an input from opset 12, as the attribute before") {
  ir::Model m = test::mlp();
  // fc1 -> Dropout(ratio input shared with another node) -> fc2
  m.graph.initializers["p"] = test::floats("p", {}, {0.95f});
  m.graph.nodes[1].inputs[0] = "hd";
  m.graph.nodes.insert(m.graph.nodes.begin() + 1, test::node("drop", "Dropout", {"h", "p"}, {"hd"}, 13));
  const cli::LoadedCase c = mlp_case(m);
  an::Trace t = mlp_trace(m);
  t.header.layers[0].nodes = {"fc1", "drop"};
  t.header.layers[1].nodes = {"fc2"};
  const cli::RepairedCase base = cli::unrepaired(c);
  const cli::RepairedCase r = cli::apply_fix(base, {action(Kind::kDropout, 0, "", 0.05)}, t, c);
  REQUIRE(r.changes.size() == 1);
  CHECK(cli::describe(r) == "layer 0 (fc1): dropout rate -> 0.05");
  const ir::Node& d = r.model->graph.nodes[1];
  REQUIRE(d.inputs.size() == 2);
  CHECK(d.inputs[1] != "p");  // its own constant: the shared one keeps its value
  CHECK(r.model->graph.initializers.at(d.inputs[1]).floats == std::vector<float>{0.05f});
  CHECK(r.model->graph.initializers.at("p").floats == std::vector<float>{0.95f});
  CHECK(base.model->graph.nodes[1].inputs[1] == "p");  // the case's model is never edited

  ir::Model old = m;  // opset 10: the rate is the attribute
  old.graph.nodes[1].since_version = 10;
  old.graph.nodes[1].inputs.resize(1);
  const cli::LoadedCase c10 = mlp_case(old);
  const cli::RepairedCase r10 = cli::apply_fix(cli::unrepaired(c10), {action(Kind::kDropout, 0, "", 0.0)}, t, c10);
  CHECK(r10.model->graph.nodes[1].attrs.at("ratio").f == 0.0f);

  CHECK_THROWS_WITH_AS(cli::apply_fix(base, {action(Kind::kDropout, 1, "", 0.1)}, t, c),
                       doctest::Contains("layer 1 (fc2) has no Dropout node"), ModelError);
  CHECK_THROWS_AS(cli::apply_fix(base, {action(Kind::kDropout, 0, "", 1.0)}, t, c), ConfigError);
}
