// deeplocalize entry point: parses the command line and maps every error kind to the
// contract's exit code in one place.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <iostream>

#include "cli/commands.h"
#include "cli/output.h"
#include "converter/errors.h"
#include "io/text_escape.h"

int main(int argc, char** argv) {
  CLI::App app{"deeplocalize: find and explain faults in deep-learning models while they train"};
  app.require_subcommand(1);
  app.set_version_flag("--version", DL_VERSION);
  dl::cli::CommandSet commands = dl::cli::register_commands(app);
  // A report, help text or version lost to a full disk or a closed pipe is an error, not exit 0.
  dl::cli::StdoutCheck out;
  try {
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      const int code = app.exit(e);
      out.finish();
      return code == 0 ? 0 : 2;
    }
    const int code = commands.run();
    out.finish();
    return code;
  } catch (const dl::Error& e) {
    // Messages quote names from the input files: shown visibly, never as terminal escapes.
    std::cerr << "deeplocalize: error: " << dl::io::visible_multiline(e.what()) << "\n";
    return dl::exit_code_for(e.kind());
  } catch (const std::bad_alloc&) {
    std::cerr << "deeplocalize: error: out of memory\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "deeplocalize: internal error: " << dl::io::visible_multiline(e.what()) << "\n";
    return 3;
  }
}
