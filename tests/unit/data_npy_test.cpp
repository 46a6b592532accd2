// NumPy readers (runtime/data/npy.cpp, npz.cpp, inflate.cpp: zlib) on the fixtures that
// tests/fixtures/data/gen_data.py writes, plus corrupted and mutated inputs.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "converter/errors.h"
#include "data_test_util.h"
#include "runtime/data/npy_internal.h"
#include "runtime/data/table.h"

using dl::rt::Table;
using dl::test::data::error_of;

namespace {

std::string fixture(const std::string& name) { return std::string(DL_SOURCE_DIR) + "/tests/fixtures/data/" + name; }

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<float> iota(int n, float scale = 1) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) v[k] = float(k) * scale;
  return v;
}

}  // namespace

TEST_CASE("npy: dtypes are converted to float32, rows x cols") {
  Table t = dl::rt::read_npy(fixture("f4_2d.npy"));
  CHECK(t.rows == 3);
  CHECK(t.cols == 4);
  CHECK(t.values == iota(12, 0.5f));
  CHECK(t.line_of_row == std::vector<int64_t>{0, 1, 2});
  CHECK_FALSE(t.csv_lines);
  t = dl::rt::read_npy(fixture("f8_1d.npy"));
  CHECK(t.rows == 3);
  CHECK(t.cols == 1);
  CHECK(t.values == std::vector<float>{0.5f, 1.5f, -2.25f});
  t = dl::rt::read_npy(fixture("i8_2d.npy"));
  CHECK(t.cols == 3);
  CHECK(t.values == std::vector<float>{0, -1, 2, 3, 4, -5});
  CHECK(dl::rt::read_npy(fixture("i4_2d.npy")).values == std::vector<float>{7, -8, 9, 10});
  CHECK(dl::rt::read_npy(fixture("u1_2d.npy")).values == std::vector<float>{0, 255, 128, 1});
  CHECK(dl::rt::read_npy(fixture("b1_1d.npy")).values == std::vector<float>{1, 0, 1});
  CHECK(dl::rt::read_npy(fixture("f2_1d.npy")).values == std::vector<float>{1, -0.5f, 65504, std::ldexp(1.0f, -24)});
}

TEST_CASE("npy: N-D arrays are rows x prod(rest); Fortran order is transposed") {
  Table t = dl::rt::read_npy(fixture("f4_3d.npy"));
  CHECK(t.rows == 2);
  CHECK(t.cols == 12);
  CHECK(t.values == iota(24));
  t = dl::rt::read_npy(fixture("fortran_f4.npy"));
  CHECK(t.rows == 2);
  CHECK(t.cols == 3);
  CHECK(t.values == iota(6));
  t = dl::rt::read_npy(fixture("fortran_3d_f8.npy"));
  CHECK(t.rows == 2);
  CHECK(t.cols == 12);
  CHECK(t.values == iota(24));
}

TEST_CASE("npy: unsupported and malformed files are rejected clearly") {
  const std::string be = fixture("big_endian_f4.npy");
  CHECK(error_of([&] { dl::rt::read_npy(be); }) ==
        be + ": big-endian arrays ('>f4') are not supported; save a little-endian copy, e.g. "
             "np.save(path, a.astype(a.dtype.newbyteorder('<')))");
  const std::string obj = fixture("object.npy");
  CHECK(error_of([&] { dl::rt::read_npy(obj); }) == obj +
                                                        ": object arrays (pickled Python objects) are not supported; "
                                                        "save a numeric array (float32, float64, int or bool)");
  const std::string bytes = slurp(fixture("f4_2d.npy"));
  CHECK(error_of([&] { dl::rt::read_npy_bytes(bytes.substr(0, bytes.size() - 4), "a.npy"); }) ==
        "a.npy: truncated: the header declares shape (3, 4) of '<f4' (48 bytes of data) but only 44 bytes follow");
  CHECK(error_of([&] { dl::rt::read_npy_bytes("1,2,3\n", "a.npy"); }) ==
        "a.npy: not a .npy file (no \\x93NUMPY magic at the start)");
  CHECK(error_of([&] { dl::rt::read_npy_bytes("", "a.npy"); }) == "a.npy: file is empty");
  CHECK(error_of([&] { dl::rt::read_npy_bytes(bytes.substr(0, 30), "a.npy"); }) == "a.npy: truncated .npy header");
  dl::rt::ReadOptions cap;
  cap.max_bytes = 40;
  CHECK(error_of([&] { dl::rt::read_npy_bytes(bytes, "a.npy", cap); }) ==
        "a.npy: loading needs about 72 bytes of memory (12 float32 values), over the limit of 40 bytes");
}

