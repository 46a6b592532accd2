// Reports: the contract's JSON fields and types, and the text report (analysis/report).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "analysis/report.h"

namespace {

using namespace dl::an;
using nlohmann::json;

Trace small_trace(size_t iterations) {
  Trace t;
  LayerInfo l0, l1;
  l0.index = 0, l0.nodes = {"/0/Gemm", "/1/Relu"};
  l1.index = 1, l1.nodes = {"/2/Gemm", "/3/Softmax"};
  t.header.layers = {l0, l1};
  t.header.metric_name = "accuracy";
  for (size_t i = 0; i < iterations; ++i) t.add_loss(int64_t(i), 2.0f / float(i + 1), 0.3f + 0.6f * float(i) / float(iterations));
  return t;
}

Finding nan_finding() {
  Finding f;
  f.symptom = "nan_forward";
  f.rule = "nan_inf";
  f.stage = Stage::kForward;
  f.layer = 1;  // nodes left empty: taken from the trace's layer table
  f.epoch = 0, f.iteration = 17;
  f.root_cause = RootCause::kActivation;
  f.message = "the output of layer 1 holds NaN";
  f.recommendation = "Replace the Softmax by a numerically stable one.";
  f.evidence = {{"nan", 12}, {"count", 320}, {"max_before", 88.5}};
  return f;
}

Finding loss_finding() {
  Finding f;
  f.symptom = "nan_loss";
  f.rule = "nan_inf";
  f.stage = Stage::kLoss;
  f.epoch = 0, f.iteration = 17;
  f.root_cause = RootCause::kLoss;
  f.message = "the loss is NaN";
  f.consequence_of = 0;
  return f;
}

Finding lr_warning() {
  Finding f;
  f.symptom = "large_learning_rate";
  f.rule = "learning_rate";
  f.stage = Stage::kStatic;
  f.root_cause = RootCause::kLearningRate;
  f.message = "the learning rate 3 is unusually large for SGD";
  f.recommendation = "Lower the learning rate to 0.01.";
  f.conclusive = false;
  return f;
}

RunInfo run_info() {
  RunInfo r;
  r.tool_version = "0.1.0";
  r.model = "m.onnx";
  r.data = "d.csv";
  r.iterations = 18;
  r.epochs = 1;
  r.stopped_early = true;
  r.epoch_loss = {0.75};
  r.epoch_metric = {0.5};
  r.train_s = 0.25;
  return r;
}

Diagnosis faulty() {
  Diagnosis d;
  d.fault = true;
  d.findings = {nan_finding(), loss_finding()};
  d.warnings = {lr_warning()};
  return d;
}

}  // namespace

TEST_CASE("report json: the contract's fields and types") {
  Trace t = small_trace(18);
  const json j = report_json(faulty(), t, run_info());
  CHECK(j["tool"] == "deeplocalize");
  CHECK(j["version"] == "0.1.0");
  CHECK(j["model"] == "m.onnx");
  CHECK(j["data"] == "d.csv");
  CHECK(j["verdict"] == "fault");
  CHECK(j["complete"] == true);
  REQUIRE(j["findings"].is_array());
  REQUIRE(j["findings"].size() == 2);
  const json& f = j["findings"][0];
  CHECK(f["symptom"] == "nan_forward");
  CHECK(f["stage"] == "forward");
  REQUIRE(f["layer"].is_object());
  CHECK(f["layer"]["index"] == 1);
  CHECK(f["layer"]["name"] == "/2/Gemm");
  CHECK(f["layer"]["nodes"] == json::array({"/2/Gemm", "/3/Softmax"}));
  CHECK(f["epoch"] == 0);
  CHECK(f["iteration"] == 17);
  CHECK(f["root_cause"] == "activation");
  CHECK(f["recommendation"].is_string());
  CHECK(f["evidence"]["nan"] == 12);
  CHECK(f["message"] == "the output of layer 1 holds NaN");
  CHECK(f["rule"] == "nan_inf");
  CHECK(f["consequence_of"].is_null());
  CHECK(f["conclusive"] == true);
  const json& g = j["findings"][1];
  CHECK(g["layer"].is_null());  // layer -1
  CHECK(g["consequence_of"] == 0);
  REQUIRE(j["warnings"].size() == 1);
  CHECK(j["warnings"][0]["conclusive"] == false);
  CHECK(j["warnings"][0]["stage"] == "static");
  const json& tr = j["training"];
  CHECK(tr["iterations"].is_number_integer());
  CHECK(tr["iterations"] == 18);
  CHECK(tr["epochs"] == 1);
  CHECK(tr["stopped_early"] == true);
  CHECK(tr["loss"] == json::array({0.75}));
  CHECK(tr["accuracy"] == json::array({0.5}));
  CHECK(tr["metric"] == "accuracy");
  CHECK_FALSE(tr.contains("val_loss"));
  CHECK(j["timing"]["import_s"].is_number());
  CHECK(j["timing"]["train_s"] == 0.25);
  CHECK(j["timing"]["analysis_s"].is_number());
  CHECK_NOTHROW(j.dump());
}

