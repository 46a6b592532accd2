// Ops that reduce the probes' light statistics in their own loops (ValueSink::light,
// runtime/op.h) beyond Relu and Conv (probe_sink_test.cpp): what each reports against a
// separate reduction of the tensor (count, min and max exact, sums to float rounding),
// the op's outputs and gradients bit-identical to a run without sinks, and a network of
// them trained with probes on and off to the same parameters, bit for bit.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>

#include "runtime/probe_stats.h"
#include "runtime/probes.h"
#include "runtime/value_simd.h"
#include "tests/unit/op_harness.h"
#include "tests/unit/small_cnn.h"

namespace {

using dl::rt::SinkSums;
using dl::rt::Tensor;
using dl::test::OpRun;
using dl::test::random_values;

dl::rt::stats::Bands light_bands() {
  dl::rt::stats::Bands b;
  b.light = true;
  return b;
}


}  // namespace

TEST_CASE("probes: the statistics kernels' vectors are the target's native width") {
  // A 16-float vector on an AVX2 target is no register type: GCC kept it in memory and
  // reduced 13x slower per value (bench/README.md, run 13).
#if defined(__AVX512F__)
  CHECK(sizeof(dl::rt::simd::VecF) == 64);
#elif defined(__AVX__)
  CHECK(sizeof(dl::rt::simd::VecF) == 32);
#else
  CHECK(sizeof(dl::rt::simd::VecF) == 16);
#endif
  CHECK(dl::rt::simd::kLanes * sizeof(float) == sizeof(dl::rt::simd::VecF));
}

// A Conv's bias row sums (LightSums::put_row_plus, runtime/ops/conv_batched.h) take each
// value plus b as the op computes it: with b = -0, -0 + -0 stays -0 in the vector lanes as
// in the tail, so the minimum is -0, as over the values plus b themselves. (Broadcast as
// 0 + b, the lanes added +0: the body's -0s became +0, the minimum +0.)
TEST_CASE("probes: a row's sums plus a bias of -0 are the sums of the values plus -0") {
  std::vector<float> row(37, 1.0f);  // a vector body of -0 (32 values) and a tail of 1s
  std::fill(row.begin(), row.begin() + 32, -0.0f);
  dl::rt::simd::LightSums plus, plain;
  plus.put_row_plus(row.data(), int64_t(row.size()), -0.0f);
  plain.put_row(row.data(), int64_t(row.size()));  // x + -0 is x for every x here
  const dl::rt::stats::Sums& a = plus.finish();
  const dl::rt::stats::Sums& b = plain.finish();
  CHECK(a.mn == 0.0f);
  CHECK(std::signbit(a.mn) == std::signbit(b.mn));
  CHECK(std::signbit(a.mx) == std::signbit(b.mx));
  CHECK(std::signbit(a.mn));
  CHECK(a.sum == b.sum);
  CHECK(a.sumsq == b.sumsq);
}

TEST_CASE("Clip reports Y and X (forward, together or alone) and dY (backward) to light sinks; same outputs") {
  // Lengths with 4-vector groups, single vectors and a scalar tail; below one vector.
  for (const int64_t n : {int64_t(16 * 1024 + 37), int64_t(300), int64_t(7)}) {
    const std::vector<Tensor> in = {Tensor::floats({n}, random_values(n, 61))};
    const auto node = dl::rt::sample_node("Clip", 1, 1, {{"min", dl::rt::attr_f(-0.5f)}, {"max", dl::rt::attr_f(0.6f)}}, 6);
    for (int which = 0; which < 3; ++which) {  // Y and X; Y alone; X alone
      const std::string label = std::to_string(n) + " values, " + (which == 0 ? "Y and X" : which == 1 ? "Y" : "X");
      INFO(label);
      OpRun fused(node, in, true), plain(node, in, true);
      REQUIRE(fused.op->reports_input());
      SinkSums y, x, dy;
      y.reset(light_bands());
      x.reset(light_bands());
      dy.reset(light_bands());
      if (which != 2) fused.out_stats = &y;
      if (which != 1) fused.in_stats = &x;
      fused.dout_stats = &dy;
      fused.forward();
      plain.forward();
      CHECK(fused.outputs[0].fvec() == plain.outputs[0].fvec());
      if (which != 2) dl::test::check_light(y, fused.outputs[0], "Y " + label);
      if (which != 1) dl::test::check_light(x, in[0], "X " + label);
      const Tensor g = Tensor::floats({n}, random_values(n, 62));
      const std::vector<Tensor> d = fused.backward({&g}, {true}), d_plain = plain.backward({&g}, {true});
      CHECK(d[0].fvec() == d_plain[0].fvec());
      dl::test::check_light(dy, g, "dY " + label);
    }
  }
}

