// The probes' sinks (runtime/op.h ValueSink): ops report the statistics of the tensors
// they write or read, per op and through a whole training run, on 2 and 1 threads.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "runtime/attrs.h"
#include "runtime/probe_stats.h"
#include "runtime/probes.h"
#include "runtime/train_config.h"
#include "runtime/trainer.h"
#include "tests/unit/op_harness.h"
#include "tests/unit/parallel_test_util.h"

namespace {

using dl::rt::Tensor;
using dl::test::OpRun;
using dl::test::on_two_then_one;
using dl::test::random_values;

// Statistics from the sums an op reported against those of a separate pass: counts and
// extremes exact, sums to float rounding (the parts sum in another order).
void check_same_stats(const dl::an::TensorStats& got, const dl::an::TensorStats& want) {
  CHECK(got.count == want.count);
  CHECK(got.min == want.min);
  CHECK(got.max == want.max);
  CHECK(got.mean == doctest::Approx(want.mean).epsilon(1e-5));
  CHECK(got.l2 == doctest::Approx(want.l2).epsilon(1e-5));
  CHECK(got.mean_abs == doctest::Approx(want.mean_abs).epsilon(1e-5));
  CHECK(got.zero_frac == want.zero_frac);
  CHECK(got.dead_frac == want.dead_frac);
  CHECK(got.dead_units == want.dead_units);
}

}  // namespace

namespace {

// What the op reported to its sink, against a separate reduction of the same tensor.
void check_reported(const dl::rt::SinkSums& sink, const Tensor& t, const char* what) {
  INFO(what);
  REQUIRE(sink.reported() == t.numel());
  check_same_stats(dl::rt::stats_of(t, sink.total(), nullptr, nullptr), dl::rt::reduce_stats(t, nullptr, nullptr));
}

}  // namespace

