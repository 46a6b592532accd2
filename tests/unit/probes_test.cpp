// The probes (runtime/probes.h, runtime/probe_stats.h): the statistics kernels' shortcuts
// against the general path, the parameter schedule (full iterations, carried records,
// the record filled in after a NaN), the carried flag in trace files, and the rule that
// reads parameter series record by record (exploding_tensor) on carried records.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "analysis/trace_io.h"
#include "converter/ir.h"
#include "rules_test_util.h"
#include "tests/unit/parallel_test_util.h"
#include "runtime/probes.h"
#include "runtime/run_summary.h"
#include "runtime/trainer.h"

namespace {

using namespace dl;

std::vector<float> wave(size_t n, double scale, double phase = 0) {
  std::vector<float> v(n);
  for (size_t k = 0; k < n; ++k) v[k] = float(scale * std::sin(0.37 * double(k) + phase));
  return v;
}

void check_same(const rt::stats::Sums& a, const rt::stats::Sums& b) {
  CHECK(a.sum == b.sum);
  CHECK(a.sumsq == b.sumsq);
  CHECK(a.sumabs == b.sumabs);
  CHECK(a.mn == b.mn);
  CHECK(a.mx == b.mx);
  CHECK(a.zeros == b.zeros);
  CHECK(a.dead == b.dead);
  CHECK(a.nan == b.nan);
  CHECK(a.inf == b.inf);
}

TEST_CASE("probe statistics: the non-negative shortcuts give the general path's sums") {
  // ReLU-like outputs: 1003 values (not a multiple of the 32-value vector step), a third
  // zeros, one -0.0.
  std::vector<float> v = wave(1003, 2.0);
  for (float& x : v) x = x > 0 ? x : 0.0f;
  v[10] = -0.0f;
  rt::stats::Bands relu;
  relu.dead = true;
  relu.nonneg = true;
  rt::stats::Bands general = relu;
  general.nonneg = false;
  rt::stats::Sums fast, slow;
  rt::stats::add_values(v.data(), int64_t(v.size()), relu, fast);
  rt::stats::add_values(v.data(), int64_t(v.size()), general, slow);
  check_same(fast, slow);
  int64_t zeros = 0;
  for (float x : v) zeros += x == 0.0f;
  CHECK(fast.zeros == zeros);
  CHECK(fast.dead == zeros);

  SUBCASE("an op outside its declared range takes the general path") {
    v[500] = -3.0f;
    rt::stats::Sums a, b;
    rt::stats::add_values(v.data(), int64_t(v.size()), relu, a);
    rt::stats::add_values(v.data(), int64_t(v.size()), general, b);
    check_same(a, b);
    CHECK(a.mn == -3.0f);
    CHECK(a.dead == zeros + 1);
  }
  SUBCASE("NaN and Inf are counted exactly") {
    v[3] = std::numeric_limits<float>::quiet_NaN();
    v[700] = std::numeric_limits<float>::infinity();
    rt::stats::Sums a;
    rt::stats::add_values(v.data(), int64_t(v.size()), relu, a);
    CHECK(a.nan == 1);
    CHECK(a.inf == 1);
    CHECK(std::isfinite(a.sum));
  }
  SUBCASE("zeros of signed data (magnitude bits) and the update's sum of squares") {
    std::vector<float> w = wave(2048, 0.5);
    for (size_t k = 0; k < w.size(); k += 5) w[k] = k % 2 ? -0.0f : 0.0f;
    rt::stats::Sums s;
    rt::stats::add_values(w.data(), int64_t(w.size()), rt::stats::Bands{}, s);
    CHECK(s.zeros == int64_t((w.size() + 4) / 5));
    std::vector<float> after = w;
    double want = 0;
    for (size_t k = 0; k < after.size(); ++k) {
      after[k] += float(1e-3 * double(k % 7));
      want += double(after[k] - w[k]) * double(after[k] - w[k]);
    }
    rt::stats::UpdateSums u;
    rt::stats::add_update(w.data(), after.data(), int64_t(w.size()), u);
    CHECK(u.sq == doctest::Approx(want).epsilon(1e-5));
    CHECK(u.nonfinite == 0);
  }
}

TEST_CASE("probe statistics: the light pass gives the full pass's sums and extremes, bit for bit") {
  // Lengths with and without the 64-value step's remainder (4704: one LeNet-5 conv image),
  // more than one 4096-value block, and a scalar tail.
  for (int64_t n : {int64_t(5), int64_t(100), int64_t(4704), int64_t(9000), int64_t(70001)}) {
    CAPTURE(n);
    std::vector<float> v = wave(size_t(n), 3.0, -0.25);
    rt::stats::Bands light;
    light.light = true;
    rt::stats::Sums full, lite;
    rt::stats::add_values(v.data(), n, rt::stats::Bands{}, full);
    rt::stats::add_values(v.data(), n, light, lite);
    CHECK(lite.sum == full.sum);
    CHECK(lite.sumsq == full.sumsq);
    CHECK(lite.mn == full.mn);
    CHECK(lite.mx == full.mx);
    CHECK(lite.sumabs == 0);  // not reduced
    CHECK(lite.zeros == 0);
  }
  SUBCASE("NaN and Inf in a light pass are counted exactly") {
    std::vector<float> v = wave(5000, 1.0);
    v[4100] = std::numeric_limits<float>::quiet_NaN();
    v[17] = -std::numeric_limits<float>::infinity();
    rt::stats::Bands light;
    light.light = true;
    rt::stats::Sums s;
    rt::stats::add_values(v.data(), int64_t(v.size()), light, s);
    CHECK(s.nan == 1);
    CHECK(s.inf == 1);
    CHECK(std::isfinite(s.sum));
  }
}

TEST_CASE("probe schedule: parameters reduced every iteration unless they dominate the probes' cost") {
  using R = rt::ProbeRecorder;
  CHECK(R::full_every_for(100864, 3 * 235146) == 16);   // MLP 784-256-128-10, batch 64
  CHECK(R::full_every_for(1921536, 3 * 61706) == 1);    // LeNet-5, batch 64
  CHECK(R::full_every_for(9472, 3 * 4810) == 1);        // small models: always
  CHECK(R::full_every_for(1348400, 3 * 612891) == 4);   // 2 x 1.36 -> 4
  CHECK(R::full_every_for(1, R::kAlwaysFull + 3) == R::kFullEvery);
}

// in[32] -> Gemm 512 -> Relu -> Gemm 512 -> Relu -> Gemm 4 (mse, sgd): 281,604 parameters
// against 2 x 2,052 step values per sample, so parameters are reduced every 16th
// iteration at batch 16.
ir::Model wide_mlp() {
  ir::Model m = dl::test::sgd_mse_model("wide_mlp");
  ir::Graph& g = m.graph;
  auto vinfo = [](const std::string& name, int64_t width) {
    ir::ValueInfo v;
    v.name = name;
    v.has_shape = true;
    v.dims = {ir::Dim{-1, "N"}, ir::Dim{width, ""}};
    return v;
  };
  g.inputs = {vinfo("x", 32)};
  g.outputs = {vinfo("y", 4)};
  const int64_t widths[] = {32, 512, 512, 4};
  std::string in = "x";
  for (int l = 0; l < 3; ++l) {
    const std::string s = std::to_string(l), w = "W" + s, b = "b" + s;
    const int64_t fan_in = widths[l], fan_out = widths[l + 1];
    ir::TensorData wt;
    wt.name = w;
    wt.dims = {fan_out, fan_in};
    wt.floats = wave(size_t(fan_out * fan_in), std::sqrt(3.0 / double(fan_in)), double(l));
    ir::TensorData bt;
    bt.name = b;
    bt.dims = {fan_out};
    bt.floats.assign(size_t(fan_out), 0.01f);
    g.initializers[w] = wt;
    g.initializers[b] = bt;
    const std::string out = l == 2 ? "y" : "h" + s;
    ir::Node n;
    n.name = "/" + s + "/Gemm";
    n.op_type = "Gemm";
    n.since_version = 13;
    n.inputs = {in, w, b};
    n.outputs = {out};
    ir::Attribute trans;
    trans.kind = ir::Attribute::Kind::kInt;
    trans.i = 1;
    n.attrs["transB"] = trans;
    g.nodes.push_back(n);
    if (l == 2) break;
    g.value_info[out] = vinfo(out, fan_out);
    ir::Node r;
    r.name = "/" + s + "/Relu";
    r.op_type = "Relu";
    r.since_version = 13;
    r.inputs = {out};
    r.outputs = {"a" + s};
    g.nodes.push_back(r);
    g.value_info["a" + s] = vinfo("a" + s, fan_out);
    in = "a" + s;
  }
  return m;
}

rt::Dataset wide_data(int64_t rows) {
  rt::Dataset d;
  d.source = "synthetic";
  d.n = rows;
  d.x_shape = {32};
  d.x_size = 32;
  d.y_size = 4;
  d.x = wave(size_t(rows * 32), 1.0);
  d.y = wave(size_t(rows * 4), 0.5, 1.0);
  for (int64_t r = 0; r < rows; ++r) d.line_of_row.push_back(r + 1);
  return d;
}

// A listener registered after the probes: checks full records against the parameters,
// and optionally breaks one weight after a given update (an update that overflowed).
struct Checker : rt::TrainListener {
  const an::Trace* trace = nullptr;
  size_t weight_probe = 0;
  int64_t break_after = -1;
  int full_checked = 0;
  void after_update(const rt::ExecutionGraph& g, const rt::IterationInfo& info) override {
    auto& params = const_cast<rt::ExecutionGraph&>(g).params();
    const an::TensorStats& w = trace->at(trace->size() - 1, weight_probe);
    if (!w.carried() && info.iteration != break_after) {
      const an::TensorStats want = rt::reduce_stats(*params[0].value, nullptr, nullptr);
      CHECK(w.min == want.min);
      CHECK(w.max == want.max);
      CHECK(w.l2 == doctest::Approx(want.l2).epsilon(1e-5));
      ++full_checked;
    }
    if (info.iteration == break_after) params[0].value->f()[7] = std::numeric_limits<float>::infinity();
  }
};

struct Run {
  an::Trace trace;
  int64_t full_every = 0;
  int full_checked = 0;
};

Run train_wide(int64_t epochs, int64_t break_after = -1) {
  static const ir::Model model = wide_mlp();
  rt::TrainConfig config = rt::config_from_metadata(model.metadata);
  config.epochs = epochs;
  config.batch_size = 16;
  rt::Trainer trainer(model, config, wide_data(16 * 40), rt::Dataset{});
  Run out;
  rt::describe_run(trainer.graph(), config, trainer.train_data(), "mae", false, out.trace.header);
  rt::ProbeRecorder probes(trainer.graph(), out.trace);
  out.trace.set_capacity_bytes(64 << 20);
  out.trace.reserve_iterations(config.epochs * 40);
  trainer.set_observer(&probes);
  trainer.add_listener(&probes);
  Checker check;
  check.trace = &out.trace;
  for (size_t k = 0; k < out.trace.header.probes.size(); ++k)
    if (out.trace.header.probes[k].kind == an::ProbeKind::kWeight) {
      check.weight_probe = k;
      break;
    }
  check.break_after = break_after;
  trainer.add_listener(&check);
  trainer.run();
  out.full_every = probes.full_every();
  out.full_checked = check.full_checked;
  return out;
}

std::vector<size_t> param_probe_indices(const an::Trace& t) {
  std::vector<size_t> out;
  for (size_t k = 0; k < t.header.probes.size(); ++k)
    if (t.header.probes[k].kind != an::ProbeKind::kForward && t.header.probes[k].kind != an::ProbeKind::kGradient)
      out.push_back(k);
  return out;
}

TEST_CASE("probe schedule: full iterations, carried records in between") {
  const Run run = train_wide(2);
  const an::Trace& t = run.trace;
  REQUIRE(run.full_every == 16);
  REQUIRE(t.size() == 80);
  const std::vector<size_t> params = param_probe_indices(t);
  REQUIRE(params.size() == 18);
  const std::set<int64_t> must_be_full = {0, 1, 2, 3, 4, 5, 6, 7, 16, 32, 39, 48, 64, 79};
  size_t carried = 0, last_full = 0;
  for (size_t r = 0; r < t.size(); ++r) {
    const bool c = t.at(r, params[0]).carried();
    INFO("iteration " << t.records[r].iteration);
    for (size_t k : params) CHECK(t.at(r, k).carried() == c);  // all or none
    if (must_be_full.count(t.records[r].iteration)) CHECK(!c);
    for (size_t k = 0; k < t.header.probes.size(); ++k)
      if (t.header.probes[k].kind == an::ProbeKind::kForward || t.header.probes[k].kind == an::ProbeKind::kGradient)
        CHECK(!t.at(r, k).carried());
    if (!c) {
      last_full = r;
      const an::TensorStats &w = t.at(r, params[0]), &u = t.at(r, params[2]);
      CHECK(u.l2 > 0);
      CHECK(u.mean == doctest::Approx(u.l2 / w.l2).epsilon(1e-5));
      // Weights and gradients: moments and extremes (no mean |x| or zeros); updates: ||dw||.
      CHECK(w.flags == an::TensorStats::kNoMagnitudes);
      CHECK(t.at(r, params[1]).flags == an::TensorStats::kNoMagnitudes);
      CHECK(w.mean_abs == 0.0f);
      CHECK(u.flags == 0u);
      continue;
    }
    ++carried;
    for (size_t k : params) {  // the last full record's values, flagged
      an::TensorStats a = t.at(r, k), b = t.at(last_full, k);
      CHECK(a.flags == (b.flags | an::TensorStats::kCarried));
      CHECK(a.l2 == b.l2);
      CHECK(a.mean == b.mean);
      CHECK(a.min == b.min);
      CHECK(a.count == b.count);
    }
  }
  CHECK(carried >= 50);  // the rest: a healthy run does not drift
  CHECK(run.full_checked == int(t.size() - carried));

  SUBCASE("the carried flag survives a trace file; version-1 readers ignored the field") {
    const an::Trace back = an::read_trace_bytes(an::trace_bytes(t), "memory");
    REQUIRE(back.size() == t.size());
    for (size_t r = 0; r < t.size(); ++r) CHECK(back.at(r, params[0]).flags == t.at(r, params[0]).flags);
  }
}

// The optimizer updates a large parameter's parts on the compute threads and the probes
// merge each part's sums in part order: every record the same bits at 1 and 2 threads.
TEST_CASE("probe records: the same bits for any thread count (parameters updated in parts)") {
  std::vector<an::Trace> traces;
  dl::test::on_two_then_one([&](int) { traces.push_back(train_wide(1).trace); });
  REQUIRE(traces.size() == 2);
  const an::Trace &a = traces[0], &b = traces[1];
  REQUIRE(a.size() == b.size());
  REQUIRE(rt::elementwise_parts(512 * 512) > 1);  // W1 goes in parts
  bool same = true;
  for (size_t r = 0; r < a.size(); ++r)
    for (size_t k = 0; k < a.header.probes.size(); ++k) {
      const an::TensorStats &x = a.at(r, k), &y = b.at(r, k);
      same = same && x.count == y.count && x.nan == y.nan && x.inf == y.inf && x.flags == y.flags &&
             x.min == y.min && x.max == y.max && x.mean == y.mean && x.std == y.std && x.l2 == y.l2 &&
             x.mean_abs == y.mean_abs && x.zero_frac == y.zero_frac && x.dead_frac == y.dead_frac &&
             x.sat_frac == y.sat_frac;
    }
  CHECK(same);
}

TEST_CASE("probe schedule: a NaN in the forward pass fills in the update that caused it") {
  // Iteration 20 is not a full one; the weight it leaves holds an Inf, so iteration 21's
  // forward pass turns non-finite.
  const Run run = train_wide(1, 20);
  const an::Trace& t = run.trace;
  const std::vector<size_t> params = param_probe_indices(t);
  REQUIRE(t.size() > 21);
  REQUIRE(t.records[20].iteration == 20);
  const an::TensorStats &w = t.at(20, params[0]), &u = t.at(20, params[2]);
  CHECK(!w.carried());
  CHECK(w.inf == 1);
  CHECK(!u.carried());
  CHECK(u.inf == 1);
  CHECK(t.at(20, params[1]).finite());  // the gradient that update applied was finite
  CHECK(!t.at(21, params[0]).carried());
  an::Diagnosis d = an::analyze(t, an::Settings(), true);
  REQUIRE(!d.findings.empty());
  CHECK(d.findings[0].rule == "numerical_error");
  CHECK(d.findings[0].iteration == 20);
  CHECK(d.findings[0].symptom == "nan_update");
}

TEST_CASE("rule exploding_tensor: parameter series judged on the records that hold fresh values") {
  using namespace dl::test::rules;
  TraceBuilder b;
  Trace t = healthy(b);
  // Layer 1's parameter gradients grow 3x per full record from record 150 on; parameter
  // statistics are fresh every 4th record and carried in between.
  const std::vector<size_t> params = param_probe_indices(t);
  for (size_t r = 0; r < t.size(); ++r)
    for (size_t k : params)
      if (r % 4 != 0) t.at(r, k) = t.at(r - r % 4, k), t.at(r, k).flags = an::TensorStats::kCarried;
  for (size_t k : params)
    if (t.header.probes[k].kind == ProbeKind::kParamGrad && t.header.probes[k].layer == 1)
      for (size_t r = 150; r < t.size(); ++r) t.at(r, k).l2 = float(1e3 * std::pow(3.0, double((r - 150) / 4)));
  const std::vector<Finding> fs = run("exploding_tensor", t);
  REQUIRE(!fs.empty());
  CHECK(fs[0].symptom == "exploding_gradients");
  CHECK(fs[0].conclusive);  // rising at every fresh record of the window
  // The same series with the carried records counted as fresh is flat between samples.
  for (size_t r = 0; r < t.size(); ++r)
    for (size_t k : params) t.at(r, k).flags = 0;
  const std::vector<Finding> flat = run("exploding_tensor", t);
  REQUIRE(!flat.empty());
  CHECK(!flat[0].conclusive);
}

}  // namespace
