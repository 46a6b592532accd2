// The recurrent and embedding trace features (issue 16): a recurrent op's inner values
// (runtime/ops/rnn_common.cpp, FwdCtx::inner), the probe kinds in trace files, frozen
// parameters (deeplocalize.frozen) in the optimizer and the configuration, and the
// embedding rows probe of a trained model.
#include <doctest/doctest.h>

#include <cmath>

#include "analysis/trace_io.h"
#include "converter/errors.h"
#include "converter/import.h"
#include "runtime/attrs.h"
#include "runtime/ops/rnn_common.h"
#include "runtime/optimizer.h"
#include "runtime/probes.h"
#include "runtime/run_summary.h"
#include "runtime/train_config.h"
#include "runtime/trainer.h"
#include "tests/unit/op_harness.h"
#include "tests/unit/trace_io_test_util.h"

namespace {

using namespace dl;

// LSTM, T = 3, batch lens.size() (2 by default), input 3, hidden 2; inputs scaled by
// `scale` (large: saturated gates).
test::OpRun lstm(float scale, std::vector<std::string> acts, std::vector<int64_t> lens = {3, 3}) {
  const int64_t t = 3, b = int64_t(lens.size()), in = 3, h = 2;
  ir::Node node = rt::sample_node("LSTM", 5, 2, {{"hidden_size", rt::attr_i(h)}, {"activations", rt::attr_strings(acts)}}, 14);
  std::vector<rt::Tensor> inputs = {rt::rnn::ramp({t, b, in}, 0.25f * scale, -1.0f * scale),
                                    rt::rnn::ramp({1, 4 * h, in}, 0.1f, -0.4f), rt::rnn::ramp({1, 4 * h, h}, 0.12f, -0.5f),
                                    rt::rnn::ramp({1, 8 * h}, 0.05f, -0.2f), rt::Tensor::ints({b}, lens)};
  return test::OpRun(node, std::move(inputs), true);
}

TEST_CASE("recurrent inner values: every gate and candidate counted once, states of the first and last step") {
  rt::InnerStats st;
  test::OpRun run = lstm(1.0f, {"Sigmoid", "Tanh", "Tanh"});
  run.inner = &st;
  run.forward();
  CHECK(st.gates.n == 3 * 2 * 3 * 2);  // T x batch x (i, o, f) x hidden
  CHECK(st.candidates.n == 3 * 2 * 2);
  CHECK(st.first.n == 2 * 2);
  CHECK(st.last.n == 2 * 2);
  CHECK(st.gates.min >= 0.0f);
  CHECK(st.gates.max <= 1.0f);
  // the last state is Y_h
  double sq = 0;
  for (int64_t k = 0; k < 4; ++k) sq += double(run.outputs[1].f()[k]) * run.outputs[1].f()[k];
  CHECK(st.last.sumsq == doctest::Approx(sq));
  CHECK(st.gates.saturated < st.gates.n / 2);
  CHECK(run.op->traits().recurrent);
  CHECK(run.op->traits().bounded_state);

  SUBCASE("huge inputs saturate the gates") {
    rt::InnerStats big;
    test::OpRun r = lstm(1000.0f, {"Sigmoid", "Tanh", "Tanh"});
    r.inner = &big;
    r.forward();
    CHECK(big.gates.saturated > big.gates.n * 3 / 4);
    CHECK(big.candidates.saturated > big.candidates.n * 3 / 4);
  }
  SUBCASE("a Relu cell: no saturating candidate, an unbounded state") {
    rt::InnerStats relu;
    test::OpRun r = lstm(1.0f, {"Sigmoid", "Relu", "Relu"});
    r.inner = &relu;
    r.forward();
    CHECK(relu.candidates.n == 0);
    CHECK(relu.gates.n == 36);
    CHECK_FALSE(r.op->traits().bounded_state);
  }
  SUBCASE("rows past their length are skipped") {
    rt::InnerStats part;
    test::OpRun r = lstm(1.0f, {"Sigmoid", "Tanh", "Tanh"}, {3, 1});
    r.inner = &part;
    r.forward();
    CHECK(part.gates.n == (3 + 1) * 3 * 2);
  }
  SUBCASE("a row past its length between two within it: each run of rows reduced, the gap left out") {
    rt::InnerStats gap, whole;
    test::OpRun r = lstm(1.0f, {"Sigmoid", "Tanh", "Tanh"}, {3, 1, 3});
    r.inner = &gap;
    r.forward();
    CHECK(gap.gates.n == (3 + 1 + 3) * 3 * 2);
    CHECK(gap.candidates.n == (3 + 1 + 3) * 2);
    // The rows of lengths 3 see the same inputs either way (batch rows are independent):
    // without the middle row's last two steps, the sums are those of lengths {3, 3, 3}
    // less that row's two steps, so they are smaller in count only.
    test::OpRun w = lstm(1.0f, {"Sigmoid", "Tanh", "Tanh"}, {3, 3, 3});
    w.inner = &whole;
    w.forward();
    CHECK(whole.gates.n == 3 * 3 * 3 * 2);
    CHECK(gap.gates.max <= whole.gates.max);
    CHECK(gap.gates.min >= whole.gates.min);
  }
  SUBCASE("not asked: nothing is reduced") {
    test::OpRun r = lstm(1.0f, {"Sigmoid", "Tanh", "Tanh"});
    rt::InnerStats untouched;
    r.forward();
    CHECK(untouched.gates.n == 0);
  }
}

TEST_CASE("trace file: the recurrent and embedding probes and traits round trip") {
  an::Trace t = test::trace_io::synthetic_trace(3, 2);
  const size_t old = t.header.probes.size();
  std::vector<an::TensorStats> stats;
  for (size_t r = 0; r < t.size(); ++r) {
    for (size_t k = 0; k < old; ++k) stats.push_back(t.at(r, k));
    for (an::ProbeKind kind : {an::ProbeKind::kGates, an::ProbeKind::kCandidates, an::ProbeKind::kStateFirst,
                               an::ProbeKind::kStateLast, an::ProbeKind::kRows}) {
      an::TensorStats s;
      s.count = 10 + uint32_t(kind);
      s.sat_frac = 0.25f * float(r);
      s.dead_frac = 0.5f;
      stats.push_back(s);
    }
  }
  for (an::ProbeKind kind : {an::ProbeKind::kGates, an::ProbeKind::kCandidates, an::ProbeKind::kStateFirst,
                             an::ProbeKind::kStateLast, an::ProbeKind::kRows}) {
    an::Probe p;
    p.kind = kind;
    p.layer = 0;
    p.node = kind == an::ProbeKind::kRows ? "/emb/Gather" : "/rnn/LSTM";
    p.op.recurrent = kind != an::ProbeKind::kRows;
    p.op.bounded_state = kind == an::ProbeKind::kGates;
    p.op.embedding = kind == an::ProbeKind::kRows;
    t.header.probes.push_back(p);
  }
  t.stats.assign(stats.begin(), stats.end());
  const an::Trace back = an::read_trace_bytes(an::trace_bytes(t), "mem");
  test::trace_io::check_equal(t, back);
  CHECK(back.header.probes[old].kind == an::ProbeKind::kGates);
  CHECK(back.header.probes[old + 4].kind == an::ProbeKind::kRows);
  CHECK(back.at(2, old).sat_frac == 0.5f);
  CHECK(std::string(an::probe_kind_name(an::ProbeKind::kStateLast)) == "state_last");
}

TEST_CASE("frozen parameters: not updated, named in the configuration, checked against the model") {
  rt::Tensor w = rt::Tensor::floats({2}, {1.0f, 2.0f}), e = rt::Tensor::floats({2}, {3.0f, 4.0f});
  rt::Tensor gw = rt::Tensor::floats({2}, {0.5f, 0.5f}), ge = rt::Tensor::floats({2}, {0.5f, 0.5f});
  std::vector<rt::Param> params = {{"w", &w, &gw}, {"emb.weight", &e, &ge}};
  rt::OptimizerConfig c;
  c.name = "adam";
  c.learning_rate = 0.1;
  c.frozen = " emb.weight ,";
  auto opt = rt::make_optimizer(c);
  CHECK(opt->frozen("emb.weight"));
  CHECK_FALSE(opt->frozen("w"));
  opt->step(params);
  CHECK(w.f()[0] != 1.0f);
  CHECK(e.f()[0] == 3.0f);
  CHECK(e.f()[1] == 4.0f);
  CHECK(rt::frozen_names("a, b,,c") == std::vector<std::string>{"a", "b", "c"});

  const rt::TrainConfig tc = rt::config_from_metadata({{"deeplocalize.frozen", "emb.weight"}}, "m.onnx");
  CHECK(tc.optimizer.frozen == "emb.weight");
  CHECK(rt::config_to_metadata(tc).at("deeplocalize.frozen") == "emb.weight");
}

// The committed healthy embedding case, trained two epochs with its table frozen or not.
an::Trace train_embedding(const std::string& frozen, std::string* error = nullptr) {
  const std::string dir = std::string(DL_SOURCE_DIR) + "/models/modern/healthy_embedding_meanpool/";
  const ir::Model model = conv::import_model(dir + "model.onnx");
  rt::TrainConfig config = rt::config_from_metadata(model.metadata);
  config.epochs = 2;
  config.optimizer.frozen = frozen;
  rt::Dataset d;
  d.source = "synthetic";
  d.n = 64;
  d.x_shape = {10};
  d.x_size = 10;
  d.y_size = 1;
  for (int64_t r = 0; r < d.n; ++r) {
    for (int64_t k = 0; k < 10; ++k) d.x.push_back(float((r * 7 + k * 3) % 30));  // ids 0..29 of 60
    d.y.push_back(float(r % 3));
    d.line_of_row.push_back(r + 2);
  }
  an::Trace trace;
  try {
    rt::Trainer trainer(model, config, d, rt::Dataset{});
    rt::describe_run(trainer.graph(), config, trainer.train_data(), "accuracy", true, trace.header);
    rt::ProbeRecorder probes(trainer.graph(), trace);
    trace.reserve_iterations(8);
    trainer.set_observer(&probes);
    trainer.add_listener(&probes);
    trainer.run();
  } catch (const Error& e) {
    if (!error) throw;
    *error = e.what();
  }
  return trace;
}

TEST_CASE("embedding rows probe: rows changed per update and never changed, frozen tables") {
  auto rows_probe = [](const an::Trace& t) {
    for (size_t k = 0; k < t.header.probes.size(); ++k)
      if (t.header.probes[k].kind == an::ProbeKind::kRows) return k;
    FAIL("no rows probe");
    return size_t(0);
  };
  const an::Trace t = train_embedding("");
  const size_t k = rows_probe(t);
  CHECK(t.header.probes[k].node == "/emb/Gather");
  CHECK(t.header.probes[k].op.embedding);
  const an::TensorStats& last = t.at(t.size() - 1, k);
  CHECK(last.count == 60);
  CHECK(last.dead_frac == doctest::Approx(0.5));  // ids 30..59 never occur
  CHECK(last.zero_frac >= 0.5f);
  CHECK(last.zero_frac < 1.0f);

  const an::Trace f = train_embedding("emb.weight");
  const size_t j = rows_probe(f);
  for (size_t r = 0; r < f.size(); ++r) {
    CHECK(f.at(r, j).zero_frac == 1.0f);
    CHECK(f.at(r, j).dead_frac == 1.0f);
  }
  CHECK(f.header.config.at("frozen") == "emb.weight");

  std::string error;
  train_embedding("emb.wieght", &error);
  CHECK(error.find("'emb.wieght' is not a trainable parameter") != std::string::npos);
}

}  // namespace