TEST_CASE("npz: x and y entries, stored (savez) and deflated (savez_compressed)") {
  for (const char* name : {"xy.npz", "xy_compressed.npz"}) {
    INFO(name);
    auto [x, y] = dl::rt::read_npz_xy(fixture(name));
    CHECK(x.rows == 4);
    CHECK(x.cols == 3);
    CHECK(x.values == iota(12));
    CHECK(x.source == fixture(name) + "[x.npy]");
    CHECK(y.rows == 4);
    CHECK(y.cols == 1);
    CHECK(y.values == std::vector<float>{0, 1, 2, 1});
  }
  auto [x, y] = dl::rt::read_npz_xy(fixture("dynamic.npz"));
  REQUIRE(x.values.size() == 10000);
  bool same = true;
  for (int64_t k = 0; k < 10000; ++k) same = same && x.values[k] == float(k * k % 251) / 4;
  CHECK(same);
  CHECK(y.values[199] == 199 % 3);
  auto noise = dl::rt::read_npz_xy(fixture("noise.npz"));  // checked against the entry's CRC-32
  CHECK(noise.first.rows == 64);
  CHECK(noise.first.cols == 64);
}

TEST_CASE("npz: missing entries and corrupt archives") {
  const std::string missing = fixture("missing_y.npz");
  CHECK(error_of([&] { dl::rt::read_npz_xy(missing); }) ==
        missing +
            ": has no entry 'y.npy' (entries: x.npy, labels.npy); save the arrays with numpy.savez(path, x=features, "
            "y=targets)");
  CHECK(error_of([&] { dl::rt::read_npz_xy_bytes("1,2\n3,4\n", "d.npz"); }) ==
        "d.npz: not a .npz file (not a ZIP archive); save the arrays with numpy.savez(path, x=features, y=targets)");
  std::string bytes = slurp(fixture("dynamic.npz"));
  bytes[200] = static_cast<char>(bytes[200] ^ 0x55);  // inside x.npy's deflate stream
  const std::string msg = error_of([&] { dl::rt::read_npz_xy_bytes(bytes, "d.npz"); });
  CHECK(msg.rfind("d.npz[x.npy]: ", 0) == 0);
  bytes = slurp(fixture("xy.npz"));
  CHECK(error_of([&] { dl::rt::read_npz_xy_bytes(bytes.substr(0, bytes.size() - 30), "d.npz"); }) ==
        "d.npz: not a valid .npz (ZIP) file: no end of central directory");
}

TEST_CASE("inflate: stored blocks, and a stream that ends early") {
  const std::string payload = "hello, stored block";
  std::string s;
  s += '\x01';  // final block, type 0 (stored)
  s += static_cast<char>(payload.size());
  s += '\0';
  s += static_cast<char>(~payload.size() & 0xff);
  s += '\xff';
  s += payload;
  auto u = [](const std::string& b) { return reinterpret_cast<const unsigned char*>(b.data()); };
  CHECK(dl::rt::data::inflate(u(s), s.size(), payload.size(), "z") == payload);
  CHECK(error_of([&] { dl::rt::data::inflate(u(s), s.size() - 3, payload.size(), "z"); }) ==
        "z: corrupt compressed data (the stream ends early)");
  CHECK(error_of([&] { dl::rt::data::inflate(u(s), s.size(), payload.size() - 1, "z"); }) ==
        "z: corrupt compressed data (more bytes than the ZIP directory declares)");
}

// Mutated inputs (a small, deterministic fuzzer): the readers may only throw dl::Error.
TEST_CASE("data readers: mutated inputs throw input errors, never crash") {
  std::mt19937_64 rng(5);
  const std::vector<std::string> seeds = {slurp(fixture("xy.npz")),
                                          slurp(fixture("xy_compressed.npz")),
                                          slurp(fixture("dynamic.npz")),
                                          slurp(fixture("f4_3d.npy")),
                                          slurp(fixture("fortran_3d_f8.npy")),
                                          std::string("a,\"b\",c\r\n1,2,3\r\n4, \"5\" ,nan\r\n")};
  int errors = 0, runs = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string b = seeds[iter % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !b.empty(); ++e) {
      const size_t at = rng() % b.size();
      switch (rng() % 4) {
        case 0:
          b[at] = static_cast<char>(rng());
          break;
        case 1:
          b[at] = static_cast<char>(b[at] ^ (1 << (rng() % 8)));
          break;
        case 2:
          b.erase(at, 1 + rng() % 8);
          break;
        default:
          b.resize(at);
          break;
      }
    }
    dl::rt::ReadOptions cap;
    cap.max_bytes = 1 << 24;  // a mutated shape must not allocate gigabytes
    try {
      ++runs;
      dl::rt::read_npz_xy_bytes(b, "m.npz", cap);
    } catch (const dl::Error&) {
      ++errors;
    }
    try {
      dl::rt::read_npy_bytes(b, "m.npy", cap);
    } catch (const dl::Error&) {
    }
    try {
      dl::rt::read_csv_text(b, "m.csv", cap);
    } catch (const dl::Error&) {
    }
  }
  CHECK(runs == 3000);
  CHECK(errors > 0);
}
