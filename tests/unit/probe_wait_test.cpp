// Step outputs that wait for their readers' records (runtime/probes_wait.cpp): a fused
// MatMul + bias read by Slices that partition it, a Gemm read by a chain of copies, and
// the cases that must fall back to a pass of the probe's own; a Concat's output,
// recorded from its inputs' sums (join_sums in runtime/probes_reduce.cpp); and the gradient
// records of steps run as views, which wait for their producer's (grad_wait_ in
// runtime/probes.h). Every record is checked against a separate reduction of its tensor,
// and training must come out bit-identical with probes and without.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "runtime/attrs.h"
#include "runtime/probes.h"
#include "tests/unit/small_cnn.h"

namespace {

using dl::test::Records;

// x [N, 2, 16, 16] -> Reshape [N, 32, 16] -> MatMul W1 [16, 48] + b1 (one step, whose
// output no op reports) -> Slices q, k, v of 16 columns each (or, `overlap`, k from column
// 8: as many values in all, but no partition) -> v's Relu (the Slice's output deferred to
// it, runtime/probes.h), q * k, + relu(v) -> Flatten -> Gemm 4.
dl::ir::Model qkv_slices(bool overlap) {
  dl::test::ProbeGraph b(overlap ? "qkv_overlap" : "qkv_slices", 13);
  b.random("W1", {16, 48}, 0.3f, 121);
  b.random("b1", {48}, 0.1f, 122);
  b.random("W2", {4, 512}, 0.05f, 123);
  b.random("b2", {4}, 0.05f, 124);
  b.int64s("shape", {3}, {0, 32, 16});
  b.int64s("axis", {1}, {2});
  const int64_t k0 = overlap ? 8 : 16;
  for (const int64_t at : {int64_t{0}, int64_t{16}, int64_t{32}, int64_t{48}, k0, k0 + 16})
    b.int64s("at" + std::to_string(at), {1}, {at});
  b.node("/0/Reshape", "Reshape", {"x", "shape"}, "r");
  b.node("/1/MatMul", "MatMul", {"r", "W1"}, "m");
  b.node("/1/Add", "Add", {"m", "b1"}, "a");
  b.node("/1/Slice_q", "Slice", {"a", "at0", "at16", "axis"}, "q");
  b.node("/1/Slice_k", "Slice", {"a", "at" + std::to_string(k0), "at" + std::to_string(k0 + 16), "axis"}, "k");
  b.node("/1/Slice_v", "Slice", {"a", "at32", "at48", "axis"}, "v");
  b.node("/1/Relu", "Relu", {"v"}, "rv");
  b.node("/1/Mul", "Mul", {"q", "k"}, "qk");
  b.node("/1/Add_1", "Add", {"qk", "rv"}, "s");
  b.node("/2/Flatten", "Flatten", {"s"}, "f");
  b.node("/2/Gemm", "Gemm", {"f", "W2", "b2"}, "y", {{"transB", dl::rt::attr_i(1)}});
  return b.m;
}

// x [N, 2, 16, 16] -> Flatten -> Gemm 256 (whose output no op reports) -> Reshape [N, 16,
// 16] -> Transpose -> Dropout (reports its input, the Transpose's output, deferred to it)
// -> Flatten -> Gemm 4; beside it, `dropped`: the first Gemm's output also read by a
// Dropout that is not right after it (a second Gemm in between), which is no copy once it
// dropped values, added in.
dl::ir::Model copy_chain(bool dropped) {
  dl::test::ProbeGraph b(dropped ? "dropped_copy" : "copy_chain", 13);
  b.random("W1", {256, 512}, 0.05f, 131);
  b.random("b1", {256}, 0.1f, 132);
  b.random("W2", {4, 256}, 0.05f, 133);
  b.random("b2", {4}, 0.05f, 134);
  b.int64s("shape", {3}, {0, 16, 16});
  b.node("/0/Flatten", "Flatten", {"x"}, "f");
  b.node("/1/Gemm", "Gemm", {"f", "W1", "b1"}, "g", {{"transB", dl::rt::attr_i(1)}});
  if (dropped) {
    b.random("W3", {256, 512}, 0.05f, 135);
    b.random("b3", {256}, 0.1f, 136);
    b.node("/1/Gemm_1", "Gemm", {"f", "W3", "b3"}, "g1", {{"transB", dl::rt::attr_i(1)}});
    b.node("/1/Dropout", "Dropout", {"g"}, "d", {{"ratio", dl::rt::attr_f(0.25f)}}, 7);
    b.node("/1/Add", "Add", {"d", "g1"}, "h");
  } else {
    b.node("/1/Reshape", "Reshape", {"g", "shape"}, "r");
    b.node("/1/Transpose", "Transpose", {"r"}, "t", {{"perm", dl::rt::attr_ints({0, 2, 1})}});
    b.node("/1/Dropout", "Dropout", {"t"}, "d", {{"ratio", dl::rt::attr_f(0.25f)}}, 7);
    b.node("/1/Flatten_1", "Flatten", {"d"}, "h");
  }
  b.node("/2/Gemm", "Gemm", {"h", "W2", "b2"}, "y", {{"transB", dl::rt::attr_i(1)}});
  return b.m;
}

// x [N, 2, 16, 16] -> Flatten -> Gemm 128 -> Relu a; -> Gemm 64 -> Relu b; Concat (a, b,
// a) on axis 1 (a read twice) -> Gemm 4.
dl::ir::Model joined() {
  dl::test::ProbeGraph b("joined", 13);
  b.random("W1", {128, 512}, 0.05f, 151);
  b.random("b1", {128}, 0.1f, 152);
  b.random("W2", {64, 512}, 0.05f, 153);
  b.random("b2", {64}, 0.1f, 154);
  b.random("W3", {4, 320}, 0.05f, 155);
  b.random("b3", {4}, 0.05f, 156);
  b.node("/0/Flatten", "Flatten", {"x"}, "f");
  b.node("/1/Gemm", "Gemm", {"f", "W1", "b1"}, "g1", {{"transB", dl::rt::attr_i(1)}});
  b.node("/1/Relu", "Relu", {"g1"}, "a");
  b.node("/2/Gemm", "Gemm", {"f", "W2", "b2"}, "g2", {{"transB", dl::rt::attr_i(1)}});
  b.node("/2/Relu", "Relu", {"g2"}, "r");
  b.node("/3/Concat", "Concat", {"a", "r", "a"}, "c", {{"axis", dl::rt::attr_i(1)}});
  b.node("/4/Gemm", "Gemm", {"c", "W3", "b3"}, "y", {{"transB", dl::rt::attr_i(1)}});
  return b.m;
}

// x [N, 2, 16, 16], Relu (x): Concat (x, Relu (x)) on axis 1 (x, the graph's input, written
// by no step) -> Flatten -> Gemm 4.
dl::ir::Model joined_input() {
  dl::test::ProbeGraph b("joined_input", 13);
  b.random("W", {4, 1024}, 0.05f, 158);
  b.random("b", {4}, 0.05f, 156);
  b.node("/1/Relu", "Relu", {"x"}, "xr");
  b.node("/2/Concat", "Concat", {"x", "xr"}, "c", {{"axis", dl::rt::attr_i(1)}});
  b.node("/3/Flatten", "Flatten", {"c"}, "cf");
  b.node("/4/Gemm", "Gemm", {"cf", "W", "b"}, "y", {{"transB", dl::rt::attr_i(1)}});
  return b.m;
}

// x [N, 2, 16, 16] -> Flatten -> Gemm 256 -> Relu -> Dropout (ratio 0) -> Reshape [N, 16,
// 16] -> Flatten -> then `bias`: Gemm 64 -> Relu -> Gemm 4; or a MatMul 64 without a bias
// -> Reshape [N, 8, 8] -> Flatten -> Gemm 4. The Dropout, the Reshapes and the Flattens
// after the first run as views of their inputs and pass their gradients on as views
// (runtime/graph_views.cpp).
dl::ir::Model view_chain(bool bias) {
  dl::test::ProbeGraph b(bias ? "view_chain" : "view_chain_matmul", 13);
  b.random("W1", {256, 512}, 0.05f, 161);
  b.random("b1", {256}, 0.1f, 162);
  b.random("W2", bias ? std::vector<int64_t>{64, 256} : std::vector<int64_t>{256, 64}, 0.05f, 163);
  b.random("b2", {64}, 0.1f, 164);
  b.random("W3", {4, 64}, 0.05f, 165);
  b.random("b3", {4}, 0.05f, 166);
  b.int64s("shape", {3}, {0, 16, 16});
  b.int64s("shape2", {3}, {0, 8, 8});
  b.node("/0/Flatten", "Flatten", {"x"}, "f");
  b.node("/1/Gemm", "Gemm", {"f", "W1", "b1"}, "g", {{"transB", dl::rt::attr_i(1)}});
  b.node("/1/Relu", "Relu", {"g"}, "r");
  b.node("/1/Dropout", "Dropout", {"r"}, "d", {{"ratio", dl::rt::attr_f(0.0f)}}, 7);
  b.node("/1/Reshape", "Reshape", {"d", "shape"}, "s");
  b.node("/1/Flatten", "Flatten", {"s"}, "h");
  if (bias) {
    b.node("/2/Gemm", "Gemm", {"h", "W2", "b2"}, "g2", {{"transB", dl::rt::attr_i(1)}});
    b.node("/2/Relu", "Relu", {"g2"}, "r2");
  } else {
    b.node("/2/MatMul", "MatMul", {"h", "W2"}, "m2");
    b.node("/2/Reshape", "Reshape", {"m2", "shape2"}, "s2");
    b.node("/2/Flatten", "Flatten", {"s2"}, "r2");
  }
  b.node("/3/Gemm", "Gemm", {"r2", "W3", "b3"}, "y", {{"transB", dl::rt::attr_i(1)}});
  return b.m;
}

// 4 batches of 64 rows (`seed`) and a last one of 1 row (x from `x_seed`, y from
// `y_seed`), which the trainer runs in a graph of its own.
dl::test::CnnSetup with_last_row(const dl::ir::Model& model, unsigned seed, unsigned x_seed, unsigned y_seed) {
  dl::test::CnnSetup setup = dl::test::cnn_setup(model, 64, 4, seed);
  dl::rt::Dataset& d = setup.data;
  const std::vector<float> x = dl::test::random_values(d.x_size, x_seed), y = dl::test::random_values(d.y_size, y_seed);
  d.x.insert(d.x.end(), x.begin(), x.end());
  d.y.insert(d.y.end(), y.begin(), y.end());
  d.line_of_row.push_back(d.n + 1);
  d.n += 1;
  return setup;
}

// 16 batches of 64 rows with probes and without: the same training, `probes` step probes'
// records each iteration, each checked; then the same with probes behind a SinkLog.
dl::test::SinkLog unchanged_then_logged(const dl::ir::Model& model, unsigned seed, int probes, Records& check) {
  dl::test::probes_leave_training_unchanged<Records>(
      model, dl::test::cnn_setup(model, 64, 16, seed), [&](const dl::an::Trace& trace, const Records& c) {
        REQUIRE(trace.size() == 16);
        CHECK(c.plain + c.light + c.full == 16 * probes);
      });
  return dl::test::train_with_sink_log(model, dl::test::cnn_setup(model, 64, 16, seed), check, 16);
}

}  // namespace

