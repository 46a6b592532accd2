// The probes' sinks (runtime/op.h ValueSink): ops report the statistics of the tensors
// they write or read, per op and through a whole training run, on 2 and 1 threads.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <tuple>

#include "runtime/probe_stats.h"
#include "runtime/probes.h"
#include "tests/unit/op_harness.h"
#include "tests/unit/small_cnn.h"

namespace {

using dl::rt::Tensor;
using dl::test::check_same_stats;
using dl::test::cnn_setup;
using dl::test::OpRun;
using dl::test::on_two_then_one;
using dl::test::random_values;
using dl::test::small_cnn;

// What the op reported to its sink, against a separate reduction of the same tensor.
void check_reported(const dl::rt::SinkSums& sink, const Tensor& t, const char* what) {
  INFO(what);
  REQUIRE(sink.reported() == t.numel());
  check_same_stats(dl::rt::stats_of(t, sink.total(), {}, nullptr), dl::rt::reduce_stats(t, nullptr, nullptr));
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
    {  // MaxPool reports: 2x2 stride 2 (LeNet's), and the general path (padding; resnet18's)
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
      check_reported(fwd, general.outputs[0], "MaxPool forward, padded");
    }
  });
}

TEST_CASE("Relu, Clip, Softmax, LogSoftmax, Mul and Div report dX, their input's gradient, with dY light, full or not wanted; the same gradients") {
  // (The previous step's output gradient when this step alone reads that output: the
  // probes take it from here instead of a pass of their own, runtime/probes.h.)
  struct Kind {
    const char* op;
    int inputs, version;
  };
  const Kind kinds[] = {{"Relu", 1, 14},       {"Clip", 3, 13}, {"Softmax", 1, 13},
                        {"LogSoftmax", 1, 13}, {"Mul", 2, 14},  {"Div", 2, 14}};
  on_two_then_one([&](int threads) {
    for (const Kind& kind : kinds)
      for (const int64_t n : {int64_t{7}, int64_t{1000}, int64_t{300000}})
        for (const int dy_mode : {0, 1, 2})  // dY's sink light, full, none
          for (const uint32_t assign : {0u, 1u}) {
            const std::string op = kind.op;
            const std::string label = op + ", " + std::to_string(n) + " values, dY " +
                                      (dy_mode == 0 ? "light" : dy_mode == 1 ? "full" : "none") +
                                      (assign ? ", dX assigned" : ", dX added to") + ", " + std::to_string(threads) +
                                      " thread(s)";
            INFO(label);
            // (The softmaxes over rows of 100, or one row of 7.)
            const dl::rt::Shape shape = op.find("Softmax") == std::string::npos ? dl::rt::Shape{n}
                                        : n < 100                              ? dl::rt::Shape{1, n}
                                                                               : dl::rt::Shape{n / 100, 100};
            std::vector<Tensor> in = {Tensor::floats(shape, random_values(n, 40))};
            if (op == "Clip") in.insert(in.end(), {Tensor::floats({}, {-0.2f}), Tensor::floats({}, {0.3f})});
            if (op == "Mul") in.push_back(Tensor::floats(shape, random_values(n, 42)));  // (its gradient too)
            if (op == "Div") in.push_back(Tensor::floats({}, {1.7f}));                   // (broadcast)
            const auto node = dl::rt::sample_node(op, kind.inputs, 1, {}, kind.version);
            OpRun run(node, in, true), plain(node, in, true);
            REQUIRE(run.op->reports_input_gradient());
            run.din_fill = plain.din_fill = 0.5f;
            dl::rt::stats::Bands light;
            light.light = true;
            dl::rt::SinkSums dy_sink, dx_sink;
            dy_sink.reset(dy_mode == 0 ? light : dl::rt::stats::Bands{});
            dx_sink.reset(light);
            if (dy_mode < 2) run.dout_stats = &dy_sink;
            run.din_stats = &dx_sink;
            run.forward();
            plain.forward();
            const Tensor dy = Tensor::floats(shape, random_values(n, 41));
            std::vector<bool> grads(in.size(), false);
            grads[0] = true;
            if (op == "Mul") grads[1] = true;
            const std::vector<Tensor> dx = run.backward({&dy}, grads, assign), dx_plain = plain.backward({&dy}, grads, assign);
            CHECK(dx[0].fvec() == dx_plain[0].fvec());
            dl::test::check_light(dx_sink, dx[0], "dX " + label);
            if (dy_mode == 0) dl::test::check_light(dy_sink, dy, "dY " + label);
            if (dy_mode == 1) check_reported(dy_sink, dy, "dY, full");
          }
  });
}

namespace {

// After each update: every step output and output gradient the probes recorded (through
// the ops' sinks where they report) equals a separate reduction of the tensor, still in
// memory.
struct StepChecker : dl::rt::TrainListener {
  const dl::an::Trace* trace = nullptr;
  int checked = 0;
  void after_update(const dl::rt::ExecutionGraph& g, const dl::rt::IterationInfo&) override {
    dl::test::for_each_step_probe(*trace, g, [&](size_t k, const dl::an::Probe& p, const Tensor&,
                                                 const dl::an::TensorStats& want) {
      INFO(p.node << (p.kind == dl::an::ProbeKind::kForward ? " forward" : " gradient"));
      check_same_stats(trace->at(trace->size() - 1, k), want);
      ++checked;
    });
  }
};

}  // namespace

TEST_CASE("probes through the ops' sinks: a Conv/Relu/MaxPool network records what a separate pass would") {
  const dl::ir::Model model = small_cnn();
  for (bool fused : {true, false}) on_two_then_one([&](int) {
    INFO("fused " << fused);  // false: statistics in the probes' own pass (set_fused)
    const dl::test::CnnSetup setup = cnn_setup(model, 64, 3, 45);
    dl::rt::Trainer trainer(model, setup.config, setup.data, dl::rt::Dataset{});
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
