// CSV reader (runtime/data/csv.cpp): the contract's format and every input error, with
// the exact file:line:column text.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "converter/errors.h"
#include "runtime/data/table.h"

using dl::rt::read_csv_text;
using dl::rt::Table;

namespace {

Table csv(const std::string& text) { return read_csv_text(text, "d.csv"); }

// The message of the DataError that parsing text throws.
std::string csv_error(const std::string& text) {
  try {
    csv(text);
  } catch (const dl::DataError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string temp_file(const std::string& name, const std::string& contents) {
  const auto path = std::filesystem::temp_directory_path() / ("dl_data_test_" + name);
  std::ofstream(path, std::ios::binary) << contents;
  return path.string();
}

}  // namespace

TEST_CASE("csv: a header row is detected and kept") {
  const Table t = csv("a,b,label\n1,2,0\n3,4.5,1\n");
  CHECK(t.rows == 2);
  CHECK(t.cols == 3);
  CHECK(t.header == std::vector<std::string>{"a", "b", "label"});
  CHECK(t.values == std::vector<float>{1, 2, 0, 3, 4.5f, 1});
  CHECK(t.line_of_row == std::vector<int64_t>{2, 3});
  CHECK(t.csv_lines);
}

TEST_CASE("csv: without a header, the first row is data; no final newline needed") {
  const Table t = csv("1,2\n-3,4e-1");
  CHECK(t.header.empty());
  CHECK(t.values == std::vector<float>{1, 2, -3, 0.4f});
  CHECK(t.line_of_row == std::vector<int64_t>{1, 2});
}

TEST_CASE("csv: UTF-8 BOM, CRLF line endings and blank trailing lines") {
  const Table t = csv("\xEF\xBB\xBFx,y\r\n1,2\r\n3,4\r\n\r\n  \n\n");
  CHECK(t.header == std::vector<std::string>{"x", "y"});
  CHECK(t.values == std::vector<float>{1, 2, 3, 4});
  CHECK(t.line_of_row == std::vector<int64_t>{2, 3});
  // The BOM does not count as a column.
  CHECK(csv_error("\xEF\xBB\xBF"
                  "1,,3\n") == "d.csv:1:3: empty field (field 2)");
}

TEST_CASE("csv: spaces around numbers, quoted numbers and quoted header names") {
  const Table t = csv("\"a,b\", \"say \"\"c\"\"\" ,d\n 1.5 , \"2\" ,\t\" 3e2 \"\n");
  CHECK(t.header == std::vector<std::string>{"a,b", "say \"c\"", "d"});
  CHECK(t.values == std::vector<float>{1.5f, 2, 300});
}

TEST_CASE("csv: nan and inf are values, not errors (the analysis reports them)") {
  const Table t = csv("nan,inf,-inf,NaN,+1,Infinity\n");
  REQUIRE(t.values.size() == 6);
  CHECK(std::isnan(t.values[0]));
  CHECK(t.values[1] == INFINITY);
  CHECK(t.values[2] == -INFINITY);
  CHECK(std::isnan(t.values[3]));
  CHECK(t.values[4] == 1);
  CHECK(t.values[5] == INFINITY);
}

TEST_CASE("csv: input errors name file:line:column") {
  CHECK(csv_error("a,b\n1,,\n") == "d.csv:2:3: empty field (field 2, 'b')");
  CHECK(csv_error("1,2\n3,\n") == "d.csv:2:3: empty field (field 2)");
  CHECK(csv_error("1,2\n3, \"\" \n") == "d.csv:2:4: empty field (field 2)");
  CHECK(csv_error("1,2\n3,abc\n") == "d.csv:2:3: non-numeric value \"abc\" (field 2)");
  CHECK(csv_error("x,y\n1,2\n3,  4 5 ,6\n") ==
        "d.csv:3:5: non-numeric value \"4 5\" (field 2, 'y'); values must be separated by commas");
  CHECK(csv_error("1,2\n3,\"abc\"\n") == "d.csv:2:3: non-numeric value \"abc\" (field 2)");
  CHECK(csv_error("1,2\n3," + std::string(50, 'x') + "\n") ==
        "d.csv:2:3: non-numeric value \"" + std::string(40, 'x') + "...\" (field 2)");
  CHECK(csv_error("1,2\n3,a\x01"
                  "b\n") == "d.csv:2:3: non-numeric value \"a\\x01b\" (field 2)");
  CHECK(csv_error("1,2,3\n4,5\n") == "d.csv:2:4: row has 2 fields, expected 3 (as in line 1)");
  CHECK(csv_error("a,b\n1,2\n3,4,5\n") == "d.csv:3:5: row has 3 fields, expected 2 (as in line 1)");
  CHECK(csv_error("1,2\n\n3,4\n") == "d.csv:2:1: empty row");
  CHECK(csv_error("1.0 2.0\n3.0 4.0\n") ==
        "d.csv:2:1: non-numeric value \"3.0 4.0\" (field 1, '1.0 2.0'); values must be separated by commas");
  CHECK(csv_error("a,b\n") == "d.csv: no data rows (the file has only a header row)");
  CHECK(csv_error("\n\n") == "d.csv: no data rows");
  CHECK(csv_error("") == "d.csv: file is empty");
  CHECK(csv_error("\xEF\xBB\xBF") == "d.csv: file is empty");
  CHECK(csv_error("1,\"2\n") == "d.csv:1:3: unterminated quoted field");
  CHECK(csv_error("1,\"2\"x\n") == "d.csv:1:6: text after a quoted field (field 2)");
  // Columns count characters, not bytes.
  CHECK(csv_error("\xC3\xA9,b\n1,\n") == "d.csv:2:3: empty field (field 2, 'b')");
  CHECK(csv_error("1,2\n\"\xC3\xA9\xC3\xA9\",x\n") == "d.csv:2:1: non-numeric value \"\xC3\xA9\xC3\xA9\" (field 1)");
}

TEST_CASE("csv: files: cannot open, empty file, and the same parse as text") {
  try {
    dl::rt::read_csv("/nonexistent/dir/x.csv");
    FAIL("no error");
  } catch (const dl::DataError& e) {
    CHECK(std::string(e.what()) == "/nonexistent/dir/x.csv: cannot open: No such file or directory");
  }
  const std::string empty = temp_file("empty.csv", "");
  CHECK_THROWS_WITH_AS(dl::rt::read_csv(empty), (empty + ": file is empty").c_str(), dl::DataError);
  const std::string dir = std::filesystem::temp_directory_path().string();
  CHECK_THROWS_WITH_AS(dl::rt::read_csv(dir), (dir + ": cannot open: Is a directory").c_str(), dl::DataError);
  const std::string ok = temp_file("ok.csv",
                                   "\xEF\xBB\xBF"
                                   "a,b\r\n1,2\r\n");
  const Table t = dl::rt::read_csv(ok);
  CHECK(t.source == ok);
  CHECK(t.values == std::vector<float>{1, 2});
  CHECK_THROWS_WITH_AS(
      dl::rt::read_csv(temp_file("bad.csv", "1,2\n3,x\n")),
      (std::filesystem::temp_directory_path().string() + "/dl_data_test_bad.csv:2:3: non-numeric value \"x\" (field 2)")
          .c_str(),
      dl::DataError);
}

TEST_CASE("csv: a memory cap refuses large data with the memory needed") {
  std::string text;
  for (int r = 0; r < 100; ++r) text += "1,2,3,4\n";
  dl::rt::ReadOptions cap;
  cap.max_bytes = 1000;
  try {
    read_csv_text(text, "big.csv", cap);
    FAIL("no error");
  } catch (const dl::ResourceError& e) {
    CHECK(std::string(e.what()) ==
          "big.csv: loading needs about 2.3 KB of memory (100 rows x 4 float32 values), over the limit of 1000 bytes");
  }
  cap.max_bytes = 4000;
  CHECK(read_csv_text(text, "big.csv", cap).rows == 100);
}

TEST_CASE("csv: a long single line is parsed without copying it") {
  std::string line;
  for (int k = 0; k < 200000; ++k) line += "0.5,";
  line += "1\n";
  const Table t = csv(line);
  CHECK(t.rows == 1);
  CHECK(t.cols == 200001);
  dl::rt::ReadOptions cap;
  cap.max_bytes = 100000;  // refused before anything is allocated
  CHECK_THROWS_WITH_AS(
      read_csv_text(line, "d.csv", cap),
      "d.csv: loading needs about 781.3 KB of memory (1 row x 200001 float32 values), over the limit of "
      "97.7 KB",
      dl::ResourceError);
  std::string bad = line;
  bad.replace(bad.size() - 1, 1, "x\n");  // "1x": the error quotes only that field
  CHECK(csv_error(line + bad) == "d.csv:2:800001: non-numeric value \"1x\" (field 200001)");
}

// Benchmark, skipped by default:
//   dl_unit_tests -tc='csv: parse speed*' --no-skip
TEST_CASE("csv: parse speed on a 60000 x 785 MNIST-like file" * doctest::skip()) {
  const auto path = (std::filesystem::temp_directory_path() / "dl_data_bench_mnist.csv").string();
  if (!std::filesystem::exists(path)) dl::rt::write_synthetic_csv(path, 60000, 785, 1);
  const double mb = double(std::filesystem::file_size(path)) / (1024.0 * 1024.0);
  // Wall time, and CPU time (fairer on a shared machine); the best of three runs.
  double wall = 1e9, cpu = 1e9;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    const Table t = dl::rt::read_csv(path);
    cpu = std::min(cpu, double(std::clock() - c0) / CLOCKS_PER_SEC);
    wall = std::min(wall, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    CHECK(t.rows == 60000);
    CHECK(t.cols == 785);
  }
  MESSAGE("read_csv 60000 x 785 (" << mb << " MiB): wall " << wall << " s (" << 60000 / wall << " rows/s, " << mb / wall
                                   << " MiB/s), cpu " << cpu << " s (" << 60000 / cpu << " rows/s, " << mb / cpu
                                   << " MiB/s)");
}