TEST_CASE("probes: a MatMul's output read by Slices that partition it takes their sums, and its gradient theirs; training unchanged") {
  Records check;
  dl::test::SinkLog log = unchanged_then_logged(qkv_slices(false), 125, 19, check);
  CHECK(log.own_forward.at("/1/MatMul") == 0);  // (the bias Add runs in the MatMul's step)
  // Its output gradient's record takes the Slices' gradients' sums: no dY sink for its
  // bias gradient loop.
  CHECK(log.backward_sinks.count("/1/MatMul") == 0);
  CHECK(log.backward_sinks["/1/Slice_k"] == 16);  // (q and v: the Mul and the Relu report their gradients)
  CHECK(check.plain >= 16 * 14);  // every record checked against a separate reduction
}

TEST_CASE("probes: Slices that overlap do not partition their input, though as many values; it is reduced by a pass of its own") {
  const dl::ir::Model model = qkv_slices(true);
  Records check;
  dl::test::SinkLog log = dl::test::train_with_sink_log(model, dl::test::cnn_setup(model, 64, 16, 126), check, 16);
  CHECK(log.own_forward.at("/1/MatMul") == 16);
  CHECK(log.backward_sinks["/1/MatMul"] == 16);
  CHECK(check.plain >= 16 * 14);
}

