// The subcommands of the deeplocalize executable. Each registers its options on the
// CLI11 app; run() dispatches to the one that was parsed and returns its exit code.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <vector>

namespace dl::cli {

struct CommandSet {
  std::vector<std::pair<CLI::App*, std::function<int()>>> commands;
  int run() const;
};

CommandSet register_commands(CLI::App& app);

}  // namespace dl::cli
