// Names derived from a batch's whole manifest (every shard computes the same ones): the
// file name of each case's report and the manifest's digest, which merge compares.
#include <cctype>
#include <cstdio>
#include <set>

#include "cli/batch_command.h"

namespace dl::cli {
namespace {

// FNV-1a: stable across runs and machines; it tells manifests apart, it guards
// against no adversary.
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 14695981039346656037ull;
  for (const unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string hex(uint64_t v, int digits) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%0*llx", digits, static_cast<unsigned long long>(v));
  return std::string(buf).substr(0, static_cast<size_t>(digits));
}

bool safe(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'; }

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A file name's stem well under NAME_MAX (255 bytes) with room for the suffixes.
constexpr size_t kMaxStem = 100;

}  // namespace

std::vector<std::string> report_file_names(const std::vector<CaseSpec>& cases) {
  std::vector<std::string> names;
  std::set<std::string> taken;  // lower case: "A.json" and "a.json" are one file on macOS and Windows
  for (const CaseSpec& c : cases) {
    std::string stem;
    for (const char ch : c.name) stem += safe(ch) ? ch : '_';
    if (stem.empty() || stem[0] == '.') stem = "_" + stem;
    if (stem != c.name || stem.size() > kMaxStem) stem = stem.substr(0, kMaxStem) + "-" + hex(fnv1a(c.name), 8);
    while (!taken.insert(lower(stem)).second) stem += "-" + std::to_string(c.index);
    names.push_back(stem + ".json");
  }
  return names;
}

std::string manifest_digest(const std::vector<CaseSpec>& cases) {
  nlohmann::json list = nlohmann::json::array();
  for (const CaseSpec& c : cases) {
    list.push_back({c.name, c.kind, c.source, c.pair, c.expected});
    if (!c.split.empty()) list.back().push_back(c.split);  // manifests without splits keep their digest
  }
  return hex(fnv1a(list.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)), 16);
}

}  // namespace dl::cli
