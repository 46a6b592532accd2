// Trace files: round trip, and robustness against corrupted input (analysis/trace_io).
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "analysis/trace_io.h"
#include "converter/errors.h"

namespace {

using namespace dl::an;

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInfF = std::numeric_limits<float>::infinity();
const double kInf = std::numeric_limits<double>::infinity();

Trace synthetic_trace(int records, int probes) {
  Trace t;
  TraceHeader& h = t.header;
  h.model = "models/mlp.onnx";
  h.data = "data/iris.csv";
  h.config = {{"loss", "categorical_crossentropy"}, {"optimizer", "sgd"}, {"learning_rate", "0.01"}};
  for (int l = 0; l < 2; ++l) {
    LayerInfo info;
    info.index = l;
    info.nodes = {"/" + std::to_string(2 * l) + "/Gemm", "/" + std::to_string(2 * l + 1) + "/Relu"};
    info.op_types = {"Gemm", "Relu"};
    info.params = {"w" + std::to_string(l), "b" + std::to_string(l)};
    info.param_count = 40 + l;
    h.layers.push_back(info);
  }
  for (int p = 0; p < probes; ++p) {
    Probe pr;
    pr.kind = static_cast<ProbeKind>(p % 5);
    pr.layer = p % 3 - 1;  // -1, 0, 1
    pr.step = p;
    pr.node = "node" + std::to_string(p);
    pr.op_type = p % 2 ? "Sigmoid" : "Relu";
    pr.op.role = "activation";
    pr.op.linear = p % 2 == 0;
    if (p % 2) pr.op.out_lo = 0, pr.op.out_hi = 1;  // others keep the infinite defaults
    pr.op.has_dead_zone = p % 2 == 0;
    pr.op.saturates = p % 2 == 1;
    pr.op.units = 8;
    h.probes.push_back(pr);
  }
  h.initializers.push_back({"w0", 32, -0.5, 0.5, 0.01, 0.2, 0, 0});
  h.initializers.push_back({"b0", 8, std::nan(""), kInf, 0, 0, 1, 1});
  DataSummary& d = h.data_summary;
  d.source = "data/iris.csv";
  d.rows = 150;
  d.features = 4;
  d.feature_columns = {{0, 7.9, 5.8, 0.8, 0, 0}, {-kInf, 4.4, 3.0, 0.4, 0, 2}};
  d.all_features = {0, 7.9, 3.4, 1.9, 0, 2};
  d.target_columns = {{0, 2, 1, 0.8, 0, 0}};
  d.classes = 3;
  d.targets_are_classes = true;
  d.targets_integer = true;
  d.label_issues = {{"data.csv:12", 3}, {"data.csv:14", std::numeric_limits<double>::infinity()}};
  d.label_issue_count = 1;
  h.metric_name = "accuracy";
  h.output_width = 3;
  h.batches_per_epoch = 5;
  t.set_probe_every(2);
  for (int r = 0; r < records; ++r) {
    TensorStats* s = t.begin_record({int64_t(2 * r), int64_t(r / 3), 1.5f - 0.1f * r, 0.3f + 0.05f * r, 0.01f});
    for (int p = 0; p < probes; ++p) {
      TensorStats& x = s[p];
      x.min = -float(p) - r;
      x.max = float(p) + r;
      x.mean = 0.25f * p;
      x.std = r == records - 1 && p == 0 ? kNaN : 1.0f;
      x.l2 = r == records - 1 && p == 1 ? kInfF : 3.0f;
      x.mean_abs = 0.5f;
      x.zero_frac = 0.125f;
      x.dead_frac = 0.25f;
      x.sat_frac = 0.0625f;
      x.dead_units = 0.5f;
      x.nan = r == records - 1 ? 7u : 0u;
      x.inf = uint32_t(p);
      x.count = 4000000000u;
    }
  }
  for (int i = 0; i < 2 * records; ++i) t.add_loss(i, i == 2 * records - 1 ? kNaN : 1.0f / float(i + 1), 0.1f * i);
  t.add_epoch({0, 1.2, 0.4, true, 1.3, 0.35});
  t.add_epoch({1, std::nan(""), 0.5, false, 0, 0});
  t.complete = false;
  return t;
}

bool same(float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; }
bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

void check_equal(const Trace& a, const Trace& b) {
  CHECK(b.header.version == 1);
  CHECK(b.header.model == a.header.model);
  CHECK(b.header.data == a.header.data);
  CHECK(b.header.config == a.header.config);
  CHECK(b.header.metric_name == a.header.metric_name);
  CHECK(b.header.metric_higher_is_better == a.header.metric_higher_is_better);
  CHECK(b.header.output_width == a.header.output_width);
  CHECK(b.header.batches_per_epoch == a.header.batches_per_epoch);
  CHECK(b.stride() == a.stride());
  CHECK(b.probe_every() == a.probe_every());
  CHECK(b.complete == a.complete);
  REQUIRE(b.header.layers.size() == a.header.layers.size());
  for (size_t k = 0; k < a.header.layers.size(); ++k) {
    CHECK(b.header.layers[k].index == a.header.layers[k].index);
    CHECK(b.header.layers[k].nodes == a.header.layers[k].nodes);
    CHECK(b.header.layers[k].op_types == a.header.layers[k].op_types);
    CHECK(b.header.layers[k].params == a.header.layers[k].params);
    CHECK(b.header.layers[k].param_count == a.header.layers[k].param_count);
  }
  REQUIRE(b.header.probes.size() == a.header.probes.size());
  for (size_t k = 0; k < a.header.probes.size(); ++k) {
    const Probe &p = a.header.probes[k], &q = b.header.probes[k];
    CHECK(q.kind == p.kind);
    CHECK(q.layer == p.layer);
    CHECK(q.step == p.step);
    CHECK(q.node == p.node);
    CHECK(q.op_type == p.op_type);
    CHECK(q.op.role == p.op.role);
    CHECK(q.op.linear == p.op.linear);
    CHECK(q.op.out_lo == p.op.out_lo);
    CHECK(q.op.out_hi == p.op.out_hi);
    CHECK(q.op.has_dead_zone == p.op.has_dead_zone);
    CHECK(q.op.saturates == p.op.saturates);
    CHECK(q.op.normalizes == p.op.normalizes);
    CHECK(q.op.units == p.op.units);
  }
  REQUIRE(b.header.initializers.size() == a.header.initializers.size());
  for (size_t k = 0; k < a.header.initializers.size(); ++k) {
    const InitializerSummary &p = a.header.initializers[k], &q = b.header.initializers[k];
    CHECK(q.name == p.name);
    CHECK(q.count == p.count);
    CHECK(same(q.min, p.min));
    CHECK(same(q.max, p.max));
    CHECK(same(q.mean, p.mean));
    CHECK(same(q.std, p.std));
    CHECK(q.nan == p.nan);
    CHECK(q.inf == p.inf);
  }
  const DataSummary &d = a.header.data_summary, &e = b.header.data_summary;
  CHECK(e.source == d.source);
  CHECK(e.rows == d.rows);
  CHECK(e.features == d.features);
  REQUIRE(e.feature_columns.size() == d.feature_columns.size());
  for (size_t k = 0; k < d.feature_columns.size(); ++k) {
    CHECK(same(e.feature_columns[k].min, d.feature_columns[k].min));
    CHECK(same(e.feature_columns[k].max, d.feature_columns[k].max));
    CHECK(e.feature_columns[k].inf == d.feature_columns[k].inf);
  }
  CHECK(same(e.all_features.mean, d.all_features.mean));
  REQUIRE(e.target_columns.size() == d.target_columns.size());
  for (size_t k = 0; k < d.target_columns.size(); ++k) CHECK(same(e.target_columns[k].std, d.target_columns[k].std));
  CHECK(e.classes == d.classes);
  CHECK(e.targets_are_classes == d.targets_are_classes);
  CHECK(e.targets_integer == d.targets_integer);
  CHECK(e.label_issues == d.label_issues);
  CHECK(e.label_issue_count == d.label_issue_count);
  REQUIRE(b.records.size() == a.records.size());
  for (size_t k = 0; k < a.records.size(); ++k) {
    CHECK(b.records[k].iteration == a.records[k].iteration);
    CHECK(b.records[k].epoch == a.records[k].epoch);
    CHECK(same(b.records[k].loss, a.records[k].loss));
    CHECK(same(b.records[k].metric, a.records[k].metric));
    CHECK(same(b.records[k].lr, a.records[k].lr));
  }
  REQUIRE(b.stats.size() == a.stats.size());
  for (size_t k = 0; k < a.stats.size(); ++k) {
    const TensorStats &s = a.stats[k], &u = b.stats[k];
    CHECK((same(u.min, s.min) && same(u.max, s.max) && same(u.mean, s.mean) && same(u.std, s.std) &&
           same(u.l2, s.l2) && same(u.mean_abs, s.mean_abs) && same(u.zero_frac, s.zero_frac) &&
           same(u.dead_frac, s.dead_frac) && same(u.sat_frac, s.sat_frac) && same(u.dead_units, s.dead_units)));
    CHECK((u.nan == s.nan && u.inf == s.inf && u.count == s.count));
  }
  REQUIRE(b.loss.size() == a.loss.size());
  REQUIRE(b.metric.size() == a.metric.size());
  for (size_t k = 0; k < a.loss.size(); ++k) CHECK((same(b.loss[k], a.loss[k]) && same(b.metric[k], a.metric[k])));
  REQUIRE(b.epochs.size() == a.epochs.size());
  for (size_t k = 0; k < a.epochs.size(); ++k) {
    CHECK(b.epochs[k].epoch == a.epochs[k].epoch);
    CHECK(same(b.epochs[k].loss, a.epochs[k].loss));
    CHECK(same(b.epochs[k].metric, a.epochs[k].metric));
    CHECK(b.epochs[k].has_validation == a.epochs[k].has_validation);
    CHECK(same(b.epochs[k].val_loss, a.epochs[k].val_loss));
    CHECK(same(b.epochs[k].val_metric, a.epochs[k].val_metric));
  }
}

// Expects read_trace_bytes to throw a DataError whose message holds `needle`.
void expect_error(const std::string& bytes, const std::string& needle) {
  try {
    read_trace_bytes(bytes, "t.dltrace");
    FAIL("no error; expected one containing: " << needle);
  } catch (const dl::DataError& e) {
    const std::string m = e.what();
    CHECK_MESSAGE(m.rfind("t.dltrace: ", 0) == 0, m);
    CHECK_MESSAGE(m.find(needle) != std::string::npos, m);
  }
}

// Replaces the JSON header of a valid trace file.
std::string with_header(const std::string& bytes, const std::string& header) {
  const size_t at = std::string("DLTRACE 1\n").size();
  uint64_t old = 0;
  for (int k = 0; k < 8; ++k) old |= uint64_t(static_cast<unsigned char>(bytes[at + k])) << (8 * k);
  std::string out = bytes.substr(0, at);
  for (int k = 0; k < 8; ++k) out.push_back(static_cast<char>((uint64_t(header.size()) >> (8 * k)) & 0xff));
  return out + header + bytes.substr(at + 8 + old);
}

std::string header_of(const std::string& bytes) {
  const size_t at = std::string("DLTRACE 1\n").size();
  uint64_t n = 0;
  for (int k = 0; k < 8; ++k) n |= uint64_t(static_cast<unsigned char>(bytes[at + k])) << (8 * k);
  return bytes.substr(at + 8, n);
}

}  // namespace