TEST_CASE("BatchNormalization reports Y and X (forward) and dY and dX (backward) to light sinks; same outputs") {
  struct Case {
    int64_t n, c, h, w;
    bool training;
    bool reports;  // Y and X to light sinks (dY and dX: where channels hold 4096 values or more, in long rows)
    bool reports_dy;
  };
  // 16x16 rows (4096 values per channel), training and inference statistics; smaller
  // channels (12x12, 5x5): training derives Y's and X's sums from the batch statistics,
  // inference leaves them to the probe's own pass, as both do dY; rows shorter than
  // sum_of's lanes (2x2 and 1x1: mobilenet_v2's last maps) are left to it always.
  const Case cases[] = {{16, 8, 16, 16, true, true, true},    {16, 6, 20, 20, false, true, true},
                        {16, 32, 12, 12, true, true, false},  {4, 6, 5, 5, true, true, false},
                        {8, 16, 2, 2, true, false, false},    {8, 16, 1, 1, true, false, false},
                        {16, 32, 12, 12, false, false, false}, {8, 16, 2, 2, false, false, false}};
  dl::rt::stats::Sums first[std::size(cases)][4];
  dl::test::on_two_then_one([&](int threads) {
    for (const Case& cs : cases) {
      const std::string label = std::to_string(cs.n) + "x" + std::to_string(cs.c) + "x" + std::to_string(cs.h) + "x" +
                                std::to_string(cs.w) + (cs.training ? " training" : " inference") + ", " +
                                std::to_string(threads) + " thread(s)";
      INFO(label);
      const int64_t numel = cs.n * cs.c * cs.h * cs.w;
      std::vector<float> var = random_values(cs.c, 53);
      for (float& v : var) v = 1.0f + 0.5f * v;
      const std::vector<Tensor> in = {Tensor::floats({cs.n, cs.c, cs.h, cs.w}, random_values(numel, 50)),
                                      Tensor::floats({cs.c}, random_values(cs.c, 51)),
                                      Tensor::floats({cs.c}, random_values(cs.c, 52)),
                                      Tensor::floats({cs.c}, random_values(cs.c, 54)), Tensor::floats({cs.c}, var)};
      const auto node = dl::rt::sample_node("BatchNormalization", 5, 1, {}, 15);
      OpRun fused(node, in, cs.training), plain(node, in, cs.training);
      REQUIRE(fused.op->reports_input());
      SinkSums y, x, dy, dx;
      y.reset(light_bands());
      x.reset(light_bands());
      dy.reset(light_bands());
      dx.reset(light_bands());
      fused.out_stats = &y;
      fused.in_stats = &x;
      fused.dout_stats = &dy;
      fused.din_stats = &dx;
      REQUIRE(fused.op->reports_input_gradient());
      fused.forward();
      plain.forward();
      CHECK(fused.outputs[0].fvec() == plain.outputs[0].fvec());
      const Tensor g = Tensor::floats(fused.outputs[0].shape(), random_values(numel, 55));
      const std::vector<Tensor> d = fused.backward({&g}, {true, true, true}),
                                d_plain = plain.backward({&g}, {true, true, true});
      for (size_t i = 0; i < 3; ++i) CHECK(d[i].fvec() == d_plain[i].fvec());
      if (cs.reports) {
        dl::test::check_light(y, fused.outputs[0], "Y " + label);
        dl::test::check_light(x, in[0], "X " + label);
      } else {
        CHECK(y.reported() == 0);
        CHECK(x.reported() == 0);
      }
      if (cs.reports_dy) {
        dl::test::check_light(dy, g, "dY " + label);
        dl::test::check_light(dx, d[0], "dX " + label);
      } else {
        CHECK(dy.reported() == 0);
        CHECK(dx.reported() == 0);
      }
      CHECK(fused.op->reports_output() == (cs.h * cs.w >= 16));
      // The same sums, bit for bit, at 2 threads (first) and 1.
      const size_t at = size_t(&cs - cases);
      const dl::rt::stats::Sums got[4] = {y.total(), x.total(), dy.total(), dx.total()};
      for (int k = 0; k < 4; ++k) {
        if (threads == 2) {
          first[at][k] = got[k];
          continue;
        }
        CHECK(got[k].sum == first[at][k].sum);
        CHECK(got[k].sumsq == first[at][k].sumsq);
        CHECK(got[k].mn == first[at][k].mn);
        CHECK(got[k].mx == first[at][k].mx);
      }
      // A full (not light) sink is left to the probe's own pass: nothing reported.
      SinkSums full;
      full.reset({});
      OpRun unfused(node, in, cs.training);
      unfused.out_stats = &full;
      unfused.dout_stats = &full;
      unfused.din_stats = &full;
      unfused.forward();
      unfused.backward({&g}, {true, true, true});
      CHECK(full.reported() == 0);
    }
  });
}

