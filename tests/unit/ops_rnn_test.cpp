// The recurrent ops (LSTM, GRU, RNN; runtime/ops/rnn_common.h): gradients through every
// output (the generic checker weighs only output 0, Y; a classifier reads Y_h), the
// semantics of sequence_lens and layout, the refusals, and re-initialisation of their
// weights. Forward values against the ONNX references: the conformance test.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "converter/errors.h"
#include "converter/import.h"
#include "converter/transform.h"
#include "runtime/attrs.h"
#include "runtime/graph.h"
#include "runtime/param_roles.h"
#include "tests/unit/op_harness.h"

using dl::rt::attr_i;
using dl::rt::attr_s;
using dl::rt::attr_strings;
using dl::rt::sample_node;
using dl::rt::Shape;
using dl::rt::Tensor;

namespace {

std::vector<dl::rt::OpSample> samples_of(const char* type) {
  const dl::rt::OpInfo* info = dl::rt::find_op(type);
  REQUIRE(info != nullptr);
  return info->samples();
}

double weighted_sum(dl::test::OpRun& run, const std::vector<Tensor>& w) {
  run.forward();
  double s = 0;
  for (size_t o = 0; o < run.outputs.size(); ++o)
    for (int64_t k = 0; k < run.outputs[o].numel(); ++k) s += double(w[o].f()[k]) * run.outputs[o].f()[k];
  return s;
}

Tensor ramp(Shape shape, float scale, float shift) {
  std::vector<float> v(static_cast<size_t>(dl::rt::shape_numel(shape)));
  for (size_t k = 0; k < v.size(); ++k) v[k] = scale * static_cast<float>((k * 7) % 11) + shift;
  return Tensor::floats(std::move(shape), std::move(v));
}

// Y [T, D, B, H] (layout 0) element.
float y_at(const Tensor& y, int64_t t, int64_t d, int64_t b, int64_t j) {
  return y.f()[((t * y.dim(1) + d) * y.dim(2) + b) * y.dim(3) + j];
}

}  // namespace

TEST_CASE("recurrent ops: gradients of Y, Y_h and Y_c together, every sample case") {
  int checked = 0;
  for (const char* type : {"LSTM", "GRU", "RNN"}) {
    for (dl::rt::OpSample& sample : samples_of(type)) {
      INFO(type << " case '" << sample.label << "'");
      dl::test::OpRun run(sample.node, sample.inputs);
      std::mt19937 gen(11);
      std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
      std::vector<Tensor> w(run.outputs.size());
      std::vector<const Tensor*> dout;
      for (size_t o = 0; o < run.outputs.size(); ++o) {
        w[o].reset(dl::rt::DType::kFloat32, run.outputs[o].shape());
        for (int64_t k = 0; k < w[o].numel(); ++k) w[o].f()[k] = uni(gen);
        dout.push_back(&w[o]);
      }
      REQUIRE(run.outputs.size() >= 2);
      run.forward();
      std::vector<Tensor> analytic = run.backward(dout, sample.check_grad);
      for (size_t i = 0; i < sample.inputs.size(); ++i) {
        if (!sample.check_grad[i]) continue;
        Tensor& x = run.inputs[i];
        for (int64_t k = 0; k < x.numel(); ++k) {
          const float orig = x.f()[k];
          const float h = 1e-2f * std::max(1.0f, std::fabs(orig));
          x.f()[k] = orig + h;
          const double up = weighted_sum(run, w);
          x.f()[k] = orig - h;
          const double down = weighted_sum(run, w);
          x.f()[k] = orig;
          const double numeric = (up - down) / (2.0 * double(h));
          INFO("input " << i << " element " << k << ": analytic " << analytic[i].f()[k] << " numeric " << numeric);
          CHECK(std::fabs(analytic[i].f()[k] - numeric) <= 2e-2 * std::max(1.0, std::fabs(numeric)));
        }
      }
      ++checked;
    }
  }
  CHECK(checked >= 10);
}