TEST_CASE("trace file: round trip keeps every field, NaN statistics and infinite ranges") {
  const Trace t = synthetic_trace(4, 5);
  const std::string bytes = trace_bytes(t);
  CHECK(bytes.rfind("DLTRACE 1\n", 0) == 0);
  check_equal(t, read_trace_bytes(bytes, "mem"));

  const std::string path = std::string(DL_BINARY_DIR) + "/roundtrip.dltrace";
  write_trace(t, path);
  for (const auto& e : std::filesystem::directory_iterator(DL_BINARY_DIR))  // the temporary file was renamed away
    CHECK(e.path().filename().string().rfind("roundtrip.dltrace.", 0) != 0);
  const Trace back = read_trace(path);
  check_equal(t, back);
  CHECK(std::isinf(back.header.probes[0].op.out_lo));
  CHECK(back.header.probes[0].op.out_lo < 0);
  CHECK(std::isinf(back.header.probes[0].op.out_hi));
  CHECK(std::isnan(back.at(3, 0).std));
  CHECK(std::isinf(back.at(3, 1).l2));
  std::remove(path.c_str());
}

TEST_CASE("trace file: an empty trace round-trips") {
  Trace t;
  check_equal(t, read_trace_bytes(trace_bytes(t), "mem"));
}

