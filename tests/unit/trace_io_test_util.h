// Shared by the trace-file tests (trace_io_test.cpp, trace_io_corrupt_test.cpp): a synthetic
// trace, its bytes, and helpers that edit the JSON header of a valid file.
#pragma once
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


namespace dl::test::trace_io {

using namespace dl::an;  // NOLINT: test helpers

inline const float kNaN = std::numeric_limits<float>::quiet_NaN();
inline const float kInfF = std::numeric_limits<float>::infinity();
inline const double kInf = std::numeric_limits<double>::infinity();

inline Trace synthetic_trace(int records, int probes) {
  Trace t;
  TraceHeader& h = t.header;
  h.model = "models/mlp.onnx";
  h.data = "data/iris.csv";
  h.config = {{"loss", "categorical_crossentropy"}, {"optimizer", "sgd"}, {"learning_rate", "0.01"}};
  h.notes = {"the graph input 'x' has a fixed batch dimension of 1 in the file"};
  for (int l = 0; l < 2; ++l) {
    LayerInfo info;
    info.index = l;
    info.nodes = {"/" + std::to_string(2 * l) + "/Gemm", "/" + std::to_string(2 * l + 1) + "/Relu"};
    info.op_types = {"Gemm", "Relu"};
    info.params = {"w" + std::to_string(l), "b" + std::to_string(l)};
    info.param_count = 40 + l;
    info.feeds = l == 0 ? 1 : LayerInfo::kNoChain;
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
    pr.op.sample_size = 8 * (p + 1);
    if (p % 2 == 0) pr.op.drop_rate = 0.25;  // others keep 0, which is not written
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
  d.target_columns = {{0, 2, 1, 0.8, 0, 0, 0, 0, 50}};  // counted beyond 0, -1 and 1
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

inline bool same(float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; }
inline bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

inline void check_equal(const Trace& a, const Trace& b) {
  CHECK(b.header.version == 1);
  CHECK(b.header.model == a.header.model);
  CHECK(b.header.data == a.header.data);
  CHECK(b.header.config == a.header.config);
  CHECK(b.header.metric_name == a.header.metric_name);
  CHECK(b.header.metric_higher_is_better == a.header.metric_higher_is_better);
  CHECK(b.header.output_width == a.header.output_width);
  CHECK(b.header.batches_per_epoch == a.header.batches_per_epoch);
  CHECK(b.header.notes == a.header.notes);
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
    CHECK(b.header.layers[k].feeds == a.header.layers[k].feeds);
  }
  REQUIRE(b.header.probes.size() == a.header.probes.size());
  for (size_t k = 0; k < a.header.probes.size(); ++k) {
    const Probe &p = a.header.probes[k], &q = b.header.probes[k];
    CHECK(q.kind == p.kind);
    CHECK(q.feature == p.feature);
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
    CHECK(q.op.drop_rate == p.op.drop_rate);
    CHECK(q.op.sample_size == p.op.sample_size);
    CHECK(q.op.units == p.op.units);
    CHECK(q.op.recurrent == p.op.recurrent);
    CHECK(q.op.bounded_state == p.op.bounded_state);
    CHECK(q.op.embedding == p.op.embedding);
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
  for (size_t k = 0; k < d.target_columns.size(); ++k) {
    CHECK(same(e.target_columns[k].std, d.target_columns[k].std));
    CHECK(e.target_columns[k].below_zero == d.target_columns[k].below_zero);
    CHECK(e.target_columns[k].below_minus_one == d.target_columns[k].below_minus_one);
    CHECK(e.target_columns[k].above_one == d.target_columns[k].above_one);
  }
  for (size_t k = 0; k < d.feature_columns.size(); ++k)  // not counted: stays unknown
    CHECK(e.feature_columns[k].below_zero == d.feature_columns[k].below_zero);
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
inline void expect_error(const std::string& bytes, const std::string& needle) {
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
inline std::string with_header(const std::string& bytes, const std::string& header) {
  const size_t at = std::string("DLTRACE 1\n").size();
  uint64_t old = 0;
  for (int k = 0; k < 8; ++k) old |= uint64_t(static_cast<unsigned char>(bytes[at + k])) << (8 * k);
  std::string out = bytes.substr(0, at);
  for (int k = 0; k < 8; ++k) out.push_back(static_cast<char>((uint64_t(header.size()) >> (8 * k)) & 0xff));
  return out + header + bytes.substr(at + 8 + old);
}

inline std::string header_of(const std::string& bytes) {
  const size_t at = std::string("DLTRACE 1\n").size();
  uint64_t n = 0;
  for (int k = 0; k < 8; ++k) n |= uint64_t(static_cast<unsigned char>(bytes[at + k])) << (8 * k);
  return bytes.substr(at + 8, n);
}

}  // namespace dl::test::trace_io
