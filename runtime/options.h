// The table of training options (runtime/option_list.def) and the one parser every
// source of a value goes through: the command line, the model's metadata, a batch's
// options.json. A value is parsed from its text and range-checked here only, so a bad
// value gets the same message from every source, prefixed by where it came from
// ("--epochs", "m.onnx: model metadata 'deeplocalize.epochs'", "options.json: 'epochs'").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dl::rt {

enum class OptionType {
  kText,     // a string, one of `choices` when given (case-insensitive, stored lower-case)
  kBool,     // true/false (also True/False/1/0); on the command line the value is optional
  kFlag,     // a command-line flag without value; true/false in options.json
  kInteger,  // decimal integer within [lo, hi]
  kNumber,   // finite decimal number within the range
};

// Where an option may be given.
enum OptionSource : unsigned {
  kCommandLine = 1,
  kMetadata = 2,  // the model's metadata_props, "deeplocalize.KEY"
  kBatch = 4,     // options.json, a manifest's "options"
  kBatchCommand = 8,  // an option of the `batch` command (DL_BATCH_OPTION)
  kRun = kCommandLine | kBatch,
  kAll = kCommandLine | kMetadata | kBatch,
};

enum class Bounds { kClosed, kLowOpen, kHighOpen };  // [lo, hi], (lo, hi], [lo, hi)

struct OptionSpec {
  const char* name;  // the member of cli::TrainOptions (an identifier, unique)
  OptionType type;
  unsigned sources;
  const char* flag;  // CLI11 names: "--epochs", "-j,--jobs"
  const char* key;   // "epochs": metadata "deeplocalize.epochs", options.json "epochs"
  double lo, hi;
  Bounds bounds;
  const char* choices;       // "a, b, c" or ""
  const char* label;         // the noun in messages: "epochs must be ..."
  const char* default_text;  // for help and docs
  const char* help;

  bool from(OptionSource s) const { return (sources & s) != 0; }
  // The long flag, which messages name: "--jobs" for "-j,--jobs".
  std::string long_flag() const;
  // The options.json key without the dashes of the flag ("lr", "batch_size").
  std::string flag_key() const;
};

// A parsed value; the member of the option's type is set.
struct OptionValue {
  std::string text;
  bool boolean = false;
  int64_t integer = 0;
  double number = 0;
};

// Stores a parsed value into a setting of the option's type (TrainConfig, TrainOptions).
inline void assign(std::string& to, const OptionValue& v) { to = v.text; }
inline void assign(bool& to, const OptionValue& v) { to = v.boolean; }
inline void assign(int64_t& to, const OptionValue& v) { to = v.integer; }
inline void assign(int& to, const OptionValue& v) { to = static_cast<int>(v.integer); }  // ranges fit
inline void assign(uint64_t& to, const OptionValue& v) { to = static_cast<uint64_t>(v.integer); }  // ranges are >= 0
inline void assign(double& to, const OptionValue& v) { to = v.number; }
template <class T>
void assign(std::optional<T>& to, const OptionValue& v) {
  T t{};
  assign(t, v);
  to = t;
}

// Every row of option_list.def, in its order.
const std::vector<OptionSpec>& all_options();
// The row with this field name; InternalError when there is none (a typo in code).
const OptionSpec& option(const std::string& field);
// The row given in `source` under `key` (options.json also takes flag_key()), or null.
const OptionSpec* find_option(const std::string& key, OptionSource source);

// Parses and checks `text` for `spec`. Throws ConfigError "WHERE: ..." naming the value
// and the range ("epochs must be at least 1 and at most 1000000 (got 0)").
OptionValue parse_option(const OptionSpec& spec, const std::string& text, const std::string& where);

// The accepted range in messages: "at least 1 and at most 1000000" (integers),
// "in (0, 16777216]" (numbers; a parenthesis excludes its end).
std::string range_text(const OptionSpec& spec);
// "[1, 1000000]", "(0, 16777216]", "[0, 1)".
std::string interval(const OptionSpec& spec);
// Short text for a number: integers without exponent up to 2^53, else %g-like shortest.
std::string short_number(double v);
// The accepted values: "integer [1, 1000000]", "number (0, 1e+09]", "sgd, adam, ..."
// (in backticks for Markdown), "true/false", "flag".
std::string value_text(const OptionSpec& spec, bool markdown = false);
// The Markdown table of README.md ("### Training options"): `deeplocalize options`.
std::string options_markdown();

}  // namespace dl::rt