TEST_CASE("recurrent ops: a row with sequence length L computes what its first L steps alone do") {
  const int64_t t = 4, b = 3, in = 2, h = 3;
  for (const char* type : {"LSTM", "GRU", "RNN"}) {
    const int64_t g = std::string(type) == "LSTM" ? 4 : std::string(type) == "GRU" ? 3 : 1;
    const size_t outs = std::string(type) == "LSTM" ? 3 : 2;
    INFO(type);
    auto node = sample_node(type, 5, outs, {{"hidden_size", attr_i(h)}, {"direction", attr_s("bidirectional")}}, 14);
    const Tensor x = ramp({t, b, in}, 0.2f, -1.0f), wt = ramp({2, g * h, in}, 0.07f, -0.3f);
    const Tensor r = ramp({2, g * h, h}, 0.06f, -0.3f), bias = ramp({2, 2 * g * h}, 0.03f, -0.1f);
    dl::test::OpRun full(node, {x, wt, r, bias, Tensor::ints({b}, {4, 2, 0})});
    full.forward();
    const Tensor& y = full.outputs[0];
    const Tensor& yh = full.outputs[1];
    for (int64_t row = 0; row < b; ++row) {
      const int64_t len = row == 0 ? 4 : row == 1 ? 2 : 0;
      INFO("row " << row << " length " << len);
      for (int64_t s = len; s < t; ++s)
        for (int64_t d = 0; d < 2; ++d)
          for (int64_t j = 0; j < h; ++j) CHECK(y_at(y, s, d, row, j) == 0.0f);
      if (len == 0) {  // no step: Y_h is the (zero) initial state
        for (int64_t k = 0; k < 2 * h; ++k) CHECK(yh.f()[(k / h) * b * h + row * h + k % h] == 0.0f);
        continue;
      }
      std::vector<float> xs;
      for (int64_t s = 0; s < len; ++s)
        for (int64_t k = 0; k < in; ++k) xs.push_back(x.f()[(s * b + row) * in + k]);
      auto alone_node = sample_node(type, 4, outs, node.attrs, 14);
      dl::test::OpRun alone(alone_node, {Tensor::floats({len, 1, in}, xs), wt, r, bias});
      alone.forward();
      for (int64_t d = 0; d < 2; ++d)
        for (int64_t j = 0; j < h; ++j) {
          CHECK(yh.f()[(d * b + row) * h + j] == doctest::Approx(alone.outputs[1].f()[d * h + j]).epsilon(1e-5));
          for (int64_t s = 0; s < len; ++s)
            CHECK(y_at(y, s, d, row, j) == doctest::Approx(y_at(alone.outputs[0], s, d, 0, j)).epsilon(1e-5));
        }
      // Forward ends at the last valid step, reverse at step 0 (ONNX's Y_h).
      for (int64_t j = 0; j < h; ++j) {
        CHECK(yh.f()[row * h + j] == y_at(y, len - 1, 0, row, j));
        CHECK(yh.f()[(b + row) * h + j] == y_at(y, 0, 1, row, j));
      }
    }
  }
}

TEST_CASE("recurrent ops: layout 1 is layout 0 with batch and time swapped") {
  const int64_t t = 3, b = 2, in = 2, h = 2;
  for (const char* type : {"LSTM", "GRU"}) {
    INFO(type);
    const int64_t g = std::string(type) == "LSTM" ? 4 : 3;
    const Tensor x = ramp({t, b, in}, 0.2f, -1.0f);
    Tensor xb(dl::rt::DType::kFloat32, {b, t, in});
    for (int64_t s = 0; s < t; ++s)
      for (int64_t r = 0; r < b; ++r)
        for (int64_t k = 0; k < in; ++k) xb.f()[(r * t + s) * in + k] = x.f()[(s * b + r) * in + k];
    const Tensor wt = ramp({1, g * h, in}, 0.07f, -0.3f), rt = ramp({1, g * h, h}, 0.06f, -0.3f);
    const Tensor h0 = ramp({1, b, h}, 0.1f, -0.4f);
    const Tensor h0b = Tensor::floats({b, 1, h}, h0.fvec());  // D = 1: the same values
    auto attrs = std::map<std::string, dl::ir::Attribute>{{"hidden_size", attr_i(h)}, {"direction", attr_s("reverse")}};
    dl::test::OpRun a(sample_node(type, 6, 2, attrs, 14), {x, wt, rt, ramp({1, 2 * g * h}, 0.03f, -0.1f),
                                                          Tensor::ints({b}, {3, 2}), h0});
    attrs["layout"] = attr_i(1);
    dl::test::OpRun l(sample_node(type, 6, 2, attrs, 14), {xb, wt, rt, ramp({1, 2 * g * h}, 0.03f, -0.1f),
                                                          Tensor::ints({b}, {3, 2}), h0b});
    a.forward();
    l.forward();
    REQUIRE(l.outputs[0].shape() == Shape{b, t, 1, h});
    REQUIRE(l.outputs[1].shape() == Shape{b, 1, h});
    for (int64_t s = 0; s < t; ++s)
      for (int64_t r = 0; r < b; ++r)
        for (int64_t j = 0; j < h; ++j)
          CHECK(l.outputs[0].f()[(r * t + s) * h + j] == a.outputs[0].f()[(s * b + r) * h + j]);
    CHECK(l.outputs[1].fvec() == a.outputs[1].fvec());
  }
}