TEST_CASE("trace file: header encodes infinite bounds as null and the section counts") {
  const auto h = nlohmann::json::parse(header_of(trace_bytes(synthetic_trace(3, 2))));
  CHECK(h["probes"][0]["op"]["out_lo"].is_null());
  CHECK(h["probes"][0]["op"]["out_hi"].is_null());
  CHECK(h["probes"][1]["op"]["out_hi"] == 1.0);
  CHECK(h["record_count"] == 3);
  CHECK(h["probe_count"] == 2);
  CHECK(h["loss_count"] == 6);
  CHECK(h["epochs"][1]["loss"] == "NaN");
  CHECK(h["complete"] == false);
}

TEST_CASE("trace file: truncation at every byte offset is a DataError, never a crash") {
  const std::string bytes = trace_bytes(synthetic_trace(2, 3));
  for (size_t n = 0; n < bytes.size(); ++n) {
    CAPTURE(n);
    CHECK_THROWS_AS(read_trace_bytes(bytes.substr(0, n), "t"), dl::DataError);
  }
  CHECK_THROWS_AS(read_trace_bytes(bytes + "x", "t"), dl::DataError);
}

TEST_CASE("trace file: every single-byte corruption is read or rejected cleanly") {
  const std::string bytes = trace_bytes(synthetic_trace(2, 3));
  for (size_t n = 0; n < bytes.size(); ++n) {
    for (int v : {0x00, 0xff, int('"'), int('9'), int('-')}) {
      std::string b = bytes;
      b[n] = static_cast<char>(v);
      try {
        read_trace_bytes(b, "t");
      } catch (const dl::DataError&) {
      }
    }
  }
}

