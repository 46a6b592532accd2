// Input readers against hostile inputs (issue 18): sizes a file declares but does not
// hold, streams that never end, pipes and FIFOs that must be read once, text that is
// not text. Memory is measured in a child process (getrusage ru_maxrss) whose address
// space is capped, so that a reader allocating from a declared size fails here with
// bad_alloc instead of taking gigabytes of a shared machine.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <new>
#include <sstream>
#include <string>

#include "analysis/trace_io.h"
#include "cli/batch_command.h"
#include "cli/json_input.h"
#include "converter/import.h"
#include "converter/input_file.h"
#include "data_test_util.h"
#include "runtime/data/dataset.h"
#include "runtime/data/npy_internal.h"
#include "runtime/data/table.h"

#if defined(__SANITIZE_ADDRESS__)
#define DL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DL_ASAN 1
#endif
#endif

using dl::test::data::error_of;

namespace {

constexpr long kMaxGrowthKb = 256 * 1024;  // the bound: 256 MB beyond the model's buffers

std::string bad_input(const std::string& name) { return std::string(DL_SOURCE_DIR) + "/tests/bad_inputs/files/" + name; }
std::string fixture(const std::string& name) { return std::string(DL_SOURCE_DIR) + "/tests/fixtures/data/" + name; }

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct ChildRun {
  std::string message;  // the dl::Error's message, "(no error)", "std::bad_alloc", ...
  long growth_kb = -1;  // growth of the peak resident memory during f
};

// Runs f in a child process under an address-space cap of 1 GB above what it holds.
template <class F>
ChildRun in_child(F f) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
#ifndef DL_ASAN  // ASan reserves terabytes of shadow memory
    long pages = 0;
    if (FILE* statm = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(statm, "%ld", &pages) != 1) pages = 0;
      std::fclose(statm);
    }
    const rlimit cap{rlim_t(pages) * rlim_t(::sysconf(_SC_PAGESIZE)) + (rlim_t(1) << 30), RLIM_INFINITY};
    ::setrlimit(RLIMIT_AS, &cap);
