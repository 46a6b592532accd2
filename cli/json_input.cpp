#include "cli/json_input.h"

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
    throw ConfigError(where + ": invalid JSON: " + e.what());
  }
}

nlohmann::json read_json_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw ConfigError(path + ": a directory, not a JSON file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ConfigError(path + ": cannot read the file" + (errno ? std::string(": ") + std::strerror(errno) : ""));
  std::string text;
  char buf[65536];
  while (f.read(buf, sizeof buf) || f.gcount() > 0) {
    text.append(buf, static_cast<size_t>(f.gcount()));
    if (text.size() > kMaxJsonBytes)
      throw ConfigError(path + ": larger than " + std::to_string(kMaxJsonBytes >> 20) + " MiB: not a JSON document deeplocalize reads");
  }
  if (f.bad()) throw ConfigError(path + ": cannot read the file");
  return parse_json_text(text, path);
}

}  // namespace dl::cli