TEST_CASE("BatchNormalization's light sums from its batch statistics are not finite when a value is not") {
  const int64_t n = 8, c = 4, hw = 16, numel = n * c * hw;  // (4x4 rows: derived)
  const auto node = dl::rt::sample_node("BatchNormalization", 5, 1, {}, 15);
  auto run = [&](std::vector<float> x, float scale, SinkSums& y, SinkSums& xs) {
    const std::vector<Tensor> in = {Tensor::floats({n, c, 4, 4}, std::move(x)), Tensor::floats({c}, std::vector<float>(c, scale)),
                                    Tensor::floats({c}, std::vector<float>(c, 0.5f)), Tensor::floats({c}, std::vector<float>(c, 0.0f)),
                                    Tensor::floats({c}, std::vector<float>(c, 1.0f))};
    OpRun op(node, in, true);
    y.reset(light_bands());
    xs.reset(light_bands());
    op.out_stats = &y;
    op.in_stats = &xs;
    op.forward();
    return op.outputs[0];
  };
  SinkSums y, x;
  std::vector<float> values = random_values(numel, 57);
  const Tensor ok = run(values, 1.5f, y, x);
  dl::test::check_light(y, ok, "finite Y");
  CHECK(std::isfinite(y.total().sum));
  CHECK(std::isfinite(x.total().sum));
  // X holds an Inf: both tensors' sums are not finite (the probe then counts in full).
  values[5] = INFINITY;
  run(values, 1.5f, y, x);
  CHECK_FALSE(std::isfinite(x.total().sum));
  CHECK_FALSE(std::isfinite(y.total().sum));
  // X finite, the scale finite after normalising (a = scale / std), but the outlier's Y
  // overflows to Inf: the derived sums alone would be finite; Y's must not be, X's are.
  values[5] = 3.0f;
  const Tensor big = run(values, 1e38f, y, x);
  int64_t infs = 0, nans = 0;
  for (float v : big.fvec()) infs += std::isinf(v), nans += std::isnan(v);
  REQUIRE(infs > 0);
  REQUIRE(nans == 0);  // (a and b finite: a NaN would come from an infinite factor)
  CHECK_FALSE(std::isfinite(y.total().sum));
  CHECK(std::isfinite(x.total().sum));
}