TEST_CASE("recurrent ops: what they refuse names the node and the attribute or input") {
  auto make = [](std::map<std::string, dl::ir::Attribute> attrs) {
    return dl::rt::make_op(sample_node("LSTM", 3, 2, std::move(attrs), 14));
  };
  CHECK_THROWS_WITH_AS(make({{"activations", attr_strings({"Sigmoid", "Softplus", "Tanh"})}}),
                       doctest::Contains("node 'sample_LSTM' (LSTM): attribute 'activations' 'Softplus'"),
                       dl::ModelError);
  CHECK_THROWS_WITH_AS(make({{"activations", attr_strings({"Sigmoid", "Tanh"})}}),
                       doctest::Contains("'activations' has 2 entries"), dl::ModelError);
  CHECK_THROWS_WITH_AS(make({{"direction", attr_s("sideways")}}), doctest::Contains("'direction'"), dl::ModelError);
  CHECK_THROWS_WITH_AS(make({{"layout", attr_i(2)}}), doctest::Contains("'layout'"), dl::ModelError);
  CHECK_THROWS_WITH_AS(make({{"activation_alpha", dl::rt::attr_floats({0.5f})}}),
                       doctest::Contains("'activation_alpha'"), dl::ModelError);
  CHECK_THROWS_WITH_AS(make({{"output_sequence", attr_i(1)}}), doctest::Contains("'output_sequence'"),
                       dl::ModelError);
  CHECK_THROWS_WITH_AS(
      dl::rt::make_op(sample_node("GRU", 3, 2, {{"linear_before_reset", attr_i(1)}, {"clip", dl::rt::attr_f(-1.0f)}}, 14)),
      doctest::Contains("attribute 'clip' must be positive"), dl::ModelError);

  const int64_t t = 2, b = 2, in = 2, h = 2;
  const Tensor x = ramp({t, b, in}, 0.2f, -1.0f), w = ramp({1, 4 * h, in}, 0.1f, -0.3f), r = ramp({1, 4 * h, h}, 0.1f, -0.3f);
  CHECK_THROWS_WITH_AS(dl::test::OpRun(sample_node("LSTM", 3, 2, {}, 14), {x, ramp({1, 4 * h, 3}, 0.1f, 0), r}),
                       doctest::Contains("input 'W' [1, 8, 3] must have shape [1, 8, 2]"), dl::ShapeError);
  CHECK_THROWS_WITH_AS(
      dl::test::OpRun(sample_node("LSTM", 3, 2, {{"direction", attr_s("bidirectional")}}, 14), {x, w, r}),
      doctest::Contains("input 'W' [1, 8, 2] must have shape [2, 8, 2]"), dl::ShapeError);
  CHECK_THROWS_WITH_AS(dl::test::OpRun(sample_node("LSTM", 3, 2, {{"hidden_size", attr_i(3)}}, 14), {x, w, r}),
                       doctest::Contains("hidden_size 3 disagrees with R"), dl::ShapeError);
  CHECK_THROWS_WITH_AS(dl::test::OpRun(sample_node("LSTM", 5, 2, {}, 14),
                                       {x, w, r, ramp({1, 8 * h}, 0.1f, 0), Tensor::ints({b}, {2, 3})}),
                       doctest::Contains("node 'sample_LSTM' (LSTM): sequence_lens[1] = 3 is outside [0, 2]"),
                       dl::ShapeError);
  CHECK_THROWS_WITH_AS(dl::test::OpRun(sample_node("GRU", 3, 3, {}, 14), {x, ramp({1, 3 * h, in}, 0.1f, 0),
                                                                          ramp({1, 3 * h, h}, 0.1f, 0)}),
                       doctest::Contains("has 3 outputs, at most 2"), dl::ShapeError);
}

