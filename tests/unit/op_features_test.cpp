// Op features (an::OpFeature): the per-row values Softmax and LayerNormalization report
// to FwdCtx::feature_stats and their probes in trace files (the rules that read them:
// op_feature_rules_test.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "analysis/trace_io.h"
#include "op_harness.h"
#include "runtime/graph.h"
#include "runtime/probes.h"
#include "tests/unit/parallel_test_util.h"
#include "runtime/attrs.h"
#include "trace_io_test_util.h"

namespace {

using namespace dl;

// Keeps every value an op reports, in order (part 0 only: the ops report there).
class Collect final : public rt::ValueSink {
 public:
  void add(int64_t part, const float* x, int64_t n) override {
    CHECK(part == 0);
    values.insert(values.end(), x, x + n);
  }
  bool light() const override { return false; }
  void add_sums(int64_t, const rt::stats::Sums&, int64_t) override { FAIL("features are reported as values"); }
  std::vector<float> values;
};

// A row's entropy over log(its allowed positions: those not -inf, a mask's).
double entropy_ratio(const std::vector<double>& logits) {
  double mx = logits[0], s = 0, h = 0, allowed = 0;
  for (double v : logits) mx = std::max(mx, v), allowed += v != -INFINITY;
  for (double v : logits) s += std::exp(v - mx);
  for (double v : logits) {
    const double p = std::exp(v - mx) / s;
    if (p > 0) h -= p * std::log(p);
  }
  const bool nan = std::any_of(logits.begin(), logits.end(), [](double v) { return std::isnan(v); });
  return allowed == 0 || nan ? NAN : h / std::log(allowed);
}

// What a Softmax reports for these rows: entropy_ratio of each, in order, leaving out
// forced rows (one allowed position); a row all -inf is NaN.
std::vector<double> reported_entropies(const std::vector<std::vector<double>>& rows) {
  std::vector<double> out;
  for (const auto& row : rows)
    if (std::count_if(row.begin(), row.end(), [](double v) { return v != -INFINITY; }) != 1)
      out.push_back(entropy_ratio(row));
  return out;
}

void check_reported(const std::vector<float>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t r = 0; r < want.size(); ++r) {
    CAPTURE(r);
    CHECK(std::isnan(got[r]) == std::isnan(want[r]));  // (masked rows finite: -inf logits weigh 0)
    if (!std::isnan(want[r])) CHECK(got[r] == doctest::Approx(want[r]).epsilon(1e-5).scale(1.0));
  }
}

TEST_CASE("op feature: Softmax reports each row's entropy over log(row length)") {
  // Rows of 4 (last axis): uniform, one-hot-like, and a spread one.
  const std::vector<float> x = {0.3f, 0.3f, 0.3f, 0.3f, 60.0f, 0.0f, 0.0f, 0.0f, 0.5f, -1.0f, 2.0f, 0.1f};
  test::OpRun run(rt::sample_node("Softmax", 1, 1, {}, 13), {rt::Tensor::floats({3, 4}, x)});
  const rt::OpFeatureInfo info = run.op->feature();
  CHECK(info.kind == an::OpFeature::kRowEntropy);
  CHECK(info.rows == 3);
  CHECK(info.row_length == 4);
  Collect sink;
  run.feature_stats = &sink;
  run.forward();
  REQUIRE(sink.values.size() == 3);
  CHECK(sink.values[0] == doctest::Approx(1.0).epsilon(1e-6));
  CHECK(sink.values[1] == doctest::Approx(0.0).epsilon(1e-6));
  CHECK(sink.values[2] == doctest::Approx(entropy_ratio({0.5, -1.0, 2.0, 0.1})).epsilon(1e-5));

  // Not asked: nothing reported, the same output.
  const std::vector<float> with = run.outputs[0].fvec();
  run.feature_stats = nullptr;
  run.forward();
  CHECK(run.outputs[0].fvec() == with);
  CHECK(sink.values.size() == 3);
}

TEST_CASE("op feature: a strided Softmax (axis 1 of [2,3,2]) reports its rows in row order") {
  std::vector<float> x(12);
  for (size_t k = 0; k < x.size(); ++k) x[k] = 0.4f * float(k % 5) - float(k % 3);
  test::OpRun run(rt::sample_node("Softmax", 1, 1, {{"axis", rt::attr_i(1)}}, 13), {rt::Tensor::floats({2, 3, 2}, x)});
  CHECK(run.op->feature().rows == 4);
  CHECK(run.op->feature().row_length == 3);
  Collect sink;
  run.feature_stats = &sink;
  run.forward();
  REQUIRE(sink.values.size() == 4);
  for (int o = 0; o < 2; ++o)
    for (int i = 0; i < 2; ++i) {
      std::vector<double> row;
      for (int j = 0; j < 3; ++j) row.push_back(x[size_t(o * 6 + j * 2 + i)]);
      CHECK(sink.values[size_t(o * 2 + i)] == doctest::Approx(entropy_ratio(row)).epsilon(1e-5));
    }
}