TEST_CASE("ops report their output (forward) and output gradient (backward) to the probe's sink") {
  on_two_then_one([&](int) {
    dl::rt::SinkSums fwd, bwd;
    fwd.reset({});
    bwd.reset({});
    {  // Conv: per image, from its parts (large enough for two threads)
      const int64_t n = 64, c = 3, h = 16, w = 16, m = 8;
      auto node = dl::rt::sample_node("Conv", 3, 1, {{"pads", dl::rt::attr_ints({1, 1, 1, 1})}}, 11);
      OpRun run(node, {Tensor::floats({n, c, h, w}, random_values(n * c * h * w, 21)),
                       Tensor::floats({m, c, 3, 3}, random_values(m * c * 9, 22)),
                       Tensor::floats({m}, random_values(m, 29))},
                true);
      run.out_stats = &fwd;
      run.dout_stats = &bwd;
      run.forward();
      check_reported(fwd, run.outputs[0], "Conv forward");
      const Tensor dy = Tensor::floats(run.outputs[0].shape(), random_values(run.outputs[0].numel(), 23));
      run.backward({&dy}, {true, true, true});
      check_reported(bwd, dy, "Conv backward");
    }
    for (int64_t n : {int64_t{1000}, int64_t{300000}}) {  // Relu: one part, and parts in chunks
      fwd.reset({});
      bwd.reset({});
      OpRun run(dl::rt::sample_node("Relu", 1, 1, {}, 14), {Tensor::floats({n}, random_values(n, 24))}, true);
      run.out_stats = &fwd;
      run.dout_stats = &bwd;
      run.forward();
      check_reported(fwd, run.outputs[0], "Relu forward");
      const Tensor dy = Tensor::floats({n}, random_values(n, 25));
      run.backward({&dy}, {true});
      check_reported(bwd, dy, "Relu backward");
    }
    for (int64_t n : {int64_t{1000}, int64_t{300000}}) {
      // Relu with light sinks: the light sums of its output and its input (the previous
      // step's output) from its loops' registers; of dY in backward. Same outputs.
      dl::rt::stats::Bands light;
      light.light = true;
      dl::rt::SinkSums in;
      fwd.reset(light);
      bwd.reset(light);
      in.reset(light);
      const Tensor x = Tensor::floats({n}, random_values(n, 30));
      OpRun run(dl::rt::sample_node("Relu", 1, 1, {}, 14), {x}, true);
      REQUIRE(run.op->reports_input());
      run.out_stats = &fwd;
      run.in_stats = &in;
      run.forward();
      OpRun plain(dl::rt::sample_node("Relu", 1, 1, {}, 14), {x}, true);
      plain.forward();
      CHECK(run.outputs[0].fvec() == plain.outputs[0].fvec());
      const std::tuple<dl::rt::SinkSums*, const Tensor*, const char*> reports[] = {
          {&fwd, &run.outputs[0], "light Relu forward: output"}, {&in, &x, "light Relu forward: input"}};
      for (const auto& report : reports) {  // (no structured bindings: doctest's INFO captures)
        dl::rt::SinkSums* sink = std::get<0>(report);
        const Tensor* t = std::get<1>(report);
        INFO(std::string(std::get<2>(report)));
        REQUIRE(sink->reported() == n);
        const dl::rt::stats::Sums got = sink->total();
        dl::rt::stats::Sums want;
        dl::rt::stats::add_values(t->f(), n, light, want);
        // (Two streams: other chains, other rounding; float sums to ~1e-6 of sum |x|.)
        CHECK(std::fabs(got.sum - want.sum) <= 1e-6 * std::sqrt(double(n) * want.sumsq));
        CHECK(got.sumsq == doctest::Approx(want.sumsq).epsilon(1e-6));
        CHECK(got.mn == want.mn);
        CHECK(got.mx == want.mx);
      }
      const Tensor dy = Tensor::floats({n}, random_values(n, 31));
      run.dout_stats = &bwd;
      const std::vector<Tensor> dx = run.backward({&dy}, {true}), dx_plain = plain.backward({&dy}, {true});
      CHECK(dx[0].fvec() == dx_plain[0].fvec());
      REQUIRE(bwd.reported() == n);
      dl::rt::stats::Sums want;
      dl::rt::stats::add_values(dy.f(), n, light, want);
      CHECK(bwd.total().sum == want.sum);  // one stream: light_pass, the same bits
      CHECK(bwd.total().sumsq == want.sumsq);
    }
    {  // MaxPool 2x2 stride 2 reports; the general path (padding) leaves it to the probe
      fwd.reset({});
      bwd.reset({});
      auto node = dl::rt::sample_node(
          "MaxPool", 1, 1, {{"kernel_shape", dl::rt::attr_ints({2, 2})}, {"strides", dl::rt::attr_ints({2, 2})}}, 12);
      OpRun run(node, {Tensor::floats({64, 6, 28, 28}, random_values(64 * 6 * 784, 26))}, true);  // LeNet's pool1
      run.out_stats = &fwd;
      run.dout_stats = &bwd;
      run.forward();
      check_reported(fwd, run.outputs[0], "MaxPool forward");
      const Tensor dy = Tensor::floats(run.outputs[0].shape(), random_values(run.outputs[0].numel(), 27));
      run.backward({&dy}, {true});
      check_reported(bwd, dy, "MaxPool backward");
      fwd.reset({});
      auto padded = dl::rt::sample_node("MaxPool", 1, 1,
                                        {{"kernel_shape", dl::rt::attr_ints({2, 2})}, {"pads", dl::rt::attr_ints({1, 1, 1, 1})}},
                                        12);
      OpRun general(padded, {Tensor::floats({4, 5, 8, 8}, random_values(4 * 5 * 64, 28))}, true);
      general.out_stats = &fwd;
      general.forward();
      CHECK(fwd.reported() == 0);
    }
  });
}

