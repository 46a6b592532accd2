// PyTorch 1.13 exports nn.GELU() (exact) at opsets 13-17 as Div(x, sqrt 2) -> Erf ->
// Add(1) -> Mul(x) -> Mul(0.5) with Constant nodes: an MLP with that pattern, built in
// code as torch writes it, must import and compute GELU, against a double-precision
// reference of the formula.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "import_fixtures.h"
#include "runtime/graph.h"

namespace {

using namespace dl::test::onnx_build;

void add_constant(onnx::GraphProto* g, const std::string& name, float v) {
  auto* n = add_node(g, "Constant", "/act/" + name, {}, {name});
  auto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = typed_floats("", {}, {v});
}

void trans_b(onnx::NodeProto* gemm) {
  auto* t = gemm->add_attribute();
  t->set_name("transB");
  t->set_type(onnx::AttributeProto::INT);
  t->set_i(1);
}

// x[batch,4] -> /0/Gemm -> GELU as exported -> /2/Gemm -> y[batch,2]
onnx::ModelProto gelu_mlp(int64_t opset, const std::vector<float>& w1, const std::vector<float>& b1,
                          const std::vector<float>& w2, const std::vector<float>& b2) {
  onnx::ModelProto m = empty_model(opset);
  auto* g = m.mutable_graph();
  *g->add_input() = make_value("x", {kBatch, 4});
  *g->add_initializer() = raw_floats("W1", {3, 4}, w1);
  *g->add_initializer() = raw_floats("B1", {3}, b1);
  *g->add_initializer() = raw_floats("W2", {2, 3}, w2);
  *g->add_initializer() = raw_floats("B2", {2}, b2);
  trans_b(add_node(g, "Gemm", "/0/Gemm", {"x", "W1", "B1"}, {"h"}));
  add_constant(g, "sqrt2", 1.4142135381698608f);
  add_node(g, "Div", "/act/Div", {"h", "sqrt2"}, {"d"});
  add_node(g, "Erf", "/act/Erf", {"d"}, {"e"});
  add_constant(g, "one", 1.0f);
  add_node(g, "Add", "/act/Add", {"e", "one"}, {"a"});
  add_node(g, "Mul", "/act/Mul", {"h", "a"}, {"m"});
  add_constant(g, "half", 0.5f);
  add_node(g, "Mul", "/act/Mul_1", {"m", "half"}, {"r"});
  trans_b(add_node(g, "Gemm", "/2/Gemm", {"r", "W2", "B2"}, {"y"}));
  *g->add_output() = make_value("y", {kBatch, 2});
  return m;
}

}  // namespace

TEST_CASE("exported GELU MLP (Div/Erf/Add/Mul/Mul) matches the formula at opsets 13 and 17") {
  const std::vector<float> w1 = {0.3f, -0.2f, 0.5f, 0.1f, -0.4f, 0.6f, 0.2f, -0.3f, 0.7f, 0.1f, -0.5f, 0.25f};
  const std::vector<float> b1 = {0.1f, -0.2f, 0.05f};
  const std::vector<float> w2 = {0.4f, -0.6f, 0.3f, -0.1f, 0.5f, 0.2f};
  const std::vector<float> b2 = {0.01f, -0.02f};
  const std::vector<float> x = {1.0f, -2.0f, 0.5f, 3.0f, -1.5f, 0.2f, 2.5f, -0.7f, 0.0f, 4.0f, -3.0f, 1.2f};
  const int64_t batch = 3;

  // y = GELU(x W1^T + b1) W2^T + b2 in double, GELU(h) = h (1 + erf(h / sqrt 2)) / 2.
  std::vector<double> want(batch * 2);
  for (int64_t n = 0; n < batch; ++n) {
    double r[3];
    for (int j = 0; j < 3; ++j) {
      double h = b1[j];
      for (int k = 0; k < 4; ++k) h += double(x[n * 4 + k]) * w1[j * 4 + k];
      r[j] = 0.5 * h * (1.0 + std::erf(h / std::sqrt(2.0)));
    }
    for (int o = 0; o < 2; ++o) {
      double y = b2[o];
      for (int j = 0; j < 3; ++j) y += r[j] * w2[o * 3 + j];
      want[n * 2 + o] = y;
    }
  }

  for (int64_t opset : {13, 17}) {
    INFO("opset " << opset);
    const dl::ir::Model model = import_model_bytes(bytes_of(gelu_mlp(opset, w1, b1, w2, b2)), "gelu.onnx");
    dl::rt::GraphOptions options;
    options.batch_size = batch;
    dl::rt::ExecutionGraph graph(model, options);
    graph.input("x").fvec() = x;
    graph.forward();
    const dl::rt::Tensor& y = graph.output(0);
    REQUIRE(y.shape() == dl::rt::Shape{batch, 2});
    for (size_t k = 0; k < want.size(); ++k) CHECK(y.fvec()[k] == doctest::Approx(want[k]).epsilon(1e-5));
  }
}

TEST_CASE("exported GELU MLP: all four weights train and their gradients match finite differences") {
  const std::vector<float> w1 = {0.3f, -0.2f, 0.5f, 0.1f, -0.4f, 0.6f, 0.2f, -0.3f, 0.7f, 0.1f, -0.5f, 0.25f};
  const std::vector<float> x = {1.0f, -2.0f, 0.5f, 3.0f, -1.5f, 0.2f, 2.5f, -0.7f};
  const dl::ir::Model model = import_model_bytes(
      bytes_of(gelu_mlp(13, w1, {0.1f, -0.2f, 0.05f}, {0.4f, -0.6f, 0.3f, -0.1f, 0.5f, 0.2f}, {0.01f, -0.02f})),
      "gelu.onnx");
  dl::rt::GraphOptions options;
  options.batch_size = 2;
  options.training = true;
  dl::rt::ExecutionGraph graph(model, options);
  graph.input("x").fvec() = x;
  std::vector<std::string> names;
  for (const auto& p : graph.params()) names.push_back(p.name);
  std::sort(names.begin(), names.end());
  REQUIRE(names == std::vector<std::string>{"B1", "B2", "W1", "W2"});

  // L = sum_k c_k y_k with fixed c.
  const std::vector<float> c = {0.7f, -1.1f, 0.4f, 0.9f};
  auto loss = [&] {
    graph.forward();
    double s = 0;
    for (size_t k = 0; k < c.size(); ++k) s += double(c[k]) * graph.output(0).fvec()[k];
    return s;
  };
  loss();
  graph.output_grad(0).fvec() = c;
  graph.backward();
  const dl::rt::Param* w = nullptr;
  for (const auto& p : graph.params())
    if (p.name == "W1") w = &p;
  REQUIRE(w);
  const std::vector<float> analytic = w->grad->fvec();
  for (size_t k = 0; k < analytic.size(); ++k) {
    float& v = w->value->fvec()[k];
    const float orig = v, h = 1e-2f;
    v = orig + h;
    const double up = loss();
    v = orig - h;
    const double down = loss();
    v = orig;
    const double numeric = (up - down) / (2.0 * h);
    INFO("W1[" << k << "]: analytic " << analytic[k] << ", numeric " << numeric);
    CHECK(std::fabs(analytic[k] - numeric) <= 1e-2 * std::max(1.0, std::fabs(numeric)));
  }
}