// Rows of n logits, row r scaled by 0.3 * (r % 7) (near-uniform to peaked), every 5th row
// with positions masked to -inf (attention's padding and causal masks).
std::vector<float> entropy_rows(int64_t rows, int64_t n) {
  std::vector<float> x(size_t(rows * n));
  uint32_t h = 12345;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      h = h * 1664525u + 1013904223u;
      const float u = float(h >> 8) / float(1u << 24) * 2.0f - 1.0f;
      x[size_t(r * n + j)] = r % 5 == 3 && j % 3 != 0 ? -INFINITY : 0.3f * float(r % 7) * 4.0f * u;
    }
  return x;
}

TEST_CASE("op feature: Softmax entropies of long rows (vectors and tails), masked positions, NaN rows") {
  for (const int64_t n : {16, 37, 64}) {
    CAPTURE(n);
    const int64_t rows = 41;  // (whole vectors of rows and a tail, at any vector width)
    std::vector<float> x = entropy_rows(rows, n);
    x[size_t(7 * n + 2)] = NAN;  // row 7 holds a NaN
    for (int64_t j = 0; j < n; ++j) {
      if (j != 4) x[size_t(11 * n + j)] = -INFINITY;  // row 11 forced (one allowed position)
      x[size_t(13 * n + j)] = -INFINITY;              // row 13 all masked: NaN
    }
    test::OpRun run(rt::sample_node("Softmax", 1, 1, {}, 13), {rt::Tensor::floats({rows, n}, x)});
    Collect sink;
    run.feature_stats = &sink;
    run.forward();
    std::vector<std::vector<double>> want;
    for (int64_t r = 0; r < rows; ++r) want.emplace_back(x.begin() + r * n, x.begin() + (r + 1) * n);
    check_reported(sink.values, reported_entropies(want));
    CHECK(sink.values.size() == size_t(rows - 1));
    // Reporting the entropies leaves the output's bits as they are.
    const std::vector<float> with = run.outputs[0].fvec();
    run.feature_stats = nullptr;
    run.forward();
    CHECK(std::memcmp(run.outputs[0].fvec().data(), with.data(), with.size() * sizeof(float)) == 0);
  }
  SUBCASE("strided rows (axis 1 of [2, n, 3]) with masked positions, one row forced") {
    const int64_t n = 19;
    std::vector<float> x = entropy_rows(6, n);  // read as [2, n, 3]
    for (int64_t j = 0; j < n; ++j) x[size_t(1 * n * 3 + j * 3 + 2)] = j == 0 ? 0.5f : -INFINITY;  // (1, 2) forced
    test::OpRun run(rt::sample_node("Softmax", 1, 1, {{"axis", rt::attr_i(1)}}, 13), {rt::Tensor::floats({2, n, 3}, x)});
    Collect sink;
    run.feature_stats = &sink;
    run.forward();
    std::vector<std::vector<double>> want;
    for (int64_t o = 0; o < 2; ++o)
      for (int64_t i = 0; i < 3; ++i) {
        want.emplace_back();
        for (int64_t j = 0; j < n; ++j) want.back().push_back(x[size_t(o * n * 3 + j * 3 + i)]);
      }
    check_reported(sink.values, reported_entropies(want));
    CHECK(sink.values.size() == 5);
  }
}

TEST_CASE("op feature: a Softmax over one value, and LogSoftmax, report none") {
  test::OpRun one(rt::sample_node("Softmax", 1, 1, {}, 13), {rt::Tensor::floats({3, 1}, {1, 2, 3})});
  CHECK(one.op->feature().kind == an::OpFeature::kNone);
  test::OpRun log(rt::sample_node("LogSoftmax", 1, 1, {}, 13), {rt::Tensor::floats({1, 3}, {1, 2, 3})});
  CHECK(log.op->feature().kind == an::OpFeature::kNone);
  Collect sink;
  one.feature_stats = &sink;
  one.forward();
  CHECK(sink.values.empty());
}

TEST_CASE("op feature: LayerNormalization reports sqrt(var / (var + epsilon)) per row") {
  // Rows of 4: variance 1.25 (eps 1e-5: ~1), constant (0), and tiny against eps = 0.1.
  const std::vector<float> x = {1, 2, 3, 4, 5, 5, 5, 5, 0.01f, -0.01f, 0.01f, -0.01f};
  test::OpRun run(rt::sample_node("LayerNormalization", 2, 1, {{"epsilon", rt::attr_f(0.1f)}}, 17),
                  {rt::Tensor::floats({3, 4}, x), rt::Tensor::floats({4}, {1, 1, 1, 1})});
  const rt::OpFeatureInfo info = run.op->feature();
  CHECK(info.kind == an::OpFeature::kNormalizedScale);
  CHECK(info.rows == 3);
  CHECK(info.row_length == 4);
  Collect sink;
  run.feature_stats = &sink;
  run.forward();
  REQUIRE(sink.values.size() == 3);
  CHECK(sink.values[0] == doctest::Approx(std::sqrt(1.25 / 1.35)).epsilon(1e-5));
  CHECK(sink.values[1] == 0.0f);
  CHECK(sink.values[2] == doctest::Approx(std::sqrt(1e-4 / (1e-4 + 0.1))).epsilon(1e-4));
  // A LayerNorm over a single value: every row 0.
  test::OpRun single(rt::sample_node("LayerNormalization", 2, 1, {}, 17),
                     {rt::Tensor::floats({3, 1}, {1, -2, 7}), rt::Tensor::floats({1}, {1})});
  CHECK(single.op->feature().row_length == 1);
  Collect s1;
  single.feature_stats = &s1;
  single.forward();
  CHECK(s1.values == std::vector<float>{0, 0, 0});
}

