// Ops that report their tensors to the probes' sinks chunk by chunk (ChunkReporter,
// runtime/sink_chunks.h): the binary arithmetic ops (output, the input read in the
// output's order, the output gradient), Softmax, Dropout (and its input), LayerNormalization, Concat,
// Slice, Expand, Clip and the copies' backward passes (Transpose's where it runs), against a separate reduction of the same tensor (count, extremes, zeros exact;
// sums to float rounding), light and full; and a network of them and of copies
// (Op::copies_input, whose records take their input's sums) trained with probes: every
// record equals a separate reduction, and the parameters equal a run without probes.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "runtime/attrs.h"
#include "runtime/probe_stats.h"
#include "runtime/probes.h"
#include "tests/unit/op_harness.h"
#include "tests/unit/small_cnn.h"

namespace {

using dl::rt::SinkSums;
using dl::rt::Tensor;
using dl::test::Records;
using dl::test::OpRun;
using dl::test::random_values;

dl::rt::stats::Bands bands_of(bool light) {
  dl::rt::stats::Bands b;
  b.light = light;
  return b;
}

// What the op reported against a pass of the probe's own over t (light: the moments
// and extremes only).
void check_reported(const SinkSums& sink, const Tensor& t, bool light, const std::string& what) {
  INFO(what);
  INFO((light ? "light" : "full"));
  REQUIRE(sink.reported() == t.numel());
  dl::rt::stats::Sums want;
  dl::rt::stats::add_values_parallel(t.f(), t.numel(), bands_of(light), want);
  const dl::an::TensorStats got_s = dl::rt::stats::finish(sink.total(), t.numel()),
                            want_s = dl::rt::stats::finish(want, t.numel());
  dl::test::check_same_stats(got_s, want_s);
}

// Runs node on `in` with sinks on out[0] (when the op reports it: copies do not), the
// reported input (when the op reports one) and dout[0]; checks the sums and that the
// outputs and gradients are those of a run without sinks.
// (Gradients for in[0], and for in[1] too when second_grad and the op is not Dropout.)
void check_op(const dl::ir::Node& node, const std::vector<Tensor>& in, bool training, const std::string& label,
              bool reports_in, bool reports_out = true, bool second_grad = true) {
  for (const bool light : {true, false}) {
    OpRun fused(node, in, training), plain(node, in, training);
    CHECK(fused.op->reports_input() == reports_in);
    SinkSums y, x, dy;
    y.reset(bands_of(light));
    x.reset(bands_of(light));
    dy.reset(bands_of(light));
    fused.out_stats = &y;
    if (reports_in) fused.in_stats = &x;
    fused.dout_stats = &dy;
    fused.forward();
    plain.forward();
    CHECK(fused.outputs[0].fvec() == plain.outputs[0].fvec());
    if (reports_out) check_reported(y, fused.outputs[0], light, label + " Y");
    else CHECK(y.reported() == 0);
    if (reports_in) check_reported(x, in[fused.op->reported_input()], light, label + " X");
    const Tensor g = Tensor::floats(fused.outputs[0].shape(), random_values(fused.outputs[0].numel(), 71));
    std::vector<bool> want(in.size(), false);
    want[0] = true;
    if (in.size() > 1 && node.op_type != "Dropout" && second_grad) want[1] = true;
    const std::vector<Tensor> d = fused.backward({&g}, want), d_plain = plain.backward({&g}, want);
    for (size_t i = 0; i < d.size(); ++i)
      if (want[i]) CHECK(d[i].fvec() == d_plain[i].fvec());
    check_reported(dy, g, light, label + " dY");
  }
}

}  // namespace

TEST_CASE("binary ops and Softmax report Y, X and dY chunk by chunk; the same outputs") {
  // 3 x 5000: chunks that straddle rows, a tail shorter than a chunk.
  const int64_t rows = 3, cols = 5000, n = rows * cols;
  const Tensor x = Tensor::floats({rows, cols}, random_values(n, 72)), x2 = Tensor::floats({rows, cols}, random_values(n, 73)),
               bias = Tensor::floats({cols}, random_values(cols, 74));
  for (const char* type : {"Add", "Mul", "Sub", "Div"}) {
    const auto node = dl::rt::sample_node(type, 2, 1, {}, 14);
    check_op(node, {x, x2}, true, std::string(type) + " same shapes", true);
    check_op(node, {bias, x}, true, std::string(type) + " bias first", true);  // reports in[1]
    OpRun run(node, {bias, x}, true);
    CHECK(run.op->reported_input() == 1);
  }
  // Both inputs broadcast: no input is read in the output's order.
  check_op(dl::rt::sample_node("Add", 2, 1, {}, 14),
           {Tensor::floats({rows, 1}, random_values(rows, 75)), Tensor::floats({1, cols}, random_values(cols, 76))},
           true, "Add outer", false);
  check_op(dl::rt::sample_node("Softmax", 1, 1, {}, 13), {Tensor::floats({40, 300}, random_values(12000, 77))}, true,
           "Softmax", true);
}