TEST_CASE("trace file: magic and version") {
  const std::string bytes = trace_bytes(synthetic_trace(1, 1));
  expect_error("", "not a deeplocalize trace");
  expect_error("PK\x03\x04 something else", "not a deeplocalize trace");
  expect_error("DLTRACE x\n", "bad magic line");
  expect_error("DLTRACE 1", "bad magic line");
  expect_error("DLTRACE 2\n" + bytes.substr(10), "trace version 2 is newer than this deeplocalize reads (1)");
  expect_error("DLTRACE 0\n" + bytes.substr(10), "unsupported trace version 0");
}

TEST_CASE("trace file: label issues are typed records; older traces with text-only issues are refused clearly") {
  const std::string bytes = trace_bytes(synthetic_trace(2, 2));
  auto h = nlohmann::json::parse(header_of(bytes));
  const auto& records = h["data_summary"]["label_issue_records"];
  REQUIRE(records.size() == 2);
  CHECK(records[0]["location"] == "data.csv:12");
  CHECK(records[0]["value"] == 3.0);
  CHECK(records[1]["value"] == "Infinity");
  // The sentences older readers require (never read back).
  CHECK(h["data_summary"]["label_issues"][0] == "data.csv:12: class id 3 is outside 0.." +
                                                    std::to_string(h["data_summary"]["classes"].get<int64_t>() - 1));
  // A trace from before the records: read when it lists no issues, refused when it does.
  h["data_summary"].erase("label_issue_records");
  h["data_summary"]["label_issues"] = nlohmann::json::array();
  CHECK(read_trace_bytes(with_header(bytes, h.dump()), "old.dltrace").header.data_summary.label_issues.empty());
  h["data_summary"]["label_issues"] = nlohmann::json::array({"data.csv:12: class id 3 is outside 0..2"});
  expect_error(with_header(bytes, h.dump()), "data_summary.label_issues: this trace, from an older deeplocalize, "
                                             "lists its invalid labels as text only");
}