TEST_CASE("trace file: feature probes round-trip; an unknown feature names the probe") {
  an::Trace t = test::trace_io::synthetic_trace(3, 2);
  t.header.probes[1].kind = an::ProbeKind::kFeature;
  t.header.probes[1].feature = an::OpFeature::kRowEntropy;
  t.header.probes[1].op.units = 16;
  const std::string bytes = an::trace_bytes(t);
  const an::Trace back = an::read_trace_bytes(bytes, "mem");
  test::trace_io::check_equal(t, back);
  CHECK(back.header.probes[1].feature == an::OpFeature::kRowEntropy);
  CHECK(back.header.probes[0].feature == an::OpFeature::kNone);

  std::string bad = bytes;
  const size_t at = bad.find("\"row_entropy\"");
  REQUIRE(at != std::string::npos);
  bad.replace(at, 13, "\"row_entropX\"");
  CHECK_THROWS_WITH(an::read_trace_bytes(bad, "mem"),
                    doctest::Contains("probes[1].feature: unknown op feature 'row_entropX'"));
}

// x [N, 4] -> Gemm -> Softmax -> Gemm -> LayerNormalization -> Gemm -> Softmax -> Flatten -> y:
// the first softmax is inside the model (an attention, as far as the probes know), the
// last one is its output even with a Flatten after it.
ir::Model softmax_chain() {
  ir::Model m = test::sgd_mse_model("softmax_chain");
  m.opset = m.original_opset = 17;
  ir::Graph& g = m.graph;
  ir::ValueInfo x, y;
  x.name = "x", y.name = "y";
  x.has_shape = y.has_shape = true;
  x.dims = {ir::Dim{-1, "N"}, ir::Dim{4, ""}};
  y.dims = {ir::Dim{-1, "N"}, ir::Dim{4, ""}};
  g.inputs = {x};
  g.outputs = {y};
  for (const char* w : {"W0", "W1", "W2"}) {
    ir::TensorData t;
    t.name = w;
    t.dims = {4, 4};
    t.floats = test::random_values(16, 7);
    g.initializers[w] = t;
  }
  ir::TensorData scale;
  scale.name = "S";
  scale.dims = {4};
  scale.floats = {1, 1, 1, 1};
  g.initializers["S"] = scale;
  const auto node = [&](const std::string& name, const std::string& type, std::vector<std::string> in,
                        const std::string& out, int since) {
    ir::Node n;
    n.name = name, n.op_type = type, n.since_version = since;
    n.inputs = std::move(in);
    n.outputs = {out};
    g.nodes.push_back(n);
  };
  node("/0/Gemm", "Gemm", {"x", "W0"}, "a", 13);
  node("/1/Softmax", "Softmax", {"a"}, "b", 13);
  node("/2/Gemm", "Gemm", {"b", "W1"}, "c", 13);
  node("/3/LayerNormalization", "LayerNormalization", {"c", "S"}, "d", 17);
  node("/4/Gemm", "Gemm", {"d", "W2"}, "e", 13);
  node("/5/Softmax", "Softmax", {"e"}, "f", 13);
  node("/6/Flatten", "Flatten", {"f"}, "y", 13);
  return m;
}

TEST_CASE("probes: a feature probe per inner softmax and LayerNorm, none for the output softmax") {
  rt::GraphOptions o;
  o.training = true;
  o.batch_size = 8;
  rt::ExecutionGraph graph(softmax_chain(), o);
  an::Trace trace;
  rt::ProbeRecorder probes(graph, trace);
  std::vector<std::pair<an::OpFeature, std::string>> got;
  for (const an::Probe& p : trace.header.probes)
    if (p.kind == an::ProbeKind::kFeature) {
      got.push_back({p.feature, p.node});
      CHECK(p.op.units == 4);
      CHECK(p.step >= 0);
    }
  const std::vector<std::pair<an::OpFeature, std::string>> want = {
      {an::OpFeature::kRowEntropy, "/1/Softmax"}, {an::OpFeature::kNormalizedScale, "/3/LayerNormalization"}};
  CHECK(got == want);
}

}  // namespace