namespace {

// x [N, 2, 16, 16] -> Conv 16 x 3x3 pad 1 -> Relu -> MaxPool 2x2 -> Flatten -> Gemm 4 (mse,
// sgd): at batch 64 the Conv (4.7M multiply-adds), Relu (262k values) and MaxPool run
// their parts on two threads and report to the probes' sinks.
dl::ir::Model small_cnn() {
  using namespace dl;
  ir::Model m = dl::test::sgd_mse_model("small_cnn");
  ir::Graph& g = m.graph;
  ir::ValueInfo x;
  x.name = "x";
  x.has_shape = true;
  x.dims = {ir::Dim{-1, "N"}, ir::Dim{2, ""}, ir::Dim{16, ""}, ir::Dim{16, ""}};
  ir::ValueInfo y;
  y.name = "y";
  y.has_shape = true;
  y.dims = {ir::Dim{-1, "N"}, ir::Dim{4, ""}};
  g.inputs = {x};
  g.outputs = {y};
  auto tensor = [&](const std::string& name, std::vector<int64_t> dims, float scale, unsigned seed) {
    ir::TensorData t;
    t.name = name;
    t.dims = dims;
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    t.floats = random_values(n, seed);
    for (float& v : t.floats) v *= scale;
    g.initializers[name] = t;
  };
  tensor("K", {16, 2, 3, 3}, 0.4f, 41);
  tensor("kb", {16}, 0.05f, 42);
  tensor("W", {4, 1024}, 0.05f, 43);
  tensor("b", {4}, 0.05f, 44);
  auto node = [&](const std::string& name, const std::string& type, std::vector<std::string> in, const std::string& out,
                  std::map<std::string, ir::Attribute> attrs, int since) {
    ir::Node n;
    n.name = name;
    n.op_type = type;
    n.since_version = since;
    n.inputs = std::move(in);
    n.outputs = {out};
    n.attrs = std::move(attrs);
    g.nodes.push_back(n);
  };
  node("/0/Conv", "Conv", {"x", "K", "kb"}, "c", {{"pads", dl::rt::attr_ints({1, 1, 1, 1})}}, 11);
  node("/1/Relu", "Relu", {"c"}, "r", {}, 13);
  node("/2/MaxPool", "MaxPool", {"r"}, "p",
       {{"kernel_shape", dl::rt::attr_ints({2, 2})}, {"strides", dl::rt::attr_ints({2, 2})}}, 12);
  node("/3/Flatten", "Flatten", {"p"}, "f", {}, 13);
  ir::Attribute trans;
  trans.kind = ir::Attribute::Kind::kInt;
  trans.i = 1;
  node("/4/Gemm", "Gemm", {"f", "W", "b"}, "y", {{"transB", trans}}, 13);
  return m;
}

// After each update: every step output and output gradient the probes recorded (through
// the ops' sinks where they report) equals a separate reduction of the tensor, still in
// memory.
struct StepChecker : dl::rt::TrainListener {
  const dl::an::Trace* trace = nullptr;
  int checked = 0;
  void after_update(const dl::rt::ExecutionGraph& g, const dl::rt::IterationInfo&) override {
    const auto& probes = trace->header.probes;
    for (size_t k = 0; k < probes.size(); ++k) {
      const dl::an::Probe& p = probes[k];
      if (p.kind != dl::an::ProbeKind::kForward && p.kind != dl::an::ProbeKind::kGradient) continue;
      const dl::rt::Step& st = g.steps()[size_t(p.step)];
      const bool fwd = p.kind == dl::an::ProbeKind::kForward;
      const Tensor* t = fwd ? st.fwd.out[0] : st.bwd.dout[0];
      if (!t) continue;
      std::vector<uint8_t> flags;
      const dl::an::TensorStats want = dl::rt::reduce_stats(*t, fwd ? &p.op : nullptr, fwd ? &flags : nullptr);
      const dl::an::TensorStats& got = trace->at(trace->size() - 1, k);
      INFO(p.node << (fwd ? " forward" : " gradient"));
      check_same_stats(got, want);
      ++checked;
    }
  }
};

}  // namespace

