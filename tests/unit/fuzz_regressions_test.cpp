// Replays the inputs that once crashed, leaked or hung a fuzz target
// (tests/fuzz/regressions/<target>/<name>) through the same entry function the libFuzzer
// binary calls (tests/fuzz/fuzz_entries.h), so a fixed bug stays fixed in every build,
// sanitized or not. An entry aborts on a bug, failing the whole test binary loudly.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_entries.h"

namespace fs = std::filesystem;

namespace {

std::string read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

int replay(const std::string& target, const std::string& bytes) {
  dl::fuzz::Entry entry = dl::fuzz::entry_named(target);
  REQUIRE(static_cast<bool>(entry));
  return entry(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

}  // namespace

TEST_CASE("fuzz regressions: every saved input runs cleanly through its target") {
  const fs::path root = fs::path(DL_SOURCE_DIR) / "tests" / "fuzz" / "regressions";
  REQUIRE(fs::is_directory(root));
  int replayed = 0;
  for (const fs::directory_entry& d : fs::directory_iterator(root)) {
    if (!d.is_directory()) continue;
    const std::string target = d.path().filename().string();
    INFO("regressions folder: " << target);
    CHECK_MESSAGE(static_cast<bool>(dl::fuzz::entry_named(target)), "no fuzz target named '" << target << "'");
    if (!dl::fuzz::entry_named(target)) continue;
    std::vector<fs::path> inputs;
    for (const fs::directory_entry& f : fs::directory_iterator(d.path()))
      if (f.is_regular_file()) inputs.push_back(f.path());
    std::sort(inputs.begin(), inputs.end());
    for (const fs::path& input : inputs) {
      INFO("input: " << input.string());
      CHECK(replay(target, read_bytes(input)) == 0);
      ++replayed;
    }
  }
  MESSAGE(replayed << " fuzz regression inputs replayed");
}

TEST_CASE("fuzz entries: empty, seed-like and garbage inputs are handled") {
  const fs::path src(DL_SOURCE_DIR);
  for (const std::string& target : dl::fuzz::target_names()) {
    INFO("target: " << target);
    CHECK(replay(target, "") == 0);
    CHECK(replay(target, std::string("\x00\xff\x7f garbage \n,,\"", 15)) == 0);
  }
  CHECK(replay("onnx", read_bytes(src / "models" / "demo" / "model.onnx")) == 0);
  CHECK(replay("csv", read_bytes(src / "models" / "demo" / "data.csv")) == 0);
  CHECK(replay("npy", read_bytes(src / "tests" / "fixtures" / "data" / "xy_compressed.npz")) == 0);
  CHECK(replay("npy", read_bytes(src / "tests" / "fixtures" / "data" / "f4_2d.npy")) == 0);
  CHECK(replay("manifest", "{\"cases\": [{\"name\": \"a\", \"model\": \"m.onnx\", \"data\": \"d.csv\", "
                           "\"options\": {\"epochs\": 2, \"set\": {\"x.y\": 1}}, \"expected\": {\"fault\": true}}]}") == 0);
}
