// io/: the one atomic writer (atomic_file.h), the text escaper (text_escape.h), and the
// CLI's output path guard built on the same rules (cli/output_guard.h).
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "cli/output_guard.h"
#include "converter/errors.h"
#include "io/atomic_file.h"
#include "io/text_escape.h"

namespace fs = std::filesystem;

namespace {

struct IoDir {
  fs::path path;
  IoDir() {
    static int counter = 0;
    path = fs::temp_directory_path() / ("dl_io_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~IoDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
  size_t entries() const { return static_cast<size_t>(std::distance(fs::directory_iterator(path), fs::directory_iterator())); }
};

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void put(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

}  // namespace

TEST_CASE("atomic file: writes, replaces a regular file, leaves no temporary file") {
  IoDir dir;
  const std::string path = dir.file("r.json");
  dl::io::write_file_atomically(path, "first");
  CHECK(slurp(path) == "first");
  dl::io::write_file_atomically(path, "second, longer");
  CHECK(slurp(path) == "second, longer");
  CHECK(dir.entries() == 1);
}

TEST_CASE("atomic file: the mode honours the umask") {
  IoDir dir;
  const mode_t old = ::umask(027);
  dl::io::write_file_atomically(dir.file("m.txt"), "x");
  ::umask(old);
  struct stat st;
  REQUIRE(::stat(dir.file("m.txt").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0640);
}

TEST_CASE("atomic file: a planted NAME.tmp symlink is never followed") {
  IoDir dir;
  put(dir.file("victim.txt"), "precious");
  fs::create_symlink(dir.file("victim.txt"), dir.file("r.json.tmp"));
  dl::io::write_file_atomically(dir.file("r.json"), "report");
  CHECK(slurp(dir.file("victim.txt")) == "precious");
  CHECK(fs::is_symlink(dir.file("r.json.tmp")));
  CHECK(slurp(dir.file("r.json")) == "report");
}

TEST_CASE("atomic file: symlinks, FIFOs and directories at the target are refused and kept") {
  IoDir dir;
  put(dir.file("victim.txt"), "precious");
  fs::create_symlink(dir.file("victim.txt"), dir.file("link.json"));
  CHECK_THROWS_WITH_AS(dl::io::write_file_atomically(dir.file("link.json"), "x"), doctest::Contains("it is a symlink"),
                       dl::ConfigError);
  CHECK(fs::is_symlink(dir.file("link.json")));
  CHECK(slurp(dir.file("victim.txt")) == "precious");
  REQUIRE(::mkfifo(dir.file("fifo").c_str(), 0600) == 0);
  CHECK_THROWS_WITH_AS(dl::io::write_file_atomically(dir.file("fifo"), "x"), doctest::Contains("it is a FIFO"),
                       dl::ConfigError);
  CHECK(fs::is_fifo(dir.file("fifo")));
  fs::create_directory(dir.file("sub"));
  CHECK_THROWS_AS(dl::io::write_file_atomically(dir.file("sub"), "x"), dl::ConfigError);
  CHECK(fs::is_directory(dir.file("sub")));
  CHECK(dir.entries() == 4);  // victim, link, fifo, sub: no temporary file left
}

TEST_CASE("atomic file: a FIFO appearing at the target while writing is refused at commit") {
  IoDir dir;
  const std::string path = dir.file("late");
  {
    dl::io::AtomicFile f(path);
    f.write("data");
    REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
    CHECK_THROWS_WITH_AS(f.commit(), doctest::Contains("it is a FIFO"), dl::ConfigError);
  }
  CHECK(fs::is_fifo(path));
  CHECK(dir.entries() == 1);
}

TEST_CASE("atomic file: an abandoned or failed write removes its temporary file and keeps the old file") {
  IoDir dir;
  const std::string path = dir.file("out.bin");
  put(path, "old");
  {
    dl::io::AtomicFile f(path);
    f.write("half of a new file");
    CHECK(dir.entries() == 2);
  }  // no commit: e.g. the serializer threw
  CHECK(dir.entries() == 1);
  CHECK(slurp(path) == "old");
  {
    dl::io::AtomicFile f(path);
    CHECK_THROWS_WITH_AS(f.fail("serializer said no"), doctest::Contains("out.bin: cannot write (serializer said no)"),
                         dl::ConfigError);
  }
  CHECK(dir.entries() == 1);
  CHECK_THROWS_WITH_AS(dl::io::write_file_atomically(dir.file("no/such/dir/x"), "x"),
                       doctest::Contains("No such file or directory"), dl::ConfigError);
}

TEST_CASE("atomic file: 4 concurrent writers of one path leave one writer's complete file") {
  IoDir dir;
  const std::string path = dir.file("shared.trace");
  std::vector<std::string> contents;
  for (char c : {'a', 'b', 'c', 'd'}) contents.push_back(std::string(1 << 20, c) + "end");
  for (int round = 0; round < 5; ++round) {
    std::vector<std::thread> writers;
    std::vector<std::string> errors(4);
    for (size_t k = 0; k < 4; ++k)
      writers.emplace_back([&, k] {
        try {
          dl::io::write_file_atomically(path, contents[k]);
        } catch (const std::exception& e) {
          errors[k] = e.what();
        }
      });
    for (auto& t : writers) t.join();
    for (const std::string& e : errors) CHECK(e == "");
    const std::string got = slurp(path);
    CHECK(std::find(contents.begin(), contents.end(), got) != contents.end());
    CHECK(dir.entries() == 1);
  }
}

TEST_CASE("visible text: controls, noncharacters and invalid UTF-8 are written visibly") {
  using dl::io::visible;
  CHECK(visible("/0/Gemm") == "/0/Gemm");
  CHECK(visible("caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80") == "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80");
  CHECK(visible(std::string("\x1b[2J\x07\x00\x7f", 7)) == "\\x1b[2J\\x07\\x00\\x7f");
  CHECK(visible("a\nb\tc\r") == "a\\x0ab\\x09c\\x0d");
  CHECK(dl::io::visible_multiline("a\nb\tc\r") == "a\nb\tc\\x0d");
  CHECK(visible("\xef\xbf\xbe\xef\xbf\xbf") == "\\u{fffe}\\u{ffff}");   // U+FFFE, U+FFFF
  CHECK(visible("\xf4\x8f\xbf\xbf") == "\\u{10ffff}");                 // a noncharacter of plane 16
  CHECK(visible("\xc2\x9b" "31m") == "\\u{009b}31m");                   // the 8-bit CSI
  CHECK(visible("\xe2\x80\xae" "evil") == "\\u{202e}evil");             // right-to-left override
  CHECK(visible("\xff") == "\\xff");                                    // not UTF-8 at all
  CHECK(visible("\xc0\xaf") == "\\xc0\\xaf");                           // overlong '/'
  CHECK(visible("\xed\xa0\x80") == "\\xed\\xa0\\x80");                  // a surrogate
  CHECK(visible("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");         // past U+10FFFF
  CHECK(visible("ab\xe2\x86") == "ab\\xe2\\x86");                       // cut short
  CHECK(visible("\x80x") == "\\x80x");                                  // a stray continuation byte
}

TEST_CASE("xml escape: entities, and nothing XML 1.0 forbids") {
  CHECK(dl::io::xml_escape("a<b>&\"'") == "a&lt;b&gt;&amp;&quot;&apos;");
  CHECK(dl::io::xml_escape(std::string("\x1b\x00\xef\xbf\xbe\xff\n", 7)) == "\\x1b\\x00\\u{fffe}\\xff\n");
}

TEST_CASE("output guard: special files, symlinks, inputs and duplicate outputs are refused") {
  using dl::cli::check_outputs;
  IoDir dir;
  const std::string model = dir.file("m.onnx"), data = dir.file("d.csv");
  put(model, "model");
  put(data, "data");
  const std::vector<dl::cli::InputPath> inputs{{"the model", model}, {"the data", data}};
  const auto refused = [&](const std::vector<dl::cli::OutputPath>& outs, const std::string& part, bool force = false) {
    CHECK_THROWS_WITH_AS(check_outputs(inputs, outs, force), doctest::Contains(part.c_str()), dl::ConfigError);
  };
  check_outputs(inputs, {{"--report", dir.file("r.json"), true}, {"--trace", dir.file("t.trace")}}, false);
  refused({{"--report", model, true}}, "--report " + model + ": it is the same file as the model " + model);
  refused({{"--trace", dir.path.string() + "/./d.csv"}}, "it is the same file as the data");
  fs::create_hard_link(model, dir.file("hard.onnx"));
  refused({{"--save", dir.file("hard.onnx")}}, "it is the same file as the model");
  refused({{"--trace", dir.file("x")}, {"--report", dir.path.string() + "/../" + dir.path.filename().string() + "/x", true}},
          "are the same file");
  refused({{"--json", "-", true}, {"--junit", "/dev/stdout", true}}, "are the same file");
  refused({{"--trace", "-"}}, "cannot be written to a stream");
  refused({{"--save", "/dev/null"}}, "it is a character device");
  refused({{"--report", dir.file("no/dir/r.json"), true}}, "does not exist");
  fs::create_symlink(data, dir.file("link"));
  refused({{"--report", dir.file("link"), true}}, "it is a symlink", true);  // --force does not change that
  // --force: an input or another output may be overwritten on purpose.
  check_outputs(inputs, {{"--save", model}, {"--trace", dir.file("x")}, {"--report", dir.file("x"), true}}, true);
  // A symlinked input is the file it points to.
  CHECK_THROWS_WITH_AS(check_outputs({{"the data", dir.file("link")}}, {{"--report", data, true}}, false),
                       doctest::Contains("the same file as the data"), dl::ConfigError);
  CHECK(dl::cli::stream_target_fd("-") == 1);
  CHECK(dl::cli::stream_target_fd("/dev/stderr") == 2);
  CHECK(dl::cli::stream_target_fd("./-") == -1);
}