TEST_CASE("probes: a Gemm's output read by a chain of copies takes the sums the last one's reader reports") {
  Records check;
  dl::test::SinkLog log = unchanged_then_logged(copy_chain(false), 137, 13, check);
  // The Transpose's output is deferred to the Dropout that reads it next and reports it;
  // the Reshape's waits for the Transpose's record, the Gemm's for the Reshape's.
  CHECK(log.own_forward.at("/1/Gemm") == 0);
  CHECK(log.own_forward.at("/1/Reshape") == 0);
  CHECK(log.own_forward.at("/1/Transpose") == 0);
  CHECK(check.plain >= 16 * 10);
}

TEST_CASE("probes: an output whose one reader turned out no copy, or run in a smaller last batch, is reduced itself") {
  SUBCASE("a Dropout that dropped values") {
    const dl::ir::Model model = copy_chain(true);
    Records check;
    dl::test::SinkLog log = dl::test::train_with_sink_log(model, dl::test::cnn_setup(model, 64, 16, 138), check, 16);
    CHECK(log.own_forward.at("/1/Gemm") == 16);  // (it waits once, in vain; then no more)
    CHECK(check.plain >= 16 * 9);
  }
  SUBCASE("a last batch of one row, in a graph of its own") {
    const dl::ir::Model model = qkv_slices(false);
    const dl::test::CnnSetup setup = with_last_row(model, 139, 140, 141);
    Records check;
    dl::test::SinkLog log = dl::test::train_with_sink_log(model, setup, check, 5);
    CHECK(log.own_forward.at("/1/MatMul") == 1);  // there: no wait (its size is not the planned one)
    CHECK(check.plain >= 5 * 14);
  }
}

