// The small Conv/Relu/MaxPool network the probe tests train, its training setup, and
// the comparison of recorded statistics with a separate reduction (probe_sink_test.cpp,
// probe_light_test.cpp).
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "analysis/trace.h"
#include "runtime/attrs.h"
#include "runtime/probe_stats.h"
#include "runtime/probes.h"
#include "runtime/train_config.h"
#include "runtime/trainer.h"
#include "tests/unit/parallel_test_util.h"

namespace dl::test {

// x [N, 2, 16, 16] -> Conv 16 x 3x3 pad 1 -> Relu -> MaxPool 2x2 -> Flatten -> Gemm 4 (mse,
// sgd): at batch 64 the Conv (4.7M multiply-adds), Relu (262k values) and MaxPool run
// their parts on two threads and report to the probes' sinks.
// The graphs the probe tests train on cnn_setup's data: input x [N, 2, 16, 16], output
// y [N, 4] (sgd_mse_model's training settings); initializers and nodes added by name.
struct ProbeGraph {
  ir::Model m;
  explicit ProbeGraph(const std::string& name, int64_t opset = 0) : m(dl::test::sgd_mse_model(name)) {
    if (opset > 0) m.opset = m.original_opset = opset;
    ir::ValueInfo x, y;
    x.name = "x", y.name = "y";
    x.has_shape = y.has_shape = true;
    x.dims = {ir::Dim{-1, "N"}, ir::Dim{2, ""}, ir::Dim{16, ""}, ir::Dim{16, ""}};
    y.dims = {ir::Dim{-1, "N"}, ir::Dim{4, ""}};
    m.graph.inputs = {x};
    m.graph.outputs = {y};
  }
  void floats(const std::string& name, std::vector<int64_t> dims, std::vector<float> v) {
    ir::TensorData t;
    t.name = name;
    t.dims = std::move(dims);
    t.floats = std::move(v);
    m.graph.initializers[name] = t;
  }
  // Seeded random values times scale.
  void random(const std::string& name, std::vector<int64_t> dims, float scale, unsigned seed) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<float> v = random_values(n, seed);
    for (float& x : v) x *= scale;
    floats(name, std::move(dims), std::move(v));
  }
  void int64s(const std::string& name, std::vector<int64_t> dims, std::vector<int64_t> v) {
    ir::TensorData t;
    t.name = name;
    t.dtype = ir::DType::kInt64;
    t.dims = std::move(dims);
    t.ints = std::move(v);
    m.graph.initializers[name] = t;
  }
  void node(const std::string& name, const std::string& type, std::vector<std::string> in, const std::string& out,
            std::map<std::string, ir::Attribute> attrs = {}, int since = 13) {
    ir::Node n;
    n.name = name;
    n.op_type = type;
    n.since_version = since;
    n.inputs = std::move(in);
    n.outputs = {out};
    n.attrs = std::move(attrs);
    m.graph.nodes.push_back(n);
  }
};

inline dl::ir::Model small_cnn() {
  ProbeGraph b("small_cnn");
  b.random("K", {16, 2, 3, 3}, 0.4f, 41);
  b.random("kb", {16}, 0.05f, 42);
  b.random("W", {4, 1024}, 0.05f, 43);
  b.random("b", {4}, 0.05f, 44);
  b.node("/0/Conv", "Conv", {"x", "K", "kb"}, "c", {{"pads", dl::rt::attr_ints({1, 1, 1, 1})}}, 11);
  b.node("/1/Relu", "Relu", {"c"}, "r");
  b.node("/2/MaxPool", "MaxPool", {"r"}, "p",
         {{"kernel_shape", dl::rt::attr_ints({2, 2})}, {"strides", dl::rt::attr_ints({2, 2})}}, 12);
  b.node("/3/Flatten", "Flatten", {"p"}, "f");
  b.node("/4/Gemm", "Gemm", {"f", "W", "b"}, "y", {{"transB", dl::rt::attr_i(1)}});
  return b.m;
}

// small_cnn's training: one epoch of `batches` batches of `batch` random rows (seeded).
struct CnnSetup {
  rt::TrainConfig config;
  rt::Dataset data;
};
inline CnnSetup cnn_setup(const ir::Model& model, int64_t batch, int64_t batches, unsigned seed) {
  CnnSetup s;
  s.config = rt::config_from_metadata(model.metadata);
  s.config.epochs = 1;
  s.config.batch_size = batch;
  s.config.validation_split = 0;
  rt::Dataset& d = s.data;
  d.source = "synthetic";
  d.n = batch * batches;
  d.x_shape = {2, 16, 16};
  d.x_size = 512;
  d.y_size = 4;
  d.x = random_values(d.n * 512, seed);
  d.y = random_values(d.n * 4, seed + 1);
  for (int64_t r = 0; r < d.n; ++r) d.line_of_row.push_back(r + 1);
  return s;
}