namespace {

// x [N, 2, 16, 16] -> Conv 8 (no bias) -> BN -> Relu -> Conv 8 -> BN -> Add (the Relu's
// output: a residual) -> Relu -> GlobalAveragePool -> Flatten -> Gemm 4 (mse, sgd): BN
// reports the Conv output before it (in_stats), its own output where an Add and not a
// Relu reads it, and its dY. At batch 64 each activation holds 131k values: light
// iterations from the 9th on.
dl::ir::Model residual_bn_cnn() {
  using namespace dl;
  ir::Model m = dl::test::sgd_mse_model("residual_bn_cnn");
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
  auto tensor = [&](const std::string& name, std::vector<int64_t> dims, float scale, float offset, unsigned seed) {
    ir::TensorData t;
    t.name = name;
    t.dims = dims;
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    t.floats = random_values(n, seed);
    for (float& v : t.floats) v = offset + scale * v;
    g.initializers[name] = t;
  };
  tensor("K1", {8, 2, 3, 3}, 0.4f, 0.0f, 61);
  tensor("K2", {8, 8, 3, 3}, 0.2f, 0.0f, 62);
  for (const char* bn : {"bn1", "bn2"}) {
    const std::string b = bn;
    tensor(b + "_scale", {8}, 0.2f, 1.0f, 63);
    tensor(b + "_bias", {8}, 0.1f, 0.0f, 64);
    tensor(b + "_mean", {8}, 0.0f, 0.0f, 65);
    tensor(b + "_var", {8}, 0.0f, 1.0f, 66);
  }
  tensor("W", {4, 8}, 0.3f, 0.0f, 67);
  tensor("b", {4}, 0.05f, 0.0f, 68);
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
  const auto pads = dl::rt::attr_ints({1, 1, 1, 1});
  node("/0/Conv", "Conv", {"x", "K1"}, "c1", {{"pads", pads}}, 11);
  node("/1/BatchNormalization", "BatchNormalization", {"c1", "bn1_scale", "bn1_bias", "bn1_mean", "bn1_var"}, "n1", {},
       15);
  node("/2/Relu", "Relu", {"n1"}, "r1", {}, 14);
  node("/3/Conv", "Conv", {"r1", "K2"}, "c2", {{"pads", pads}}, 11);
  node("/4/BatchNormalization", "BatchNormalization", {"c2", "bn2_scale", "bn2_bias", "bn2_mean", "bn2_var"}, "n2", {},
       15);
  node("/5/Add", "Add", {"n2", "r1"}, "s", {}, 14);
  node("/6/Relu", "Relu", {"s"}, "r2", {}, 14);
  node("/7/GlobalAveragePool", "GlobalAveragePool", {"r2"}, "p", {}, 1);
  node("/8/Flatten", "Flatten", {"p"}, "f", {}, 13);
  ir::Attribute trans;
  trans.kind = ir::Attribute::Kind::kInt;
  trans.i = 1;
  node("/9/Gemm", "Gemm", {"f", "W", "b"}, "y", {{"transB", trans}}, 13);
  return m;
}

// After each update: the light records' fresh fields against a separate reduction.
struct LightRecords : dl::rt::TrainListener {
  const dl::an::Trace* trace = nullptr;
  int light_checked = 0;
  void after_update(const dl::rt::ExecutionGraph& g, const dl::rt::IterationInfo& info) override {
    dl::test::for_each_step_probe(*trace, g, [&](size_t k, const dl::an::Probe& p, const Tensor&,
                                                 const dl::an::TensorStats& want) {
      const dl::an::TensorStats& got = trace->at(trace->size() - 1, k);
      INFO("iteration " << info.iteration << ", " << p.node << (p.kind == dl::an::ProbeKind::kForward ? " forward" : " gradient"));
      CHECK(got.count == want.count);
      CHECK(got.min == want.min);
      CHECK(got.max == want.max);
      CHECK(got.mean == doctest::Approx(want.mean).epsilon(1e-5));
      CHECK(got.l2 == doctest::Approx(want.l2).epsilon(1e-5));
      if (!got.fractions_carried()) dl::test::check_same_stats(got, want);
      else ++light_checked;
    });
  }
};

}  // namespace

TEST_CASE("probes do not change training of a residual BatchNormalization net; its light records are exact") {
  const dl::ir::Model model = residual_bn_cnn();
  dl::test::probes_leave_training_unchanged<LightRecords>(
      model, dl::test::cnn_setup(model, 64, 16, 69), [](const dl::an::Trace& trace, const LightRecords& check) {
        REQUIRE(trace.size() == 16);
        // Iterations 9-15 but 15 (the epoch's last) are light: 6 of them, for the probes
        // that carry fractions (the Relu outputs', the Gemm's: the others are plain).
        CHECK(check.light_checked >= 6 * 4);
      });
}

