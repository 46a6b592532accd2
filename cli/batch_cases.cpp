// Reading a batch's cases: a manifest {"cases": [{name, model, data, options, expected,
// kind, source, pair}]} with paths relative to it, or a directory of case folders
// (model.onnx, data.csv|data.npz|data.npy, optional options.json and expected.json).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>

#include "cli/batch_command.h"
#include "cli/json_input.h"
#include "cli/option_bindings.h"
#include "converter/errors.h"
#include "converter/input_file.h"
#include "runtime/train_config.h"

namespace dl::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// What `p` is, following symbolic links. A path that exists but cannot be examined (a
// link loop, a link to nothing, no permission to search its folder) sets `problem`, so
// that it becomes an input error instead of being skipped or ending the batch.
fs::file_type probe(const fs::path& p, std::string& problem) {
  std::error_code ec;
  const fs::file_status st = fs::status(p, ec);
  if (st.type() == fs::file_type::not_found) {
    std::error_code link_ec;
    if (fs::is_symlink(fs::symlink_status(p, link_ec)))
      problem = p.string() + ": a symbolic link to '" + fs::read_symlink(p, link_ec).string() + "', which does not exist";
    return fs::file_type::not_found;
  }
  if (ec) {
    problem = p.string() + ": " + ec.message();
    return fs::file_type::unknown;
  }
  return st.type();
}

bool present(const fs::path& p) {
  std::string problem;
  const fs::file_type t = probe(p, problem);
  if (!problem.empty()) throw ConfigError(problem);
  return t != fs::file_type::not_found;
}

// Control characters in a case name would break the one line per case of the output
// (a newline) or drive the terminal (ESC): they are shown escaped, "\n", "\x1b".
std::string visible_name(const std::string& name) {
  std::string out;
  for (const char ch : name) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c != 0x7f) {
      out += ch;
    } else if (c == '\n' || c == '\t' || c == '\r') {
      out += c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\r";
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

std::string resolve(const fs::path& base, const std::string& p) {
  const fs::path path(p);
  return (path.is_absolute() ? path : base / path).lexically_normal().string();
}

// expected.json: {"fault": bool, "root_causes": [str], "nodes": [str], "notes": str}.
json normalize_expected(const json& e, const std::string& where) {
  if (!e.is_object()) throw ConfigError(where + ": the expected result must be a JSON object");
  if (!e.contains("fault") || !e["fault"].is_boolean())
    throw ConfigError(where + ": 'fault' (true or false) is required");
  json out = {{"fault", e["fault"]}, {"root_causes", json::array()}, {"nodes", json::array()}};
  for (const char* key : {"root_causes", "nodes"}) {
    if (!e.contains(key)) continue;
    if (!e[key].is_array()) throw ConfigError(where + ": '" + key + "' must be an array of strings");
    for (const json& v : e[key]) {
      if (!v.is_string()) throw ConfigError(where + ": '" + key + "' must be an array of strings");
      out[key].push_back(v);
    }
  }
  if (e.contains("notes") && e["notes"].is_string()) out["notes"] = e["notes"];
  return out;
}

// The kind from the expectation (faulty: buggy), or the expectation from the kind
// (buggy: a fault; fixed, healthy: none) when only one is given.
void complete_expectation(CaseSpec& c) {
  if (c.kind.empty() && c.expected.is_object()) c.kind = c.expected["fault"].get<bool>() ? "buggy" : "healthy";
  if (c.expected.is_null() && (c.kind == "buggy" || c.kind == "fixed" || c.kind == "healthy"))
    c.expected = {{"fault", c.kind == "buggy"}, {"root_causes", json::array()}, {"nodes", json::array()}};
}

std::string text_field(const json& c, const char* key, const std::string& where) {
  if (!c.contains(key) || c[key].is_null()) return "";
  if (!c[key].is_string()) throw ConfigError(where + ": '" + key + "' must be a string");
  return c[key].get<std::string>();
}

CaseSpec manifest_case(const json& c, size_t k, const fs::path& base, const std::string& manifest) {
  CaseSpec spec;
  spec.index = k;
  const std::string where = manifest + ": cases[" + std::to_string(k) + "]";
  spec.name = "case " + std::to_string(k);
  try {
    if (!c.is_object()) throw ConfigError(where + ": a case must be a JSON object");
    if (c.contains("name")) spec.name = text_field(c, "name", where);
    const std::string named = manifest + ": case '" + spec.name + "'";
    spec.kind = text_field(c, "kind", named);
    spec.source = text_field(c, "source", named);
    spec.pair = text_field(c, "pair", named);
    spec.split = text_field(c, "split", named);
    const std::string model = text_field(c, "model", named), data = text_field(c, "data", named);
    if (model.empty()) throw ConfigError(named + ": 'model' is required");
    if (data.empty()) throw ConfigError(named + ": 'data' is required");
    spec.options.model = resolve(base, model);
    spec.options.data = resolve(base, data);
    if (c.contains("expected") && c["expected"].is_string()) {
      const std::string path = resolve(base, c["expected"].get<std::string>());
      spec.expected = normalize_expected(read_json_file(path), path);
    } else if (c.contains("expected") && !c["expected"].is_null()) {
      spec.expected = normalize_expected(c["expected"], named + ": expected");
    }
    if (c.contains("options")) apply_case_options(c["options"], named + ": options", spec.options);
  } catch (const Error& e) {
    spec.load_error = e.what();
  }
  complete_expectation(spec);
  return spec;
}

std::vector<CaseSpec> from_manifest(const std::string& path) {
  const json m = read_json_file(path);
  if (!m.is_object() || !m.contains("cases") || !m["cases"].is_array())
    throw ConfigError(path + ": a manifest is a JSON object with a \"cases\" array");
  const fs::path base = fs::path(path).parent_path();
  std::vector<CaseSpec> cases;
  for (size_t k = 0; k < m["cases"].size(); ++k) cases.push_back(manifest_case(m["cases"][k], k, base, path));
  return cases;
}

// `problem`: why the folder could not be examined; the case then does not run.
CaseSpec folder_case(const fs::path& dir, size_t k, const std::string& problem) {
  CaseSpec spec;
  spec.index = k;
  spec.name = dir.filename().string();
  spec.options.model = (dir / "model.onnx").string();
  try {
    if (!problem.empty()) throw ConfigError(problem);
    if (present(dir / "expected.json")) {
      const std::string path = (dir / "expected.json").string();
      const json e = read_json_file(path);
      spec.expected = normalize_expected(e, path);
      if (e.contains("kind") && e["kind"].is_string()) spec.kind = e["kind"].get<std::string>();
    }
    for (const char* name : {"data.csv", "data.npz", "data.npy"})
      if (present(dir / name)) {
        spec.options.data = (dir / name).string();
        break;
      }
    if (spec.options.data.empty())
      throw ConfigError(dir.string() + ": no data file (data.csv, data.npz or data.npy)");
    if (present(dir / "options.json")) {
      const std::string path = (dir / "options.json").string();
      apply_case_options(read_json_file(path), path, spec.options);
    }
  } catch (const Error& e) {
    spec.load_error = e.what();
  }
  complete_expectation(spec);
  return spec;
}

// The sub-folders holding a model.onnx, and the entries that cannot be examined (each
// with its problem): those may be cases, and are reported rather than skipped.
std::vector<CaseSpec> from_directory(const fs::path& dir) {
  std::vector<std::pair<fs::path, std::string>> folders;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path p = it->path();
    std::string problem;
    const fs::file_type t = probe(p, problem);
    if (problem.empty()) {
      if (t != fs::file_type::directory) continue;  // a file: not a case
      if (probe(p / "model.onnx", problem) == fs::file_type::not_found && problem.empty()) continue;  // no model
    }
    folders.emplace_back(p, problem);
  }
  if (ec) throw ConfigError(dir.string() + ": cannot list the directory: " + ec.message());
  std::sort(folders.begin(), folders.end());
  std::vector<CaseSpec> cases;
  for (size_t k = 0; k < folders.size(); ++k) cases.push_back(folder_case(folders[k].first, k, folders[k].second));
  return cases;
}

}  // namespace