// Statistics from the sums an op reported against those of a separate pass: counts and
// extremes exact, sums to float rounding (the parts sum in another order). A plain probe's
// record (an::TensorStats::kNoMagnitudes: no bands, outside the output layer) takes no
// mean |x| or zeros: 0, and its band fractions are 0 as the separate pass's.
inline void check_same_stats(const dl::an::TensorStats& got, const dl::an::TensorStats& want) {
  CHECK(got.count == want.count);
  CHECK(got.min == want.min);
  CHECK(got.max == want.max);
  CHECK(got.mean == doctest::Approx(want.mean).epsilon(1e-5));
  CHECK(got.l2 == doctest::Approx(want.l2).epsilon(1e-5));
  if (got.magnitudes_taken()) {
    CHECK(got.mean_abs == doctest::Approx(want.mean_abs).epsilon(1e-5));
    CHECK(got.zero_frac == want.zero_frac);
  } else {
    CHECK(got.mean_abs == 0.0f);
    CHECK(got.zero_frac == 0.0f);
    CHECK(want.sat_frac == 0.0f);
  }
  CHECK(got.dead_frac == want.dead_frac);
  CHECK(got.sat_frac == want.sat_frac);
  CHECK(got.dead_units == want.dead_units);
}

// f(probe index, probe, tensor, a separate reduction of the tensor) for each step output
// and output gradient probe whose tensor is still in memory after an update.
template <class F>
void for_each_step_probe(const an::Trace& trace, const rt::ExecutionGraph& g, F f) {
  const auto& probes = trace.header.probes;
  for (size_t k = 0; k < probes.size(); ++k) {
    const an::Probe& p = probes[k];
    if (p.kind != an::ProbeKind::kForward && p.kind != an::ProbeKind::kGradient) continue;
    const rt::Step& st = g.steps()[size_t(p.step)];
    const bool fwd = p.kind == an::ProbeKind::kForward;
    const rt::Tensor* t = fwd ? st.fwd.out[0] : st.bwd.dout[0];
    if (!t) continue;
    std::vector<uint8_t> flags;
    f(k, p, *t, rt::reduce_stats(*t, fwd ? &p.op : nullptr, fwd ? &flags : nullptr));
  }
}

// Trains `model` on `setup` without probes and with them (on two threads, then on one):
// with probes, a fresh `Listener` (a TrainListener with a `trace` pointer) checks each
// record as it is written and `after(trace, listener)` checks the run; the parameters
// must come out bit-identical either way.
template <class Listener, class After>
void probes_leave_training_unchanged(const ir::Model& model, const CnnSetup& setup, After after) {
  on_two_then_one([&](int threads) {
    INFO(threads << " thread(s)");
    std::vector<std::vector<float>> params[2];
    for (int with_probes = 0; with_probes < 2; ++with_probes) {
      rt::Trainer trainer(model, setup.config, setup.data, rt::Dataset{});
      an::Trace trace;
      rt::ProbeRecorder probes(trainer.graph(), trace);
      REQUIRE(probes.step_values() > rt::ProbeRecorder::kAlwaysFull);
      trace.set_capacity_bytes(16 << 20);
      Listener check;
      check.trace = &trace;
      if (with_probes) {
        trainer.set_observer(&probes);
        trainer.add_listener(&probes);
        trainer.add_listener(&check);
      }
      trainer.run();
      if (with_probes) after(trace, check);
      for (rt::Param& p : trainer.graph().params())
        params[with_probes].emplace_back(p.value->f(), p.value->f() + p.value->numel());
    }
    REQUIRE(params[0].size() == params[1].size());
    for (size_t k = 0; k < params[0].size(); ++k) CHECK(params[0][k] == params[1][k]);
  });
}

// A light sink's report of t against a light pass over t in memory (the same extremes;
// sums to float rounding: the op's chains group them otherwise).
inline void check_light(const rt::SinkSums& sink, const rt::Tensor& t, const std::string& what) {
  INFO(what);
  const int64_t n = t.numel();
  REQUIRE(sink.reported() == n);
  const rt::stats::Sums got = sink.total();
  rt::stats::Bands light;
  light.light = true;
  rt::stats::Sums want;
  rt::stats::add_values(t.f(), n, light, want);
  CHECK(got.mn == want.mn);
  CHECK(got.mx == want.mx);
  CHECK(std::fabs(got.sum - want.sum) <= 1e-6 * std::sqrt(double(n) * want.sumsq));
  CHECK(got.sumsq == doctest::Approx(want.sumsq).epsilon(1e-6));
}