TEST_CASE("Dropout reports Y, X and dY; copies report dY and say they copy their input") {
  const int64_t n = 3 * 4096 + 100;
  const Tensor x = Tensor::floats({n}, random_values(n, 78));
  const auto dropout = dl::rt::sample_node("Dropout", 1, 1, {{"ratio", dl::rt::attr_f(0.3f)}}, 7);
  check_op(dropout, {x}, true, "Dropout", true);
  OpRun dropping(dropout, {x}, true), inference(dropout, {x}, false);
  SinkSums copied;  // a Dropout that drops nothing reports X as it copies it
  copied.reset(bands_of(true));
  inference.in_stats = &copied;
  dropping.forward();
  inference.forward();
  check_reported(copied, x, true, "Dropout inference X");
  CHECK(inference.outputs[0].fvec() == x.fvec());
  CHECK(!dropping.op->copies_input());
  CHECK(inference.op->copies_input());
  const auto flatten = dl::rt::sample_node("Flatten", 1, 1, {}, 13);
  check_op(flatten, {Tensor::floats({4, 3, n / 4 / 3 + 1}, random_values(4 * 3 * (n / 12 + 1), 79))}, true, "Flatten",
           false, false);
  check_op(dl::rt::sample_node("Identity", 1, 1, {}, 14), {x}, true, "Identity", false, false);
  for (const char* type : {"Flatten", "Identity"}) {
    OpRun run(dl::rt::sample_node(type, 1, 1, {}, 13), {Tensor::floats({2, 3}, random_values(6, 80))}, true);
    CHECK(run.op->copies_input());
  }
  OpRun t(dl::rt::sample_node("Transpose", 1, 1, {{"perm", dl::rt::attr_ints({1, 0})}}, 13),
          {Tensor::floats({2, 3}, random_values(6, 81))}, true);
  CHECK(t.op->copies_input());
}

TEST_CASE("Concat, the strided views (Slice, Expand) and Clip report Y and dY chunk by chunk; the same outputs") {
  // Rows of 3000 and 2500 values: chunks straddle the inputs' runs; a tail.
  const Tensor a = Tensor::floats({3, 3000}, random_values(9000, 82)), b = Tensor::floats({3, 2500}, random_values(7500, 83));
  check_op(dl::rt::sample_node("Concat", 2, 1, {{"axis", dl::rt::attr_i(1)}}, 13), {a, b}, true, "Concat axis 1", false);
  check_op(dl::rt::sample_node("Concat", 2, 1, {{"axis", dl::rt::attr_i(0)}}, 13), {a, Tensor::floats({1, 3000}, random_values(3000, 84))},
           true, "Concat axis 0", false);
  const Tensor x = Tensor::floats({6, 5000}, random_values(30000, 85));
  auto ints = [](std::vector<int64_t> v) { return Tensor::ints({int64_t(v.size())}, std::move(v)); };
  // Contiguous runs (step 1 on the last axis) and strided ones (step 3).
  check_op(dl::rt::sample_node("Slice", 5, 1, {}, 13), {x, ints({1, 3}), ints({5, 4990}), ints({0, 1}), ints({1, 1})}, true,
           "Slice runs", false, true, false);
  check_op(dl::rt::sample_node("Slice", 5, 1, {}, 13), {x, ints({0, 2}), ints({6, 4999}), ints({0, 1}), ints({2, 3})}, true,
           "Slice strided", false, true, false);
  check_op(dl::rt::sample_node("Expand", 2, 1, {}, 13), {Tensor::floats({1, 4500}, random_values(4500, 86)), ints({3, 4500})},
           true, "Expand", false, true, false);
  // Clip: light sinks from its vector loops (probe_fused_test.cpp), full ones by chunks.
  check_op(dl::rt::sample_node("Clip", 1, 1, {{"min", dl::rt::attr_f(-0.5f)}, {"max", dl::rt::attr_f(0.6f)}}, 6),
           {Tensor::floats({3, 4500}, random_values(13500, 87))}, true, "Clip", true);
}