std::vector<CaseSpec> load_cases(const std::string& input) {
  std::vector<CaseSpec> cases;
  std::string problem;
  const fs::file_type type = probe(input, problem);
  if (!problem.empty()) throw ConfigError(problem);
  if (type == fs::file_type::not_found) throw ConfigError(input + ": no such manifest or directory");
  if (type == fs::file_type::directory) {
    const fs::path manifest = fs::path(input) / "manifest.json";
    cases = present(manifest) ? from_manifest(manifest.string()) : from_directory(input);
  } else {
    cases = from_manifest(input);
  }
  if (cases.empty())
    throw ConfigError(input + ": no cases (a manifest's \"cases\" is empty, or no sub-folder holds a model.onnx)");
  std::set<std::string> names;
  for (CaseSpec& c : cases) {
    c.name = visible_name(c.name);
    if (!names.insert(c.name).second) throw ConfigError(input + ": two cases are named '" + c.name + "'");
  }
  return cases;
}

void apply_case_options(const json& j, const std::string& where, TrainOptions& o) {
  if (!j.is_object()) throw ConfigError(where + ": train options must be a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    const std::string what = where + ": '" + k + "'";
    if (apply_json_option(k, v, where, o)) continue;  // a row of runtime/option_list.def
    if (k == "set") {
      if (!v.is_object()) throw ConfigError(what + " must be an object {\"rule.key\": value}");
      for (auto s = v.begin(); s != v.end(); ++s) {
        if (!s.value().is_number()) throw ConfigError(what + ": '" + s.key() + "' must be a number");
        std::ostringstream a;
        a.precision(17);
        a << s.key() << "=" << s.value().get<double>();
        o.settings.push_back(a.str());
      }
    } else {
      std::string known;
      for (const rt::OptionSpec& s : rt::all_options()) {
        if (!s.from(rt::kBatch)) continue;
        known += std::string(s.key) + ", ";
        if (s.flag_key() != s.key) known += s.flag_key() + ", ";
      }
      throw ConfigError(what + ": unknown key (known: " + known + "set)");
    }
  }
}

}  // namespace dl::cli