// After each update: every record against a separate reduction of its tensor.
struct Records : rt::TrainListener {
  const an::Trace* trace = nullptr;
  int light = 0, plain = 0, full = 0;  // records with fractions carried, without magnitudes, full
  void after_update(const rt::ExecutionGraph& g, const rt::IterationInfo& info) override {
    for_each_step_probe(*trace, g, [&](size_t k, const an::Probe& p, const rt::Tensor&, const an::TensorStats& want) {
      const an::TensorStats& got = trace->at(trace->size() - 1, k);
      INFO("iteration " << info.iteration << ", " << p.node << (p.kind == an::ProbeKind::kForward ? " forward" : " gradient"));
      CHECK(got.count == want.count);
      CHECK(got.min == want.min);
      CHECK(got.max == want.max);
      CHECK(got.mean == doctest::Approx(want.mean).epsilon(1e-5));
      CHECK(got.l2 == doctest::Approx(want.l2).epsilon(1e-5));
      CHECK(got.nan == want.nan);
      CHECK(got.inf == want.inf);
      if (got.fractions_carried()) {
        ++light;
      } else if (!got.magnitudes_taken()) {
        check_same_stats(got, want);
        ++plain;
      } else {
        check_same_stats(got, want);
        ++full;
      }
    });
  }
};

// The recorder behind a log of which steps' backward passes it gave a sink to, for dY
// (backward_sink) and for dX (backward_in_sink).
struct SinkLog : rt::Observer {
  rt::ProbeRecorder* probes = nullptr;
  std::map<std::string, int> backward_sinks, backward_in_sinks;  // node -> backward passes given one
  std::map<std::string, int64_t> own_forward;  // node -> its forward probe's own passes (ProbeRecorder::own_passes)
  std::map<std::string, int64_t> own_gradient;  // node -> its gradient probe's
  std::map<std::string, int> forward_sinks;  // node -> forward passes given a sink
  void on_forward(size_t k, const rt::Step& st) override { probes->on_forward(k, st); }
  void on_backward(size_t k, const rt::Step& st) override { probes->on_backward(k, st); }
  rt::ValueSink* forward_sink(size_t k) override {
    rt::ValueSink* s = probes->forward_sink(k);
    if (s) ++forward_sinks[steps->at(k).node->name];
    return s;
  }
  rt::ValueSink* backward_sink(size_t k, const rt::Step& st) override {
    rt::ValueSink* s = probes->backward_sink(k, st);
    if (s) ++backward_sinks[st.node->name];
    return s;
  }
  rt::ValueSink* forward_in_sink(size_t k) override { return probes->forward_in_sink(k); }
  rt::ValueSink* backward_in_sink(size_t k) override {
    rt::ValueSink* s = probes->backward_in_sink(k);
    if (s) ++backward_in_sinks[steps->at(k).node->name];
    return s;
  }
  rt::ValueSink* feature_sink(size_t k) override { return probes->feature_sink(k); }
  rt::InnerStats* inner_sink(size_t k) override { return probes->inner_sink(k); }
  const std::vector<rt::Step>* steps = nullptr;  // the graph's (backward_in_sink names the node)
};

// Trains `model` on `setup` with probes behind a SinkLog, `check` (a TrainListener with a
// `trace` pointer) checking each record as it is written; requires `iterations` records
// and returns the log (its pointers cleared).
template <class Listener>
SinkLog train_with_sink_log(const ir::Model& model, const CnnSetup& setup, Listener& check, size_t iterations) {
  rt::Trainer trainer(model, setup.config, setup.data, rt::Dataset{});
  an::Trace trace;
  rt::ProbeRecorder probes(trainer.graph(), trace);
  trace.set_capacity_bytes(16 << 20);
  SinkLog log;
  log.probes = &probes;
  log.steps = &trainer.graph().steps();
  check.trace = &trace;
  trainer.set_observer(&log);
  trainer.add_listener(&probes);
  trainer.add_listener(&check);
  trainer.run();
  REQUIRE(trace.size() == iterations);
  for (size_t p = 0; p < trace.header.probes.size(); ++p)
    if (trace.header.probes[p].kind == an::ProbeKind::kForward)
      log.own_forward[trace.header.probes[p].node] = probes.own_passes(int(p));
    else if (trace.header.probes[p].kind == an::ProbeKind::kGradient)
      log.own_gradient[trace.header.probes[p].node] = probes.own_passes(int(p));
  check.trace = nullptr;
  log.probes = nullptr;
  log.steps = nullptr;
  return log;
}

}  // namespace dl::test
