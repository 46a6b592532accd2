// Trace files: the round trip (analysis/trace_io); corrupted input is trace_io_corrupt_test.cpp.
#include "tests/unit/trace_io_test_util.h"

using namespace dl::an;
using namespace dl::test::trace_io;

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

TEST_CASE("trace file: a column's counts beyond 0, -1 and 1 are written when counted, unknown when absent") {
  const Trace t = synthetic_trace(2, 2);
  auto h = nlohmann::json::parse(header_of(trace_bytes(t)));
  CHECK(h["data_summary"]["target_columns"][0]["above_one"] == 50);
  CHECK_FALSE(h["data_summary"]["feature_columns"][0].contains("below_zero"));
  // A trace written before the fields existed reads as not counted (-1).
  Trace old = t;
  old.header.data_summary.target_columns[0].below_zero = -1;
  old.header.data_summary.target_columns[0].below_minus_one = -1;
  old.header.data_summary.target_columns[0].above_one = -1;
  const Trace back = read_trace_bytes(trace_bytes(old), "mem");
  CHECK(back.header.data_summary.target_columns[0].above_one == -1);
  CHECK(back.header.data_summary.target_columns[0].below_zero == -1);
}