TEST_CASE("probes through the ops' sinks: a Conv/Relu/MaxPool network records what a separate pass would") {
  const dl::ir::Model model = small_cnn();
  for (bool fused : {true, false}) on_two_then_one([&](int) {
    INFO("fused " << fused);  // false: statistics in the probes' own pass (set_fused)
    dl::rt::TrainConfig config = dl::rt::config_from_metadata(model.metadata);
    config.epochs = 1;
    config.batch_size = 64;
    config.validation_split = 0;
    dl::rt::Dataset d;
    d.source = "synthetic";
    d.n = 192;
    d.x_shape = {2, 16, 16};
    d.x_size = 512;
    d.y_size = 4;
    d.x = random_values(d.n * 512, 45);
    d.y = random_values(d.n * 4, 46);
    for (int64_t r = 0; r < d.n; ++r) d.line_of_row.push_back(r + 1);
    dl::rt::Trainer trainer(model, config, d, dl::rt::Dataset{});
    dl::an::Trace trace;
    dl::rt::ProbeRecorder probes(trainer.graph(), trace);
    probes.set_fused(fused);
    trace.set_capacity_bytes(16 << 20);
    trace.reserve_iterations(3);
    trainer.set_observer(&probes);
    trainer.add_listener(&probes);
    StepChecker check;
    check.trace = &trace;
    trainer.add_listener(&check);
    trainer.run();
    CHECK(trace.size() == 3);
    CHECK(check.checked >= 3 * 8);  // 5 forward and at least 3 gradient probes per iteration
  });
}

namespace {

// Light iterations (runtime/probes.h): each step probe's fresh fields against a separate
// reduction of the tensor, its carried fields against its last full record. After the
// update of iteration `scale_after` the Gemm weights W grow 10x (the Gemm output's norm
// and every gradient's jump); after that of `nan_after` a weight of the first conv turns
// NaN.
struct LightChecker : dl::rt::TrainListener {
  const dl::an::Trace* trace = nullptr;
  int64_t scale_after = -1, nan_after = -1;
  std::map<size_t, dl::an::TensorStats> last_full;  // per probe
  std::map<int64_t, std::string> pattern;           // per iteration: F (full) or L (light) per step probe
  int light_checked = 0;
  void after_update(const dl::rt::ExecutionGraph& g, const dl::rt::IterationInfo& info) override {
    const auto& probes = trace->header.probes;
    for (size_t k = 0; k < probes.size(); ++k) {
      const dl::an::Probe& p = probes[k];
      if (p.kind != dl::an::ProbeKind::kForward && p.kind != dl::an::ProbeKind::kGradient) continue;
      const dl::rt::Step& st = g.steps()[size_t(p.step)];
      const bool fwd = p.kind == dl::an::ProbeKind::kForward;
      const Tensor* t = fwd ? st.fwd.out[0] : st.bwd.dout[0];
      if (!t) continue;
      std::vector<uint8_t> flags;
      const dl::an::TensorStats want = dl::rt::reduce_stats(*t, fwd ? &p.op : nullptr, fwd ? &flags : nullptr);
      const dl::an::TensorStats& got = trace->at(trace->size() - 1, k);
      INFO("iteration " << info.iteration << ", " << p.node << (fwd ? " forward" : " gradient"));
      CHECK(got.nan == want.nan);
      CHECK(got.inf == want.inf);
      pattern[info.iteration] += got.fractions_carried() ? 'L' : 'F';
      if (!got.fractions_carried()) {
        check_same_stats(got, want);
        last_full[k] = got;
        continue;
      }
      REQUIRE(last_full.count(k));
      const dl::an::TensorStats& last = last_full[k];
      CHECK(got.flags == dl::an::TensorStats::kFractionsCarried);
      CHECK(got.count == want.count);
      CHECK(got.min == want.min);
      CHECK(got.max == want.max);
      CHECK(got.mean == doctest::Approx(want.mean).epsilon(1e-5));
      CHECK(got.std == doctest::Approx(want.std).epsilon(1e-4));
      CHECK(got.l2 == doctest::Approx(want.l2).epsilon(1e-5));
      CHECK(got.mean_abs == last.mean_abs);
      CHECK(got.zero_frac == last.zero_frac);
      CHECK(got.dead_frac == last.dead_frac);
      CHECK(got.sat_frac == last.sat_frac);
      CHECK(got.dead_units == last.dead_units);
      ++light_checked;
    }
    for (dl::rt::Param& prm : const_cast<dl::rt::ExecutionGraph&>(g).params()) {
      if (prm.name == "W" && info.iteration == scale_after)
        for (int64_t i = 0; i < prm.value->numel(); ++i) prm.value->f()[i] *= 10.0f;
      if (prm.name == "K" && info.iteration == nan_after) prm.value->f()[0] = std::numeric_limits<float>::quiet_NaN();
    }
  }
};

}  // namespace

