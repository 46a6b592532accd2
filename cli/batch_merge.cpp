// Merging shard summaries. Each summary is checked on its own first (check_summary);
// then the shards must be of one batch: the same deeplocalize version, detector,
// manifest, manifest size and batch options, distinct shards of one count, and no case
// in two of them. The merged summary is scored from its records, like one run.
#include <algorithm>
#include <map>

#include "cli/batch_scoring.h"
#include "converter/errors.h"

namespace dl::cli {
namespace {

using nlohmann::json;

std::string shown(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

}  // namespace

json merge_summaries(const std::vector<json>& summaries, const std::vector<std::string>& files, uint64_t& missing) {
  if (summaries.empty()) throw ConfigError("merge: no summaries given");
  if (files.size() != summaries.size()) throw InternalError("merge: one file name per summary");
  for (size_t k = 0; k < summaries.size(); ++k) check_summary(summaries[k], files[k]);
  const json& first = summaries.front();
  std::map<uint64_t, size_t> shard_file;  // shard index -> summary
  std::map<uint64_t, std::pair<json, size_t>> by_index;
  std::map<std::string, size_t> name_file;
  double wall = 0;
  for (size_t k = 0; k < summaries.size(); ++k) {
    const json& s = summaries[k];
    const std::string& file = files[k];
    // "version" first: another version may write the other fields differently.
    for (const char* key : {"version", "detector", "manifest", "total_cases", "options"})
      if (s[key] != first[key])
        throw ConfigError(file + ": " + key + " " + shown(s[key]) + " differs from " + shown(first[key]) + " in " +
                          files.front() + ": not shards of one batch");
    const json& shard = s["shard"];
    if (shard.is_null() && summaries.size() > 1)
      throw ConfigError(file + ": shard: null (an unsharded run): it holds every case, merge it with nothing");
    if (!shard.is_null()) {
      if (shard["count"] != first["shard"]["count"])
        throw ConfigError(file + ": shard.count " + shown(shard["count"]) + " differs from " +
                          shown(first["shard"]["count"]) + " in " + files.front());
      const auto [at, fresh] = shard_file.emplace(shard["index"].get<uint64_t>(), k);
      if (!fresh)
        throw ConfigError(file + ": shard.index " + shown(shard["index"]) + ": the same shard as " + files[at->second]);
    }
    for (const json& c : s["cases"]) {
      const uint64_t index = c["index"].get<uint64_t>();
      if (const auto [at, fresh] = by_index.emplace(index, std::make_pair(c, k)); !fresh)
        throw ConfigError(file + ": case " + std::to_string(index) + " ('" + c["name"].get<std::string>() +
                          "') is also in " + files[at->second.second] + " (the same shard twice?)");
      if (const auto [at, fresh] = name_file.emplace(c["name"].get<std::string>(), k); !fresh)
        throw ConfigError(file + ": case name " + shown(c["name"]) + " is also in " + files[at->second] +
                          " under another index");
    }
    wall = std::max(wall, s["wall_s"].get<double>());
  }
  json cases = json::array();
  for (auto& [index, c] : by_index) cases.push_back(std::move(c.first));
  SummaryInfo info;
  info.input = first["input"].get<std::string>();
  info.detector = first["detector"].get<std::string>();
  info.total_cases = first["total_cases"].get<uint64_t>();
  info.manifest = first["manifest"].get<std::string>();
  info.options = first["options"];
  info.wall_s = wall;
  missing = info.total_cases - cases.size();  // check_summary: every index is below total_cases
  return make_summary(cases, info);
}

}  // namespace dl::cli