TEST_CASE("probes: a Concat's output is recorded from its inputs' sums, with no report and no pass of its own") {
  Records check;
  dl::test::SinkLog log = unchanged_then_logged(joined(), 157, 13, check);
  // A plain probe (runtime/probes.h): light sums serve it at every iteration, full ones
  // included, and the Relus keep theirs at every one.
  CHECK(log.forward_sinks.count("/3/Concat") == 0);
  CHECK(log.forward_sinks["/4/Gemm"] == 16);  // (a step with no inputs' sums to take: a sink)
  CHECK(log.own_forward.at("/3/Concat") == 0);
  CHECK(check.light + check.plain >= 14 * 9);  // every record checked against a separate reduction
}

TEST_CASE("probes: a Concat with an input no step wrote reports its output itself") {
  Records check;
  dl::test::SinkLog log = unchanged_then_logged(joined_input(), 159, 5, check);
  CHECK(log.forward_sinks["/2/Concat"] == 16);  // (its record then from its report)
  CHECK(log.own_forward.at("/2/Concat") == 0);
  CHECK(check.light + check.plain + check.full == 16 * 5);
}

TEST_CASE("probes: a view's gradient record takes the sums its producer's backward reports, through a chain of views") {
  Records check;
  dl::test::SinkLog log = unchanged_then_logged(view_chain(true), 167, 17, check);
  // No view runs an op, so none reports; each gradient record waits for the Relu's, whose
  // backward loop reports its dY (the same values): no pass of their own.
  for (const char* view : {"/1/Dropout", "/1/Reshape", "/1/Flatten"}) {
    CAPTURE(view);
    CHECK(log.own_gradient.at(view) == 0);
    CHECK(log.backward_sinks.count(view) == 0);
  }
  CHECK(log.backward_sinks["/1/Relu"] == 16);
  CHECK(log.own_gradient.at("/1/Relu") == 0);
  CHECK(check.plain >= 16 * 9);  // every record checked against a separate reduction
}

TEST_CASE("probes: views whose producer reports no dY take the one pass its record makes") {
  Records check;
  dl::test::SinkLog log = unchanged_then_logged(view_chain(false), 168, 19, check);
  // The MatMul's products read their dY in no loop of theirs, nor do the last Gemm's that
  // write it: the views' records wait for the MatMul's, which takes the one pass.
  CHECK(log.own_gradient.at("/2/Reshape") == 0);
  CHECK(log.own_gradient.at("/2/Flatten") == 0);
  CHECK(log.own_gradient.at("/2/MatMul") == 16);
  // The first chain's records wait for the Relu's report, as with a bias.
  CHECK(log.own_gradient.at("/1/Dropout") == 0);
  CHECK(log.own_gradient.at("/1/Reshape") == 0);
  CHECK(log.backward_sinks["/1/Relu"] == 16);
  CHECK(check.plain >= 16 * 9);
}

TEST_CASE("probes: views' gradient records wait in a smaller last batch's graph too, each its own tensor's") {
  const dl::ir::Model model = view_chain(true);
  const dl::test::CnnSetup setup = with_last_row(model, 169, 170, 171);
  Records check;
  dl::test::SinkLog log = dl::test::train_with_sink_log(model, setup, check, 5);
  for (const char* view : {"/1/Dropout", "/1/Reshape", "/1/Flatten"}) {
    CAPTURE(view);
    CHECK(log.own_gradient.at(view) == 0);
  }
  CHECK(log.backward_sinks["/1/Relu"] == 5);
  CHECK(check.plain >= 5 * 9);  // every record checked against a separate reduction
}
