// User-level layers of the program (runtime/graph_params.cpp) and the blocks inspect and
// convert show (cli/model_blocks.h): views of weights, attention, recurrent gates.
#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>

#include "cli/model_blocks.h"
#include "cli/model_view.h"
#include "converter/import.h"
#include "tests/unit/transform_fixtures.h"

using namespace dl;
using namespace dl::test;

namespace {

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t k = 0; k < n; ++k) v[k] = scale * float(int(k % 7) - 3);
  return v;
}

// y = x W^T as torch exports nn.Linear on a 3-D input: MatMul(x, Transpose(W)).
void linear(ir::Graph& g, const std::string& name, const std::string& in, const std::string& out, int64_t n_in,
            int64_t n_out) {
  g.initializers[name + ".w"] = floats(name + ".w", {n_out, n_in}, ramp(size_t(n_in * n_out), 0.05f));
  g.nodes.push_back(node(name + "/t", "Transpose", {name + ".w"}, {name + "/wt"}, 13));
  g.nodes.back().attrs["perm"] = ints_attr({1, 0});
  g.nodes.push_back(node(name + "/mm", "MatMul", {in, name + "/wt"}, {out}, 13));
}

ir::Model base(const std::string& path) {
  ir::Model m;
  m.path = path;
  m.ir_version = 8;
  m.opset = m.original_opset = 13;
  return m;
}

// x[N, 3, 4] -> Linear(4->5) + bias -> Relu -> Linear(5->2).
ir::Model two_linears() {
  ir::Model m = base("two_linears");
  ir::Graph& g = m.graph;
  g.inputs = {vinfo("x", {-1, 3, 4})};
  g.outputs = {vinfo("y", {-1, 3, 2})};
  linear(g, "fc1", "x", "h0", 4, 5);
  g.initializers["fc1.b"] = floats("fc1.b", {5}, ramp(5, 0.1f));
  g.nodes.push_back(node("fc1/add", "Add", {"h0", "fc1.b"}, {"h1"}, 13));
  g.nodes.push_back(node("relu", "Relu", {"h1"}, {"h"}, 13));
  linear(g, "fc2", "h", "y", 5, 2);
  return m;
}

// Single-head self-attention over 4 positions of width 6, q/k/v/out projections apart.
ir::Model attention() {
  ir::Model m = base("attention");
  ir::Graph& g = m.graph;
  g.inputs = {vinfo("x", {-1, 4, 6})};
  g.outputs = {vinfo("y", {-1, 4, 6})};
  for (const char* p : {"q", "k", "v"}) linear(g, p, "x", std::string(p) + "_out", 6, 6);
  g.nodes.push_back(node("kt", "Transpose", {"k_out"}, {"kT"}, 13));
  g.nodes.back().attrs["perm"] = ints_attr({0, 2, 1});
  g.nodes.push_back(node("scores", "MatMul", {"q_out", "kT"}, {"s"}, 13));
  g.initializers["scale"] = floats("scale", {}, {2.449f});
  g.nodes.push_back(node("scale_div", "Div", {"s", "scale"}, {"sd"}, 13));
  g.nodes.push_back(node("sm", "Softmax", {"sd"}, {"a"}, 13));
  g.nodes.back().attrs["axis"] = attr_i(-1);
  g.nodes.push_back(node("mix", "MatMul", {"a", "v_out"}, {"o"}, 13));
  linear(g, "out", "o", "y", 6, 6);
  return m;
}

std::string inspect(const ir::Model& m) {
  std::ostringstream out;
  cli::print_inspect(m, out);
  return out.str();
}

std::string convert(const ir::Model& m) {
  std::ostringstream out;
  cli::print_program(m, out);
  return out.str();
}

rt::ExecutionGraph plan(const ir::Model& m) {
  rt::GraphOptions o;
  o.batch_size = 1;
  return rt::ExecutionGraph(m, o);
}

const std::string kParity = std::string(DL_SOURCE_DIR) + "/tests/fixtures/parity/";

}  // namespace

TEST_CASE("layers: a view of a weight belongs to the layer that multiplies by it") {
  const ir::Model m = two_linears();
  const rt::ExecutionGraph g = plan(m);
  REQUIRE(g.layers().size() == 2);
  CHECK(g.layers()[0].nodes == std::vector<std::string>{"fc1/t", "fc1/mm", "fc1/add", "relu"});
  CHECK(g.layers()[1].nodes == std::vector<std::string>{"fc2/t", "fc2/mm"});
  CHECK(g.layers()[0].params == std::vector<std::string>{"fc1.w", "fc1.b"});
  CHECK(g.layers()[1].params == std::vector<std::string>{"fc2.w"});
  CHECK(g.steps()[g.layers()[1].anchor_step].node->name == "fc2/mm");
  CHECK(g.layers()[0].output_step == 1);  // relu (fc1/t and fc1/add run inside fc1/mm): the layer's output is its last step
}

