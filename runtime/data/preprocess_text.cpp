// The preprocessing record (metadata JSON), its sentences and its NumPy code (preprocess.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "converter/errors.h"
#include "runtime/data/preprocess.h"

namespace dl::rt {
namespace {

using nlohmann::json;
using Features = Preprocessing::Features;

constexpr int64_t kMaxMappedId = int64_t(1) << 24;  // every id up to here is exact as a float
constexpr size_t kListedIds = 10;                   // longer maps are shortened in sentences and code

// The shortest decimal that reads back as the same float ("0.1", "3", "1e+30").
std::string float_text(float v) {
  char buf[32];
  for (int digits = 6; digits <= 9; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, double(v));
    if (std::strtof(buf, nullptr) == v) break;
  }
  return buf;
}

// A statistic for a sentence: "152.1", "77.0", "0.0123".
std::string rounded(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, std::fabs(v) >= 100 ? "%.1f" : "%.3g", v);
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string joined(const std::vector<std::string>& items, const std::string& sep) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : sep) + i;
  return s;
}

// ---- reading -----------------------------------------------------------------------------

struct Reader {
  const std::string& where;

  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    throw ModelError(where + ": field '" + field + "' " + problem);
  }
  float finite_float(const json& v, const std::string& field) const {
    if (!v.is_number()) fail(field, "must be a number, got " + v.dump());
    const auto f = static_cast<float>(v.get<double>());
    if (!std::isfinite(f)) fail(field, "must be a finite float, got " + v.dump());
    return f;
  }
  float scale(const json& v, const std::string& field) const {
    const float f = finite_float(v, field);
    if (f == 0) fail(field, "must not be 0 (a zero scale erases the values)");
    return f;
  }
  std::vector<float> floats(const json& v, const std::string& field, bool scales) const {
    if (!v.is_array() || v.empty()) fail(field, "must be a non-empty array of numbers");
    std::vector<float> out;
    out.reserve(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string item = field + "[" + std::to_string(i) + "]";
      out.push_back(scales ? scale(v[i], item) : finite_float(v[i], item));
    }
    return out;
  }
  int64_t integer(const json& v, const std::string& field, int64_t max) const {
    if (!v.is_number_integer()) fail(field, "must be an integer, got " + v.dump());
    if (v.is_number_unsigned() ? v.get<uint64_t>() > uint64_t(max) : (v.get<int64_t>() < 0 || v.get<int64_t>() > max))
      fail(field, "must be in 0.." + std::to_string(max) + ", got " + v.dump());
    return v.get<int64_t>();
  }
};

// ---- NumPy code ----------------------------------------------------------------------------

// `line` with NAME replaced by each split's array, one line per split.
std::string per_split(const std::string& prefix, const std::string& line) {
  std::string out;
  for (const char* split : {"_train", "_val", "_test"}) {
    std::string l = line;
    for (size_t at; (at = l.find("NAME")) != std::string::npos;) l.replace(at, 4, prefix + split);
    out += l + "\n";
  }
  return out;
}

std::string label_map_code(std::vector<std::pair<float, int64_t>> map) {
  std::sort(map.begin(), map.end());
  std::vector<std::string> from, to, pairs;
  bool positions = true;  // new id == position among the sorted ids (what fit_labels makes)
  for (size_t i = 0; i < map.size(); ++i) {
    from.push_back(float_text(map[i].first));
    to.push_back(std::to_string(map[i].second));
    pairs.push_back(from.back() + ": " + to.back());
    positions = positions && map[i].second == int64_t(i);
  }
  std::string code = "# remap the class ids (y holds one class id per row); ids not in the map stay as they are\n";
  if (map.size() <= kListedIds) {
    code += "label_map = {" + joined(pairs, ", ") + "}\n";
    code += "remap = np.vectorize(lambda v: label_map.get(v, v))\n";
  } else {
    code += "ids = np.array([" + joined(from, ", ") + "])\n";
    if (!positions) code += "new_ids = np.array([" + joined(to, ", ") + "])\n";
    code += "def remap(y):\n";
    code += "    pos = np.searchsorted(ids, y).clip(max=len(ids) - 1)\n";
    code += std::string("    return np.where(ids[pos] == y, ") + (positions ? "pos" : "new_ids[pos]") + ", y)\n";
  }
  return code + per_split("y", "NAME = remap(NAME)");
}

}  // namespace

std::string Preprocessing::to_json() const {
  json j = json::object();
  auto doubles = [](const std::vector<float>& v) {
    json a = json::array();
    for (float f : v) a.push_back(double(f));
    return a;
  };
  if (features != Features::kNone) {
    j["features"] = features == Features::kStandardize ? "standardize" : "minmax";
    j["feature_offset"] = doubles(feature_offset);
    j["feature_scale"] = doubles(feature_scale);
  }
  if (targets) {
    j["target_offset"] = double(target_offset);
    j["target_scale"] = double(target_scale);
  }
  if (!label_map.empty()) {
    json a = json::array();
    for (const auto& [from, to] : label_map) a.push_back(json::array({double(from), to}));
    j["label_map"] = a;
  }
  if (fit_rows > 0) j["fit_rows"] = fit_rows;
  return j.dump();
}