#endif
    rusage before{}, after{};
    ::getrusage(RUSAGE_SELF, &before);
    std::string message = "(no error)";
    try {
      f();
    } catch (const dl::Error& e) {
      message = e.what();
    } catch (const std::bad_alloc&) {
      message = "std::bad_alloc";
    } catch (...) {
      message = "another exception";
    }
    ::getrusage(RUSAGE_SELF, &after);
    const long growth = after.ru_maxrss - before.ru_maxrss;
    if (::write(fds[1], &growth, sizeof growth) != sizeof growth) ::_exit(1);
    if (::write(fds[1], message.data(), message.size()) < 0) ::_exit(1);
    ::_exit(0);
  }
  ::close(fds[1]);
  ChildRun out;
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) got.append(buf, size_t(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (got.size() >= sizeof(long)) {
    std::memcpy(&out.growth_kb, got.data(), sizeof(long));
    out.message = got.substr(sizeof(long));
  } else {
    out.message = "the child died (status " + std::to_string(status) + ")";
  }
  return out;
}

// A pipe whose write end a child process feeds with `content` (repeated forever when
// endless); path() names the read end as a file (/dev/fd/N), as `<(...)` does.
class PipeFeed {
 public:
  PipeFeed(const std::string& content, bool endless) {
    REQUIRE(::pipe(fds_) == 0);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::close(fds_[0]);
      std::string block = content;  // an endless stream is written 64 KiB at a time
      while (endless && block.size() < (size_t(1) << 16)) block += content;
      do {
        for (size_t at = 0; at < block.size();) {
          const ssize_t n = ::write(fds_[1], block.data() + at, block.size() - at);
          if (n <= 0) ::_exit(0);
          at += size_t(n);
        }
      } while (endless);
      ::_exit(0);
    }
    ::close(fds_[1]);
  }
  ~PipeFeed() {
    ::close(fds_[0]);
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  std::string path() const { return "/dev/fd/" + std::to_string(fds_[0]); }

 private:
  int fds_[2] = {-1, -1};
  pid_t pid_ = -1;
};

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string deflate_raw(const std::string& in) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, in.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(&out[0]);
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace

TEST_CASE("npy: a header declaring gigabytes that the file does not hold costs no memory") {
  const std::string path = bad_input("npy_declares_huge.npy");
  const ChildRun run = in_child([&] { dl::rt::read_npy(path); });
  CHECK(run.message == path +
                           ": truncated: the header declares shape (140000000, 5) of '<f4' (2800000000 bytes of "
                           "data) but only 0 bytes follow");
  CHECK(run.growth_kb < kMaxGrowthKb);
}

TEST_CASE("npz: an entry declaring more than DEFLATE can expand is refused before inflating") {
  const std::string path = bad_input("npz_declares_3gb.npz");
  const ChildRun run = in_child([&] { dl::rt::read_npz_xy(path); });
  CHECK(run.message == path +
                           ": not a valid .npz (ZIP) file: entry x.npy declares 3000000000 bytes uncompressed from "
                           "99 compressed, more than DEFLATE can expand (1032:1): a corrupt entry or a ZIP bomb");
  CHECK(run.growth_kb < kMaxGrowthKb);
}

TEST_CASE("npz: a truncated ZIP64 extra field is named as such") {
  const std::string path = bad_input("npz_zip64_truncated.npz");
  CHECK(error_of([&] { dl::rt::read_npz_xy(path); }) ==
        path +
            ": not a valid .npz (ZIP) file: entry x.npy: truncated ZIP64 extra field (8 bytes, too short for the "
            "64-bit sizes and offset its entry defers to it)");
}

TEST_CASE("inflate (zlib): exact sizes, corrupt and short streams, output grown only as data arrives") {
  const std::string payload(100000, 'a');
  const std::string z = deflate_raw(payload);
  auto u = [](const std::string& b) { return reinterpret_cast<const unsigned char*>(b.data()); };
  CHECK(dl::rt::data::inflate(u(z), z.size(), payload.size(), "z") == payload);
  CHECK(error_of([&] { dl::rt::data::inflate(u(z), z.size() / 2, payload.size(), "z"); }) ==
        "z: corrupt compressed data (the stream ends early)");
  CHECK(error_of([&] { dl::rt::data::inflate(u(z), z.size(), payload.size() - 1, "z"); }) ==
        "z: corrupt compressed data (more bytes than the ZIP directory declares)");
  CHECK(error_of([&] { dl::rt::data::inflate(u(z), z.size(), payload.size() + 1, "z"); }) ==
        "z: corrupt compressed data (fewer bytes than the ZIP directory declares)");
  const std::string junk = "\xff\xff\xff\xff junk";
  CHECK(starts_with(error_of([&] { dl::rt::data::inflate(u(junk), junk.size(), 10, "z"); }), "z: corrupt compressed data ("));
  // 100 KB that inflate to 100 KB, declared as 800 MB: the output must not be allocated up front.
  const ChildRun run = in_child([&] { dl::rt::data::inflate(u(z), z.size(), size_t(800) << 20, "z"); });
  CHECK(run.message == "z: corrupt compressed data (fewer bytes than the ZIP directory declares)");
  CHECK(run.growth_kb < kMaxGrowthKb);
}

TEST_CASE("CSV: CR-only line endings, NUL bytes, invalid UTF-8 in messages") {
  const dl::rt::Table t = dl::rt::read_csv_text("a,b\r1,2\r3,4\r\r", "mac.csv");
  CHECK(t.rows == 2);
  CHECK(t.values == std::vector<float>{1, 2, 3, 4});
  CHECK(t.line_of_row == std::vector<int64_t>{2, 3});
  CHECK(error_of([&] { dl::rt::read_csv_text("a,b\r1,2\r3,x\r", "mac.csv"); }) ==
        "mac.csv:3:3: non-numeric value \"x\" (field 2, 'b')");
  CHECK(error_of([&] { dl::rt::read_csv_text(std::string(4096, '\0'), "z.csv"); }) ==
        "z.csv:1:1: a NUL byte: this is binary data, not CSV text");
  const std::string nul_in_field("1,2\n3,4\n5,\0" "6\n", 13);
  CHECK(error_of([&] { dl::rt::read_csv_text(nul_in_field, "z.csv"); }) ==
        "z.csv:3:3: a NUL byte: this is binary data, not CSV text");
  const std::string utf16("\xff\xfe" "a\0,\0b\0\n\0", 10);
  CHECK(error_of([&] { dl::rt::read_csv_text(utf16, "w.csv"); }) ==
        "w.csv: UTF-16 text (it starts with a UTF-16 byte-order mark); save the file as UTF-8");
  CHECK(error_of([&] { dl::rt::read_csv_text("a,b\n1,2\n3,\xff\xfe\x1b[2J\n", "u.csv"); }) ==
        "u.csv:3:3: non-numeric value \"\\xff\\xfe\\x1b[2J\" (field 2, 'b')");
  CHECK(error_of([&] { dl::rt::read_csv_text("a,\xc3\xa9t\xe9\n1,2\n3,x\n", "u.csv"); }) ==
        "u.csv:3:3: non-numeric value \"x\" (field 2, '\xc3\xa9t\\xe9')");
  CHECK(dl::input::escape_bytes("ok \xe2\x82\xac \xed\xa0\x80 \xc2\x9b \xf4\x90\x80\x80") ==
        "ok \xe2\x82\xac \\xed\\xa0\\x80 \\xc2\\x9b \\xf4\\x90\\x80\\x80");
}

TEST_CASE("data from a pipe is read once: CSV, .npy and .npz through /dev/fd") {
  const auto spec = dl::test::data::spec({1}, 1);
  {
    PipeFeed feed("a,b\n1,2\n3,4\n", false);
    const dl::rt::Dataset d = dl::rt::load_dataset(feed.path(), spec, {});
    CHECK(d.n == 2);
    CHECK(d.x == std::vector<float>{1, 3});
  }
  {
    PipeFeed feed(slurp(fixture("f4_2d.npy")), false);  // 3 x 4
    const dl::rt::Dataset d = dl::rt::load_dataset(feed.path(), dl::test::data::spec({3}, 1), {});
    CHECK(d.n == 3);
  }
  {
    PipeFeed feed(slurp(fixture("xy_compressed.npz")), false);
    const dl::rt::Dataset d = dl::rt::load_dataset(feed.path(), dl::test::data::spec({3}, 1), {});
    CHECK(d.n == 4);
  }
}

TEST_CASE("streams that never end stop at the memory cap, binary ones at once") {
  const auto spec = dl::test::data::spec({1}, 1);
  dl::rt::ReadOptions cap;
  cap.max_bytes = 1 << 20;
  {
    PipeFeed feed("1,2\n", true);
    const std::string path = feed.path();
    const ChildRun run = in_child([&] { dl::rt::load_dataset(path, spec, cap); });
    CHECK(run.message == path + ": stopped reading after 1.0 MB: the input does not end within the limit of 1.0 MB");
    CHECK(run.growth_kb < kMaxGrowthKb);
  }
  // No cap at all: /dev/zero and /dev/urandom are refused as binary after 64 KiB.
  for (const char* dev : {"/dev/zero", "/dev/urandom"}) {
    const ChildRun run = in_child([&] { dl::rt::load_dataset(dev, spec, {}); });
    CHECK(starts_with(run.message, std::string(dev) + ":"));
    CHECK(contains(run.message, ": a NUL byte: this is binary data, not CSV text"));
    CHECK(run.growth_kb < kMaxGrowthKb);
  }
}

TEST_CASE("model, trace and JSON readers: pipes work, endless and binary streams stop") {
  const std::string model = bad_input("good.onnx");
  {
    PipeFeed feed(slurp(model), false);
    CHECK(dl::conv::import_model(feed.path()).graph.inputs.size() == 1);
  }
  {
    const ChildRun run = in_child([&] { dl::conv::import_model("/dev/zero"); });
    CHECK(run.message == "/dev/zero: not an ONNX model (the bytes do not parse as an ONNX ModelProto: another format)");
    CHECK(run.growth_kb < kMaxGrowthKb);
  }
  {
    PipeFeed feed("B\n", true);  // a plausible start (field 8, 10 bytes long, again and again) that never ends
    const std::string path = feed.path();
    dl::conv::ImportOptions options;
    options.max_file_bytes = 4 << 20;
    const ChildRun run = in_child([&] { dl::conv::import_model(path, options); });
    CHECK(run.message ==
          path + ": stopped reading after 4.0 MB: the input does not end within the limit of 4.0 MB (raise it with --max-memory)");
    CHECK(run.growth_kb < kMaxGrowthKb);
  }
  {
    const ChildRun run = in_child([&] { dl::an::read_trace("/dev/zero"); });
    CHECK(run.message == "/dev/zero: not a deeplocalize trace (the file does not start with \"DLTRACE \")");
    CHECK(run.growth_kb < kMaxGrowthKb);
  }
  {
    const ChildRun run = in_child([&] { dl::cli::read_json_file("/dev/zero"); });
    CHECK(run.message == "/dev/zero: invalid JSON: binary data (a NUL byte)");
    CHECK(run.growth_kb < kMaxGrowthKb);
  }
  {
    PipeFeed feed("{\"cases\": []}", false);
    CHECK(dl::cli::read_json_file(feed.path()).contains("cases"));
  }
  {
    PipeFeed feed("[", true);
    const std::string path = feed.path();
    const ChildRun run = in_child([&] { dl::cli::read_json_file(path); });
    CHECK(starts_with(run.message, path + ": stopped reading after 64.0 MB"));
  }
}

TEST_CASE("npz: an entry whose bytes do not match its CRC-32 is corrupt") {
  for (const char* name : {"xy.npz", "xy_compressed.npz"}) {
    INFO(name);
    std::string bytes = slurp(fixture(name));
    const std::string good = name;
    if (good == "xy.npz") {
      const size_t npy = bytes.find("\x93NUMPY");
      REQUIRE(npy != std::string::npos);
      bytes[npy + 128 + 5] = static_cast<char>(bytes[npy + 128 + 5] ^ 0x01);  // a value of x, not its header
    } else {
      bytes[16] = static_cast<char>(bytes[16] ^ 0x01);  // the CRC-32 field of x.npy's local header is not read
      const size_t cd = bytes.find("PK\x01\x02");
      REQUIRE(cd != std::string::npos);
      bytes[cd + 16] = static_cast<char>(bytes[cd + 16] ^ 0x01);  // the central directory's CRC-32 of x.npy
    }
    CHECK(error_of([&] { dl::rt::read_npz_xy_bytes(bytes, "c.npz"); }) == "c.npz[x.npy]: CRC mismatch: the entry is corrupt");
  }
}