TEST_CASE("attention blocks: found from the data flow, from the projections to the output projection") {
  const ir::Model m = attention();
  const rt::ExecutionGraph g = plan(m);
  REQUIRE(g.layers().size() == 4);  // q, k, v (with the scores, softmax and mix), out
  const std::vector<cli::AttentionBlock> blocks = cli::find_attention_blocks(g);
  REQUIRE(blocks.size() == 1);
  CHECK(blocks[0].first_layer == 0);
  CHECK(blocks[0].last_layer == 3);
  CHECK(blocks[0].positions == 4);
  CHECK(blocks[0].heads == 1);
  CHECK(g.steps()[blocks[0].softmax_step].node->name == "sm");
  const std::string text = inspect(m);
  INFO(text);
  CHECK(text.find("  attention block, layers 0-3: softmax 'sm' over 4 positions, 1 head\n    0  q/t") !=
        std::string::npos);
  CHECK(convert(m).find("  # attention block, layers 0-3: softmax 'sm'") != std::string::npos);
}

TEST_CASE("attention blocks: a softmax output or a softmax over a weight product is not attention") {
  // The output softmax of a classifier.
  ir::Model m = two_linears();
  m.graph.nodes.push_back(node("out_sm", "Softmax", {"y"}, {"p"}, 13));
  m.graph.outputs = {vinfo("p", {-1, 3, 2})};
  CHECK(cli::find_attention_blocks(plan(m)).empty());
  // A softmax between two products with weights (Linear layers with a softmax activation
  // between them): no product of two activations on either side, so not attention.
  ir::Model w = attention();
  auto drop = [&](const char* name) {
    auto& nodes = w.graph.nodes;
    nodes.erase(std::remove_if(nodes.begin(), nodes.end(), [&](const ir::Node& n) { return n.name == name; }),
                nodes.end());
  };
  drop("kt");
  drop("k/mm");
  drop("v/mm");
  for (ir::Node& n : w.graph.nodes)
    if (n.name == "scores") n.inputs = {"q_out", "k/wt"};
    else if (n.name == "mix") n.inputs = {"a", "v/wt"};
  const rt::ExecutionGraph g = plan(w);
  CHECK(cli::find_attention_blocks(g).empty());
}

TEST_CASE("inspect and convert: recurrent layers show their gates and activations") {
  const ir::Model lstm = conv::import_model(kParity + "lstm_classifier_scce_sgd.onnx");
  const std::string text = inspect(lstm);
  INFO(text);
  CHECK(text.find("LSTM '/rnn/LSTM': hidden 6, forward; gates i, o, f Sigmoid, c Tanh, output Tanh\n") !=
        std::string::npos);
  CHECK(convert(lstm).find("      # LSTM: hidden 6, forward; gates i, o, f Sigmoid, c Tanh, output Tanh\n  1   ") !=
        std::string::npos);
  const ir::Model gru = conv::import_model(kParity + "gru_classifier_scce_momentum.onnx");
  CHECK(inspect(gru).find("; gates z, r Sigmoid, h Tanh") != std::string::npos);
}

TEST_CASE("inspect: a TransformerEncoder export shows one attention block per encoder layer") {
  const ir::Model m = conv::import_model(kParity + "transformer_encoder_scce_sgd.onnx");
  const rt::ExecutionGraph g = plan(m);
  const std::vector<cli::AttentionBlock> blocks = cli::find_attention_blocks(g);
  REQUIRE(blocks.size() == 2);
  for (const cli::AttentionBlock& b : blocks) {
    INFO(b.first_layer, " ", b.last_layer);
    CHECK(b.last_layer == b.first_layer + 1);  // fused q/k/v projection, then the output projection
    CHECK(b.positions == 8);
    CHECK(g.layers()[size_t(b.first_layer)].params.size() == 2);  // in_proj weight and bias
  }
  CHECK(blocks[1].first_layer > blocks[0].last_layer);
  // Its head splits and merges (Reshape) and its Dropouts of ratio 0 run as views.
  const std::string text = convert(m);
  INFO(text);
  CHECK(text.find("step(s) marked 'view' only re-view their input") != std::string::npos);
  for (const std::string op : {"= Reshape(", "= Dropout("}) {
    CHECK(text.find(op) != std::string::npos);
    for (size_t at = text.find(op); at != std::string::npos; at = text.find(op, at + 1))
      CHECK(text.substr(at, text.find('\n', at) - at).find(", view of %") != std::string::npos);
  }
}