TEST_CASE("LayerNormalization reports Y and dY by rows; Transpose reports dY where both sides are runs") {
  // Rows of 700: chunks straddle rows; a tail.
  const Tensor x = Tensor::floats({3, 7, 700}, random_values(14700, 88)), scale = Tensor::floats({700}, random_values(700, 89)),
               bias = Tensor::floats({700}, random_values(700, 90));
  check_op(dl::rt::sample_node("LayerNormalization", 3, 1, {{"axis", dl::rt::attr_i(-1)}}, 17), {x, scale, bias}, true,
           "LayerNormalization", false);
  // The head split of attention ([B, S, H, D] -> [B, H, S, D]): the last axis stays last.
  check_op(dl::rt::sample_node("Transpose", 1, 1, {{"perm", dl::rt::attr_ints({0, 2, 1, 3})}}, 13),
           {Tensor::floats({3, 40, 4, 32}, random_values(15360, 96))}, true, "Transpose runs", false, false);
  // As dX's first writer (BwdCtx::assign) it walks dX's order and reports the values it
  // writes there (dY's, permuted); added to, dY's order: both the same sums as dY's.
  for (const bool light : {true, false})
    for (const uint32_t assign : {0u, 1u}) {
      const auto heads = dl::rt::sample_node("Transpose", 1, 1, {{"perm", dl::rt::attr_ints({0, 2, 1, 3})}}, 13);
      const Tensor hx = Tensor::floats({3, 40, 4, 33}, random_values(15840, 99));
      OpRun fused(heads, {hx}, true), plain(heads, {hx}, true);
      SinkSums dy;
      dy.reset(bands_of(light));
      fused.dout_stats = &dy;
      fused.forward();
      plain.forward();
      const Tensor g = Tensor::floats(fused.outputs[0].shape(), random_values(15840, 100));
      CAPTURE(assign);
      CHECK(fused.backward({&g}, {true}, assign)[0].fvec() == plain.backward({&g}, {true}, assign)[0].fvec());
      check_reported(dy, g, light, "Transpose runs, dX assigned or added to");
    }
  // [1, 0]: tiles, dX's order; dY is left to the probe's own pass.
  const auto swap = dl::rt::sample_node("Transpose", 1, 1, {{"perm", dl::rt::attr_ints({1, 0})}}, 13);
  const Tensor m = Tensor::floats({90, 70}, random_values(6300, 97));
  OpRun fused(swap, {m}, true), plain(swap, {m}, true);
  SinkSums dy;
  dy.reset(bands_of(true));
  fused.dout_stats = &dy;
  fused.forward();
  plain.forward();
  const Tensor g = Tensor::floats({70, 90}, random_values(6300, 98));
  CHECK(fused.backward({&g}, {true})[0].fvec() == plain.backward({&g}, {true})[0].fvec());
  CHECK(dy.reported() == 0);
}

