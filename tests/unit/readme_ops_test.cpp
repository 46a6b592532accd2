// README.md's operator list is the registry's (runtime::operator_table, which
// `deeplocalize ops` prints): a hand-edited copy drifted once (it said 45 for 44 ops).
// After adding an op, paste `deeplocalize ops` into README.md.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "runtime/registry.h"

TEST_CASE("README.md lists exactly the registered operators") {
  std::ifstream in(std::string(DL_SOURCE_DIR) + "/README.md");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  const std::string want = std::to_string(dl::rt::all_ops().size()) +
                           " operators (`deeplocalize ops` prints this table):\n\n" + dl::rt::operator_table() + "\n";
  INFO("README.md must contain, under '## Supported operators':\n" << want);
  CHECK(text.str().find("## Supported operators\n\n" + want) != std::string::npos);
}
