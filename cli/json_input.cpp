#include "cli/json_input.h"

#include "converter/input_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "converter/errors.h"

namespace dl::cli {
namespace {

// Brackets outside strings are the structure of valid JSON; invalid JSON is left to
// the parser, which rejects it whatever this scan finds.
void check_depth(const std::string& text, const std::string& where) {
  int depth = 0;
  bool in_string = false, escaped = false;
  size_t line = 1, column = 0;
  for (const char c : text) {
    ++column;
    if (c == '\n') ++line, column = 0;
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == ']' || c == '}') --depth;
    else if ((c == '[' || c == '{') && ++depth > kMaxJsonDepth)
      throw ConfigError(where + ":" + std::to_string(line) + ":" + std::to_string(column) + ": JSON nested deeper than " +
                        std::to_string(kMaxJsonDepth) + " levels");
  }
}

}  // namespace

nlohmann::json parse_json_text(const std::string& text, const std::string& where) {
  check_depth(text, where);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for a number like 1e999
    throw ConfigError(where + ": invalid JSON: " + input::escape_bytes(e.what()));
  }
}

nlohmann::json read_json_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw ConfigError(path + ": a directory, not a JSON file");
  // Read once, under the cap, so that pipes work and endless inputs stop (converter/input_file.h).
  const std::string text = input::read_whole_file(
      path, int64_t(kMaxJsonBytes), "the limit of " + input::byte_text(double(kMaxJsonBytes)) + " for a JSON file",
      [&](input::ReadStep, int err) {
        throw ConfigError(path + ": cannot read the file (" + std::strerror(err) + ")");
      },
      [&](const std::string& start) {  // JSON text never holds a raw NUL: /dev/zero is refused at once
        if (start.find('\0') != std::string::npos) throw ConfigError(path + ": invalid JSON: binary data (a NUL byte)");
      });
  return parse_json_text(text, path);
}

}  // namespace dl::cli
