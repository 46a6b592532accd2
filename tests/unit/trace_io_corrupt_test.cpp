// Trace files: robustness against truncated, corrupted and hostile input (analysis/trace_io).
#include "tests/unit/trace_io_test_util.h"

using namespace dl::an;
using namespace dl::test::trace_io;

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
