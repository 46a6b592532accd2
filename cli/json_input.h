// JSON documents that arrive from elsewhere (manifests, options.json, expected.json,
// summaries given to merge): read with a size cap, so that an endless input (a FIFO,
// /dev/zero) stops, and parsed with a nesting limit, so that a small file of deeply
// nested arrays cannot make the parser, a copy or a dump use gigabytes.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>

namespace dl::cli {

// Deeper than any document deeplocalize writes or reads (a summary is 6 levels deep).
inline constexpr int kMaxJsonDepth = 64;
// Room for the summary of some 20,000 cases; a cap also for what a 1 MB input may cost.
// Read through converter/input_file.h: pipes work, endless inputs stop at the cap.
inline constexpr size_t kMaxJsonBytes = size_t(64) << 20;

// Parses `text`; ConfigError "WHERE: invalid JSON: ..." or "WHERE:LINE:COLUMN: nested
// deeper than 64 levels".
nlohmann::json parse_json_text(const std::string& text, const std::string& where);

// Reads and parses the file; ConfigError naming it when it cannot be read, is larger
// than kMaxJsonBytes, or is not JSON within the limits.
nlohmann::json read_json_file(const std::string& path);

}  // namespace dl::cli