TEST_CASE("probes: a step reports its producer's output gradient unless the producer sums it itself") {
  // The first BatchNormalization sums its dY in its channel loops (16x16 maps: long
  // channels): /2/Relu leaves it to it. The residual Add does not: /6/Relu reports the
  // Add's output gradient, recorded when /6/Relu is done; the Add gets no dY sink and the
  // second BatchNormalization, whose output the Add passes its gradient to, takes those
  // sums (copy_grad_sums). Every record equals a separate reduction.
  const dl::ir::Model model = residual_bn_cnn();
  LightRecords check;
  dl::test::SinkLog log = dl::test::train_with_sink_log(model, dl::test::cnn_setup(model, 64, 16, 69), check, 16);
  CHECK(log.backward_in_sinks.count("/2/Relu") == 0);
  CHECK(log.backward_sinks["/1/BatchNormalization"] == 16);
  CHECK(log.backward_in_sinks["/6/Relu"] == 16);
  CHECK(log.backward_sinks.count("/5/Add") == 0);
  CHECK(log.backward_sinks.count("/4/BatchNormalization") == 0);
}

TEST_CASE("probes: a plain probe's jump of norm makes the rest of its iteration full, and becomes its reference") {
  // After the update of iteration 10 the first Conv's kernel grows 10x: at iteration 11
  // (a light one) the Conv output's norm jumps (a plain probe: moments at every
  // iteration), while the BatchNormalization after it keeps the Relu's output as it was.
  // The Relu output is reduced in full at 11 only because of the Conv's jump, and is
  // light again at 12: the jump became the Conv output's reference.
  const dl::ir::Model model = residual_bn_cnn();
  const dl::test::CnnSetup setup = dl::test::cnn_setup(model, 64, 16, 72);
  dl::rt::Trainer trainer(model, setup.config, setup.data, dl::rt::Dataset{});
  dl::an::Trace trace;
  dl::rt::ProbeRecorder probes(trainer.graph(), trace);
  REQUIRE(probes.step_values() > dl::rt::ProbeRecorder::kAlwaysFull);
  trace.set_capacity_bytes(16 << 20);
  trace.reserve_iterations(16);
  trainer.set_observer(&probes);
  trainer.add_listener(&probes);
  struct Scale : dl::rt::TrainListener {
    void after_update(const dl::rt::ExecutionGraph& g, const dl::rt::IterationInfo& info) override {
      if (info.iteration != 10) return;
      for (dl::rt::Param& p : const_cast<dl::rt::ExecutionGraph&>(g).params())
        if (p.name == "K1")
          for (int64_t i = 0; i < p.value->numel(); ++i) p.value->f()[i] *= 10.0f;
    }
  } scale;
  trainer.add_listener(&scale);  // (after the recorder's record of iteration 10)
  trainer.run();
  REQUIRE(trace.size() == 16);
  const auto probe = [&](const char* node) {
    for (size_t k = 0; k < trace.header.probes.size(); ++k)
      if (trace.header.probes[k].node == node && trace.header.probes[k].kind == dl::an::ProbeKind::kForward) return k;
    FAIL("no probe of " << node);
    return size_t(0);
  };
  const size_t conv = probe("/0/Conv"), relu = probe("/2/Relu");
  for (size_t r = 9; r < 14; ++r) {
    INFO("iteration " << r);
    CHECK_FALSE(trace.at(r, conv).magnitudes_taken());
    CHECK_FALSE(trace.at(r, conv).fractions_carried());
    CHECK(trace.at(r, relu).fractions_carried() == (r != 11));
  }
  CHECK(trace.at(11, conv).l2 > 5 * trace.at(10, conv).l2);
  CHECK(trace.at(11, relu).l2 == doctest::Approx(trace.at(10, relu).l2).epsilon(0.2));
}