namespace {

// x [N, 2, 16, 16] -> Reshape [N, 32, 16] -> Transpose [N, 16, 32] -> MatMul W1 [32, 32]
// (one step: the MatMul reads the Transpose's input in place, runtime/graph_fuse.cpp)
// -> Add (bias first) -> Softmax -> Dropout -> Identity -> Add (the MatMul's output: a
// residual, both inputs of the output's shape) -> Flatten -> Gemm 4 (mse, sgd): the
// copies take their input's sums, forward and backward; Add and Softmax report what they
// read and write. At batch 64 each tensor holds 32k values: light iterations from the
// 9th on.
dl::ir::Model attention_like() {
  dl::test::ProbeGraph b("attention_like", 13);
  b.random("W1", {32, 32}, 0.3f, 91);
  b.random("b1", {32}, 0.1f, 92);
  b.random("W2", {4, 512}, 0.05f, 93);
  b.random("b2", {4}, 0.05f, 94);
  b.int64s("shape", {3}, {0, 32, 16});
  b.node("/0/Reshape", "Reshape", {"x", "shape"}, "r");
  b.node("/0/Transpose", "Transpose", {"r"}, "t", {{"perm", dl::rt::attr_ints({0, 2, 1})}});
  b.node("/1/MatMul", "MatMul", {"t", "W1"}, "m");
  b.node("/1/Add", "Add", {"b1", "m"}, "a");
  b.node("/1/Softmax", "Softmax", {"a"}, "s");
  b.node("/1/Dropout", "Dropout", {"s"}, "d", {{"ratio", dl::rt::attr_f(0.25f)}}, 7);
  b.node("/1/Identity", "Identity", {"d"}, "i");
  b.node("/1/Add_1", "Add", {"i", "m"}, "s2");
  b.node("/2/Flatten", "Flatten", {"s2"}, "f");
  b.node("/2/Gemm", "Gemm", {"f", "W2", "b2"}, "y", {{"transB", dl::rt::attr_i(1)}});
  return b.m;
}

// x [N, 2, 16, 16] -> Reshape [N, 32, 16] -> MatMul W1 [16, 24] + b1 (one step: the planner
// fuses the bias Add) -> Dropout (reports its input: the fused output, deferred to it) ->
// Relu -> Flatten -> Gemm 4.
dl::ir::Model linear_dropout() {
  dl::test::ProbeGraph b("linear_dropout", 13);
  b.random("W1", {16, 24}, 0.3f, 96);
  b.random("b1", {24}, 0.1f, 97);
  b.random("W2", {4, 768}, 0.05f, 98);
  b.random("b2", {4}, 0.05f, 99);
  b.int64s("shape", {3}, {0, 32, 16});
  b.node("/0/Reshape", "Reshape", {"x", "shape"}, "r");
  b.node("/1/MatMul", "MatMul", {"r", "W1"}, "m");
  b.node("/1/Add", "Add", {"m", "b1"}, "a");
  b.node("/1/Dropout", "Dropout", {"a"}, "d", {{"ratio", dl::rt::attr_f(0.25f)}}, 7);
  b.node("/1/Relu", "Relu", {"d"}, "h");
  b.node("/2/Flatten", "Flatten", {"h"}, "f");
  b.node("/2/Gemm", "Gemm", {"f", "W2", "b2"}, "y", {{"transB", dl::rt::attr_i(1)}});
  return b.m;
}

// x [N, 2, 16, 16] -> Reshape [N, 32, 16] -> MatMul W1 [16, 24] -> Mul by P [1, 32, 24] (a
// broadcast constant first: at batch N > 1 the Mul reports its second input, the MatMul's
// output, deferred to it; in a graph of one row both inputs have the output's size) ->
// Relu -> Flatten -> Gemm 4.
dl::ir::Model broadcast_mul() {
  dl::test::ProbeGraph b("broadcast_mul", 13);
  b.random("W1", {16, 24}, 0.3f, 101);
  b.random("P", {1, 32, 24}, 1.0f, 102);
  b.random("W2", {4, 768}, 0.05f, 103);
  b.random("b2", {4}, 0.05f, 104);
  b.int64s("shape", {3}, {0, 32, 16});
  b.node("/0/Reshape", "Reshape", {"x", "shape"}, "r");
  b.node("/1/MatMul", "MatMul", {"r", "W1"}, "m");
  b.node("/1/Mul", "Mul", {"P", "m"}, "a");
  b.node("/1/Relu", "Relu", {"a"}, "h");
  b.node("/2/Flatten", "Flatten", {"h"}, "f");
  b.node("/2/Gemm", "Gemm", {"f", "W2", "b2"}, "y", {{"transB", dl::rt::attr_i(1)}});
  return b.m;
}

// x [N, 2, 16, 16] -> Flatten -> Gemm 64 -> Relu -> Relu -> Gemm 4: each Relu reports its
// input's gradient (the Gemm's output gradient, the first Relu's), two in a row.
dl::ir::Model relu_chain() {
  dl::test::ProbeGraph b("relu_chain", 13);
  b.random("W1", {64, 512}, 0.05f, 108);
  b.random("b1", {64}, 0.1f, 109);
  b.random("W2", {4, 64}, 0.1f, 110);
  b.random("b2", {4}, 0.05f, 111);
  b.node("/0/Flatten", "Flatten", {"x"}, "f");
  b.node("/1/Gemm", "Gemm", {"f", "W1", "b1"}, "g", {{"transB", dl::rt::attr_i(1)}});
  b.node("/1/Relu", "Relu", {"g"}, "h");
  b.node("/1/Relu_1", "Relu", {"h"}, "h2");
  b.node("/2/Gemm", "Gemm", {"h2", "W2", "b2"}, "y", {{"transB", dl::rt::attr_i(1)}});
  return b.m;
}


}  // namespace