TEST_CASE("recurrent ops: W, R, B of an exported LSTM are trainable and re-initialised by their fans") {
  dl::ir::Model m = dl::conv::import_model(std::string(DL_SOURCE_DIR) + "/tests/fixtures/parity/lstm_classifier_scce_sgd.onnx");
  const dl::ir::Node* lstm = nullptr;
  for (const auto& n : m.graph.nodes)
    if (n.op_type == "LSTM") lstm = &n;
  REQUIRE(lstm != nullptr);
  const std::vector<std::string> names(lstm->inputs.begin() + 1, lstm->inputs.begin() + 4);
  const std::string change = dl::rt::reinitialize_params(m, names, "glorot_uniform", 5);
  // W [1, 24, 4]: fans 4 and 24; R [1, 24, 6]: 6 and 24; B zeros.
  CHECK(change.find(names[0] + " [1, 24, 4] U(+-" + std::to_string(std::sqrt(6.0 / 28)).substr(0, 6)) !=
        std::string::npos);
  CHECK(change.find(names[1] + " [1, 24, 6] U(+-" + std::to_string(std::sqrt(6.0 / 30)).substr(0, 6)) !=
        std::string::npos);
  CHECK(change.find(names[2] + " zeros") != std::string::npos);
}

// A fixed-batch export folds torch's zero initial state into an initializer: it is the
// layer's state, not a weight (torch does not train it), while W, R, B are.
TEST_CASE("recurrent ops: an initializer as initial_h is not a trainable parameter") {
  dl::ir::Model m = dl::conv::import_model(std::string(DL_SOURCE_DIR) + "/tests/fixtures/parity/lstm_classifier_scce_sgd.onnx");
  dl::ir::Node* lstm = nullptr;
  for (auto& n : m.graph.nodes)
    if (n.op_type == "LSTM") lstm = &n;
  REQUIRE(lstm != nullptr);
  m.graph.initializers["h0"] = dl::ir::TensorData{"h0", dl::ir::DType::kFloat32, {1, 2, 6}, std::vector<float>(12, 0.0f), {}};
  lstm->inputs.resize(4);
  lstm->inputs.push_back("");
  lstm->inputs.push_back("h0");
  dl::rt::GraphOptions go;
  go.training = true;
  go.batch_size = 2;
  dl::rt::ExecutionGraph g(m, go);
  std::vector<std::string> names;
  for (const auto& p : g.params()) names.push_back(p.name);
  CHECK(std::find(names.begin(), names.end(), "h0") == names.end());
  for (size_t k = 1; k < 4; ++k) CHECK(std::find(names.begin(), names.end(), lstm->inputs[k]) != names.end());
  CHECK(names.size() == 5);  // W, R, B and the Gemm's weight and bias
}

// clip bounds every gate input; a clipped input has zero gradient.
TEST_CASE("recurrent ops: LSTM clip bounds the gate inputs and stops their gradient") {
  const Tensor x = Tensor::floats({1, 1, 2}, {3.0f, 3.0f});
  const Tensor w = Tensor::floats({1, 4, 2}, std::vector<float>(8, 1.0f));  // every gate input is 6
  const Tensor r = Tensor::floats({1, 4, 1}, std::vector<float>(4, 0.5f));
  auto run = [&](bool clip) {
    std::map<std::string, dl::ir::Attribute> attrs{{"hidden_size", attr_i(1)}};
    if (clip) attrs["clip"] = dl::rt::attr_f(1.0f);
    dl::test::OpRun op(sample_node("LSTM", 3, 2, attrs, 14), {x, w, r});
    op.forward();
    Tensor one = Tensor::floats({1, 1, 1}, {1.0f});
    std::vector<Tensor> g = op.backward({nullptr, &one}, {true, true, true});
    return std::make_pair(op.outputs[1].f()[0], g);
  };
  const auto [clipped, g] = run(true);
  const float s1 = 1.0f / (1.0f + std::exp(-1.0f));
  CHECK(clipped == doctest::Approx(s1 * std::tanh(s1 * std::tanh(1.0f))).epsilon(1e-6));
  for (size_t i = 0; i < 3; ++i)
    for (float v : g[i].fvec()) CHECK(v == 0.0f);
  const auto [free, g2] = run(false);
  CHECK(free > clipped);
  float largest = 0.0f;  // saturated, not clipped: small but non-zero gradients
  for (float v : g2[1].fvec()) largest = std::max(largest, std::fabs(v));
  CHECK(largest > 1e-5f);
}