TEST_CASE("probes: light iterations between full ones; a jump of norm or a NaN makes the rest of the iteration full") {
  // 24 iterations of one epoch; 262k step values per iteration (more than kAlwaysFull), so
  // step probes are full at iterations 0-7, every kStepFullEvery-th and the epoch's last,
  // light between.
  const dl::ir::Model model = small_cnn();
  dl::rt::TrainConfig config = dl::rt::config_from_metadata(model.metadata);
  config.epochs = 1;
  config.batch_size = 64;
  config.validation_split = 0;
  dl::rt::Dataset d;
  d.source = "synthetic";
  d.n = 64 * 24;
  d.x_shape = {2, 16, 16};
  d.x_size = 512;
  d.y_size = 4;
  d.x = random_values(d.n * 512, 47);
  d.y = random_values(d.n * 4, 48);
  for (int64_t r = 0; r < d.n; ++r) d.line_of_row.push_back(r + 1);
  dl::rt::Trainer trainer(model, config, d, dl::rt::Dataset{});
  dl::an::Trace trace;
  dl::rt::ProbeRecorder probes(trainer.graph(), trace);
  REQUIRE(probes.step_values() > dl::rt::ProbeRecorder::kAlwaysFull);
  CHECK(probes.step_full_every() == dl::rt::ProbeRecorder::kStepFullEvery);
  trace.set_capacity_bytes(16 << 20);
  trace.reserve_iterations(24);
  trainer.set_observer(&probes);
  trainer.add_listener(&probes);
  LightChecker check;
  check.trace = &trace;
  check.scale_after = 12;  // iteration 13: a light one
  check.nan_after = 20;    // iteration 21: a light one
  trainer.add_listener(&check);
  trainer.run();
  REQUIRE(trace.size() == 24);
  // Probes in program order, each step's output then its gradient: Conv, Relu, MaxPool,
  // Flatten, Gemm.
  const std::string full(10, 'F'), light(10, 'L');
  const int64_t every = dl::rt::ProbeRecorder::kStepFullEvery;
  REQUIRE(every >= 4);  // so that iterations 13 and 21 are light ones
  for (int64_t it = 0; it < 24; ++it) {
    if (it == 13 || it == 21) continue;
    INFO("iteration " << it);
    // (From iteration 21 on every tensor holds NaN: full.)
    const bool on_schedule = it < dl::rt::ProbeRecorder::kFirstFull || it % every == 0 || it > 21;
    CHECK(check.pattern[it] == (on_schedule ? full : light));
  }
  // Iteration 13: the outputs of Conv, Relu, MaxPool and Flatten are light; the Gemm
  // output, whose norm jumped, and everything after it (the gradients) are full.
  CHECK(check.pattern[13] == "LFLFLFLFFF");
  // Iteration 21: the NaN shows in the first tensor; everything is full, NaN counted.
  CHECK(check.pattern[21] == full);
  CHECK(trace.at(21, 0).nan > 0);
  CHECK(check.light_checked >= 5 * 10);
}