TEST_CASE("report json: healthy run, regression metric and validation curves") {
  RunInfo r = run_info();
  r.metric_name = "mae";
  r.epoch_val_loss = {0.8};
  r.epoch_val_metric = {0.4};
  r.complete = false;
  const json j = report_json(Diagnosis{}, small_trace(5), r);
  CHECK(j["verdict"] == "ok");
  CHECK(j["findings"].empty());
  CHECK(j["complete"] == false);
  CHECK(j["training"]["metric"] == "mae");
  CHECK(j["training"]["accuracy"] == json::array({0.5}));
  CHECK(j["training"]["val_loss"] == json::array({0.8}));
  CHECK(j["training"]["val_accuracy"] == json::array({0.4}));
}

TEST_CASE("report text: verdict, evidence, recommendation, consequences, warnings and curve") {
  Trace t = small_trace(18);
  t.loss[17] = std::numeric_limits<float>::quiet_NaN();
  const std::string s = report_text(faulty(), t, run_info(), false);
  CHECK(s.find("FAULT: layer 1 (/2/Gemm, /3/Softmax): the output of layer 1 holds NaN") != std::string::npos);
  CHECK(s.find("iteration 17") != std::string::npos);
  CHECK(s.find("max_before: 88.5") != std::string::npos);
  CHECK(s.find("Fix: Replace the Softmax") != std::string::npos);
  CHECK(s.find("(consequence of #1)") != std::string::npos);
  CHECK(s.find("Warnings") != std::string::npos);
  CHECK(s.find("Lower the learning rate") != std::string::npos);
  CHECK(s.find("\u2588") != std::string::npos);  // the curve's highest bar
  CHECK(s.find('!') != std::string::npos);       // the NaN loss
  CHECK(s.find("max 2") != std::string::npos);
  CHECK(s.find('\x1b') == std::string::npos);
  CHECK(s.find("INTERRUPTED") == std::string::npos);
  CHECK(report_text(faulty(), t, run_info(), true).find("\x1b[") != std::string::npos);
}

TEST_CASE("report text: healthy and interrupted runs") {
  RunInfo r = run_info();
  r.stopped_early = false;
  r.epoch_loss = {0.9, 0.3};
  r.epoch_metric = {0.6, 0.95};
  const std::string ok = report_text(Diagnosis{}, small_trace(18), r, false);
  CHECK(ok.find("OK: no fault found in 18 iterations (loss 0.9 \u2192 0.3, accuracy 0.6 \u2192 0.95)") !=
        std::string::npos);
  r.complete = false;
  CHECK(report_text(Diagnosis{}, small_trace(18), r, false).find("INTERRUPTED") != std::string::npos);
  CHECK_NOTHROW(report_text(Diagnosis{}, Trace{}, RunInfo{}, false));
}

TEST_CASE("sparkline: downsampling, log scale and non-finite values") {
  double lo = 0, hi = 0;
  bool log_scale = false;
  std::vector<float> v(600);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 1000.0f * std::pow(0.98f, float(i));  // 1000 down to ~0.006
  const std::string s = sparkline(v, 60, lo, hi, log_scale);
  CHECK(log_scale);
  CHECK(s.size() == 60 * 3);  // 60 three-byte block characters
  CHECK(s.rfind("\u2588", 0) == 0);
  CHECK(lo > 0);
  CHECK(hi > 100);

  const std::string flat = sparkline({1, 1, 1}, 60, lo, hi, log_scale);
  CHECK(flat == "\u2584\u2584\u2584");
  CHECK_FALSE(log_scale);
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(sparkline({1, inf, 2}, 60, lo, hi, log_scale) == "\u2581!\u2588");
  CHECK(sparkline({}, 60, lo, hi, log_scale).empty());
  CHECK(sparkline({-1, 0, 5000}, 60, lo, hi, log_scale).size() == 9);
  CHECK_FALSE(log_scale);  // not all positive
}