Preprocessing Preprocessing::from_json(const std::string& text, const std::string& where) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw ModelError(where + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object()) throw ModelError(where + ": must be a JSON object, got " + j.dump());
  const Reader in{where};
  static const std::set<std::string> known = {"features",      "feature_offset", "feature_scale", "target_offset",
                                              "target_scale",  "label_map",      "fit_rows"};
  for (const auto& item : j.items())
    if (!known.count(item.key())) in.fail(item.key(), "is unknown (a step this version cannot apply)");
  Preprocessing p;
  if (j.contains("features")) {
    const json& f = j["features"];
    if (f == "standardize") p.features = Features::kStandardize;
    else if (f == "minmax") p.features = Features::kMinMax;
    else in.fail("features", "must be \"standardize\" or \"minmax\", got " + f.dump());
    for (const char* key : {"feature_offset", "feature_scale"})
      if (!j.contains(key)) in.fail(key, "is missing (features is " + f.dump() + ")");
    p.feature_offset = in.floats(j["feature_offset"], "feature_offset", false);
    p.feature_scale = in.floats(j["feature_scale"], "feature_scale", true);
    if (p.feature_offset.size() != p.feature_scale.size())
      in.fail("feature_scale", "has " + std::to_string(p.feature_scale.size()) + " values but feature_offset has " +
                                   std::to_string(p.feature_offset.size()));
  } else {
    for (const char* key : {"feature_offset", "feature_scale"})
      if (j.contains(key)) in.fail(key, "needs a 'features' method");
  }
  if (j.contains("target_offset") || j.contains("target_scale")) {
    for (const char* key : {"target_offset", "target_scale"})
      if (!j.contains(key)) in.fail(key, "is missing (target scaling needs an offset and a scale)");
    p.targets = true;
    p.target_offset = in.finite_float(j["target_offset"], "target_offset");
    p.target_scale = in.scale(j["target_scale"], "target_scale");
  }
  if (j.contains("label_map")) {
    const json& m = j["label_map"];
    if (!m.is_array()) in.fail("label_map", "must be an array of [from, to] pairs");
    std::set<float> seen;
    for (size_t i = 0; i < m.size(); ++i) {
      const std::string item = "label_map[" + std::to_string(i) + "]";
      if (!m[i].is_array() || m[i].size() != 2) in.fail(item, "must be a [from, to] pair, got " + m[i].dump());
      const float from = in.finite_float(m[i][0], item + "[0]");
      if (!seen.insert(from).second) in.fail(item, "maps class id " + float_text(from) + " a second time");
      p.label_map.emplace_back(from, in.integer(m[i][1], item + "[1]", kMaxMappedId));
    }
  }
  if (j.contains("fit_rows")) p.fit_rows = in.integer(j["fit_rows"], "fit_rows", std::numeric_limits<int64_t>::max());
  return p;
}

Preprocessing Preprocessing::from_metadata(const std::map<std::string, std::string>& metadata,
                                           const std::string& model_path) {
  const auto it = metadata.find(kPreprocessingKey);
  if (it == metadata.end()) return {};
  return from_json(it->second, model_path + ": metadata " + kPreprocessingKey);
}

std::vector<std::string> Preprocessing::describe() const {
  std::vector<std::string> lines;
  const std::string rows = fit_rows > 0 ? "the " + std::to_string(fit_rows) + " training rows" : "the training rows";
  const std::string n = std::to_string(feature_offset.size());
  const std::string values = n + " input " + (feature_offset.size() == 1 ? "feature" : "features");
  if (features == Features::kStandardize) lines.push_back("standardise the " + values + " (mean and std of " + rows + ")");
  if (features == Features::kMinMax)
    lines.push_back("min-max scale the " + values + " to [0, 1] (min and max of " + rows + ")");
  if (targets)
    lines.push_back("scale the regression targets (mean " + rounded(target_offset) + ", std " +
                    rounded(1.0 / double(target_scale)) + ")");
  if (!label_map.empty()) {
    std::vector<std::string> from, to;
    for (const auto& [f, t] : label_map) from.push_back(float_text(f)), to.push_back(std::to_string(t));
    if (label_map.size() > kListedIds) {
      const size_t k = label_map.size();
      from = {from[0], from[1], from[2], "...", from[k - 1]};
      to = {to[0], to[1], to[2], "...", to[k - 1]};
    }
    lines.push_back("map class ids " + joined(from, ", ") + " to " + joined(to, ", "));
  }
  return lines;
}

std::string Preprocessing::python_code() const {
  std::string code = "import numpy as np\n";
  if (features == Features::kStandardize) {
    code += "# standardise the inputs with the training rows' mean and std (per input value)\n";
    code += "mean = x_train.mean(axis=0); std = x_train.std(axis=0); std[std == 0] = 1\n";
    code += per_split("x", "NAME = (NAME - mean) / std");
  } else if (features == Features::kMinMax) {
    code += "# min-max scale the inputs to [0, 1] with the training rows' min and max (per input value)\n";
    code += "lo = x_train.min(axis=0); span = x_train.max(axis=0) - lo; span[span == 0] = 1\n";
    code += per_split("x", "NAME = (NAME - lo) / span");
  }
  if (targets) {
    code += "# scale the regression targets (one mean and std over all target values; here mean " +
            rounded(target_offset) + ", std " + rounded(1.0 / double(target_scale)) + ")\n";
    code += "y_mean = y_train.mean(); y_std = y_train.std() or 1.0\n";
    code += per_split("y", "NAME = (NAME - y_mean) / y_std");
    code += "# predictions in the original units: y_pred * y_std + y_mean\n";
  }
  if (!label_map.empty()) code += label_map_code(label_map);
  return code;
}

}  // namespace dl::rt