TEST_CASE("probes do not change training: the fused light paths give the same parameters, bit for bit") {
  // Relu's fused loops and Conv's fused dB + dY statistics must compute what the plain
  // loops do. 16 iterations: light ones from iteration 8 on.
  const dl::ir::Model model = small_cnn();
  dl::rt::TrainConfig config = dl::rt::config_from_metadata(model.metadata);
  config.epochs = 1;
  config.batch_size = 64;
  config.validation_split = 0;
  dl::rt::Dataset d;
  d.source = "synthetic";
  d.n = 64 * 16;
  d.x_shape = {2, 16, 16};
  d.x_size = 512;
  d.y_size = 4;
  d.x = random_values(d.n * 512, 49);
  d.y = random_values(d.n * 4, 50);
  for (int64_t r = 0; r < d.n; ++r) d.line_of_row.push_back(r + 1);
  std::vector<std::vector<float>> params[2];
  for (int with_probes = 0; with_probes < 2; ++with_probes) {
    dl::rt::Trainer trainer(model, config, d, dl::rt::Dataset{});
    dl::an::Trace trace;
    dl::rt::ProbeRecorder probes(trainer.graph(), trace);
    trace.set_capacity_bytes(16 << 20);
    if (with_probes) {
      trainer.set_observer(&probes);
      trainer.add_listener(&probes);
    }
    trainer.run();
    if (with_probes) {
      REQUIRE(trace.size() == 16);
      CHECK(trace.at(9, 0).fractions_carried());
    }
    for (dl::rt::Param& p : trainer.graph().params()) params[with_probes].emplace_back(p.value->f(), p.value->f() + p.value->numel());
  }
  REQUIRE(params[0].size() == params[1].size());
  for (size_t k = 0; k < params[0].size(); ++k) CHECK(params[0][k] == params[1][k]);
}

TEST_CASE("probes: a small model's records are all full, also where the trace decimates") {
  // small_cnn at batch 2: 41k step values and 13k parameter values per iteration, both
  // under kAlwaysFull. A capacity of 17 records decimates at an odd count, admitting an
  // iteration that is no multiple of the doubled stride.
  const dl::ir::Model model = small_cnn();
  dl::rt::TrainConfig config = dl::rt::config_from_metadata(model.metadata);
  config.epochs = 1;
  config.batch_size = 2;
  config.validation_split = 0;
  dl::rt::Dataset d;
  d.source = "synthetic";
  d.n = 2 * 64;
  d.x_shape = {2, 16, 16};
  d.x_size = 512;
  d.y_size = 4;
  d.x = random_values(d.n * 512, 51);
  d.y = random_values(d.n * 4, 52);
  for (int64_t r = 0; r < d.n; ++r) d.line_of_row.push_back(r + 1);
  dl::rt::Trainer trainer(model, config, d, dl::rt::Dataset{});
  dl::an::Trace trace;
  dl::rt::ProbeRecorder probes(trainer.graph(), trace);
  REQUIRE(probes.step_values() <= dl::rt::ProbeRecorder::kAlwaysFull);
  CHECK(probes.step_full_every() == 1);
  CHECK(probes.full_every() == 1);
  const int64_t per_record = int64_t(sizeof(dl::an::IterationRecord)) +
                             int64_t(trace.header.probes.size()) * int64_t(sizeof(dl::an::TensorStats));
  trace.set_capacity_bytes(17 * per_record + per_record / 2);
  trainer.set_observer(&probes);
  trainer.add_listener(&probes);
  // Each record as it is written (a later decimation drops the odd ones).
  struct FlagChecker : dl::rt::TrainListener {
    const dl::an::Trace* trace = nullptr;
    bool odd_admitted = false;
    void after_update(const dl::rt::ExecutionGraph&, const dl::rt::IterationInfo& info) override {
      const size_t r = trace->size() - 1;
      if (trace->records[r].iteration != info.iteration) return;  // not recorded
      odd_admitted = odd_admitted || info.iteration % trace->stride() != 0;
      for (size_t k = 0; k < trace->header.probes.size(); ++k) {
        INFO("iteration " << info.iteration << ", probe " << k);
        CHECK(trace->at(r, k).flags == 0u);
      }
    }
  } check;
  check.trace = &trace;
  trainer.add_listener(&check);
  trainer.run();
  CHECK(trace.stride() >= 4);
  CHECK(check.odd_admitted);  // the case this test is about happened
}