TEST_CASE("trace file: huge declared lengths are rejected before allocating") {
  const std::string bytes = trace_bytes(synthetic_trace(2, 2));
  std::string b = bytes;
  for (int k = 0; k < 8; ++k) b[10 + k] = '\xff';
  expect_error(b, "truncated trace: the JSON header");

  auto h = nlohmann::json::parse(header_of(bytes));
  for (const char* key : {"record_count", "loss_count"}) {
    auto g = h;
    g[key] = std::numeric_limits<int64_t>::max();
    expect_error(with_header(bytes, g.dump()), "truncated trace");
  }
  auto g = h;
  g["record_count"] = 1ll << 40;
  expect_error(with_header(bytes, g.dump()), "truncated trace");
  // Records that fit in the remaining bytes but whose statistics do not.
  g = h;
  g["record_count"] = 10;
  CHECK_THROWS_AS(read_trace_bytes(with_header(bytes, g.dump()), "t"), dl::DataError);
  g = h;
  g["record_count"] = 0;
  g["loss_count"] = 0;
  expect_error(with_header(bytes, g.dump()), "unexpected bytes");
}

TEST_CASE("trace file: malformed headers name the field at fault") {
  const std::string bytes = trace_bytes(synthetic_trace(2, 3));
  const auto h = nlohmann::json::parse(header_of(bytes));
  expect_error(with_header(bytes, "{\"version\": 1,"), "not valid JSON");
  expect_error(with_header(bytes, "[1, 2]"), "expected an object");
  auto g = h;
  g.erase("probes");
  expect_error(with_header(bytes, g.dump()), "probes: missing");
  g = h;
  g["probes"][1]["layer"] = 7;
  expect_error(with_header(bytes, g.dump()), "probes[1].layer: 7 is out of range -1..1");
  g = h;
  g["probes"][0]["kind"] = "sideways";
  expect_error(with_header(bytes, g.dump()), "unknown probe kind");
  g = h;
  g["probes"][2]["op"]["units"] = "eight";
  expect_error(with_header(bytes, g.dump()), "probes[2].op.units: expected an integer");
  g = h;
  g["layers"][1]["index"] = 0;
  expect_error(with_header(bytes, g.dump()), "layers[1].index");
  g = h;
  g["probe_count"] = 2;
  expect_error(with_header(bytes, g.dump()), "probe_count");
  g = h;
  g["data_summary"]["feature_columns"][0]["min"] = "lots";
  expect_error(with_header(bytes, g.dump()), "data_summary.feature_columns[0].min: expected a number");
  g = h;
  g["config"]["epochs"] = 10;
  expect_error(with_header(bytes, g.dump()), "config.epochs: expected a string");
  g = h;
  g["stride"] = 0;
  expect_error(with_header(bytes, g.dump()), "stride");
  g = h;
  g["version"] = 3;
  expect_error(with_header(bytes, g.dump()), "disagrees");
}

TEST_CASE("trace file: records out of order are rejected") {
  Trace t = synthetic_trace(3, 1);
  t.records[2].iteration = 1;
  expect_error(trace_bytes(t), "increasing iteration order");
}

TEST_CASE("trace file: unwritable and unreadable paths are DataErrors naming the file") {
  const Trace t = synthetic_trace(1, 1);
  CHECK_THROWS_AS(write_trace(t, "/nonexistent-dir/x.dltrace"), dl::ConfigError);
  try {
    read_trace("/nonexistent-dir/x.dltrace");
    FAIL("no error");
  } catch (const dl::DataError& e) {
    CHECK(std::string(e.what()).rfind("/nonexistent-dir/x.dltrace: ", 0) == 0);
  }
}

TEST_CASE("trace file: bytes of the file in a message are escaped, never raw") {
  const std::string bytes = trace_bytes(synthetic_trace(2, 3));
  auto g = nlohmann::json::parse(header_of(bytes));
  g["probes"][0]["kind"] = "\x1b[2J";
  expect_error(with_header(bytes, g.dump()), "unknown probe kind '\\x1b[2J'");
  try {
    read_trace_bytes(with_header(bytes, "{\"version\": \xff\xfe}"), "t.dltrace");
    FAIL("no error");
  } catch (const dl::DataError& e) {
    const std::string m = e.what();
    CHECK_MESSAGE(m.find("not valid JSON") != std::string::npos, m);
    CHECK_MESSAGE(m.find("\\xff") != std::string::npos, m);
    CHECK_MESSAGE(m.find('\xff') == std::string::npos, m);
  }
}