TEST_CASE("probes through chunked reports and copies: every record is a separate reduction's; training unchanged") {
  const dl::ir::Model model = attention_like();
  dl::test::probes_leave_training_unchanged<Records>(
      model, dl::test::cnn_setup(model, 64, 16, 95), [](const dl::an::Trace& trace, const Records& check) {
        REQUIRE(trace.size() == 16);
        // Light at iterations 9-14: the Softmax output (saturation bands), the Gemm's
        // output and gradient (the output layer); the 14 other probes are plain at every
        // iteration.
        CHECK(check.light >= 6 * 3);
        CHECK(check.plain >= 16 * 14);
        CHECK(check.full >= 10 * 3);
      });
}

TEST_CASE("probes on a fused MatMul + bias read by a Dropout: every record is a separate reduction's; training unchanged") {
  const dl::ir::Model model = linear_dropout();
  dl::rt::GraphOptions o;
  o.batch_size = 2;
  CHECK(dl::rt::ExecutionGraph(model, o).steps().size() == 6);  // the bias Add runs inside the MatMul
  dl::test::probes_leave_training_unchanged<Records>(
      model, dl::test::cnn_setup(model, 64, 16, 100), [](const dl::an::Trace& trace, const Records& check) {
        REQUIRE(trace.size() == 16);
        CHECK(check.light >= 6 * 3);  // iterations 9-14: the Relu output, the Gemm's probes
        CHECK(check.plain >= 16 * 8);
        CHECK(check.full >= 10 * 3);
      });
}

TEST_CASE("probes when the last batch's smaller graph reports another input: every record is its own tensor's") {
  // 4 batches of 64 rows and a last one of 1 row, run by a graph of its own (all of them
  // full iterations, so the MatMul output, a plain probe's, is deferred to the Mul that
  // reads it). That graph's Mul reports P, which has the output's size there: the
  // MatMul's record must not take P's sums.
  const dl::ir::Model model = broadcast_mul();
  dl::test::CnnSetup setup = dl::test::cnn_setup(model, 64, 4, 105);
  dl::rt::Dataset& d = setup.data;
  const std::vector<float> x = random_values(d.x_size, 106), y = random_values(d.y_size, 107);
  d.x.insert(d.x.end(), x.begin(), x.end());
  d.y.insert(d.y.end(), y.begin(), y.end());
  d.line_of_row.push_back(d.n + 1);
  d.n += 1;
  dl::test::probes_leave_training_unchanged<Records>(model, setup, [](const dl::an::Trace& trace, const Records& check) {
    REQUIRE(trace.size() == 5);
    CHECK(check.plain >= 5 * 8);
  });
}

TEST_CASE("probes: a step whose one reader passed its gradient on gets no sink; its record is the reader's sums") {
  // attention_like: the Identity's output gradient is the residual Add's dY, the Dropout's
  // the Identity's (copy_grad_sums); the Softmax's comes through the Dropout's mask: it
  // reports its own. The Flatten runs as a view (its backward runs no op): its record
  // waits for the residual Add's, which that Add's backward reports.
  const dl::ir::Model model = attention_like();
  Records check;
  dl::test::SinkLog log = dl::test::train_with_sink_log(model, dl::test::cnn_setup(model, 64, 16, 95), check, 16);
  CHECK(log.backward_sinks.count("/1/Identity") == 0);
  CHECK(log.backward_sinks.count("/1/Dropout") == 0);
  CHECK(log.backward_sinks["/1/Softmax"] == 16);
  CHECK(log.backward_sinks.count("/2/Flatten") == 0);
  CHECK(log.backward_sinks["/1/Add_1"] == 16);
  CHECK(log.own_gradient.at("/2/Flatten") == 0);
  CHECK(check.plain >= 16 * 14);  // every record checked against a separate reduction
}

TEST_CASE("probes: two steps in a row reporting their input gradient record each one's when it is done") {
  // /1/Relu_1 reports /1/Relu's output gradient, /1/Relu the Gemm's: each record is made
  // when its reporting step is done, before the next step takes the one sink for its own
  // report; neither /1/Relu nor the Gemm is given a dY sink.
  const dl::ir::Model model = relu_chain();
  Records check;
  dl::test::SinkLog log = dl::test::train_with_sink_log(model, dl::test::cnn_setup(model, 64, 16, 112), check, 16);
  CHECK(log.backward_in_sinks["/1/Relu_1"] == 16);
  CHECK(log.backward_in_sinks["/1/Relu"] == 16);
  CHECK(log.backward_sinks.count("/1/Relu") == 0);
  CHECK(log.backward_sinks.count("/1/Gemm") == 0);
  CHECK(check.plain + check.light + check.full >= 16 * 6);  // the Gemm and Relus, forward and gradient
}
