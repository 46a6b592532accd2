#include "cli/option_bindings.h"

#include <cstring>

namespace dl::cli {
namespace {

void set_option(const rt::OptionSpec& spec, const rt::OptionValue& v, TrainOptions& o) {
#define DL_TRAIN_OPTION(field, ...) \
  if (std::strcmp(spec.name, #field) == 0) return rt::assign(o.field, v);
#define DL_RUN_OPTION(field, ...) \
  if (std::strcmp(spec.name, #field) == 0) return rt::assign(o.field, v);
#include "runtime/option_list.def"
#undef DL_TRAIN_OPTION
#undef DL_RUN_OPTION
  throw InternalError(std::string("option ") + spec.flag + " has no member in TrainOptions");
}

// The text of a JSON value, parsed by the table as the command line's would be.
std::string json_text(const rt::OptionSpec& s, const nlohmann::json& v, const std::string& what) {
  if (v.is_string()) return v.get<std::string>();
  switch (s.type) {
    case rt::OptionType::kText: throw ConfigError(what + " must be a string");
    case rt::OptionType::kBool:
    case rt::OptionType::kFlag:
      if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
      throw ConfigError(what + " must be true or false");
    case rt::OptionType::kInteger:
    case rt::OptionType::kNumber:
      // dump() keeps every digit: 18446744073709551615 is out of range, not -1.
      if (v.is_number()) return v.dump();
      throw ConfigError(what + (s.type == rt::OptionType::kInteger ? " must be an integer" : " must be a number"));
  }
  throw InternalError(what + ": unknown option type");
}

}  // namespace

std::string option_help(const rt::OptionSpec& s) {
  if (s.type == rt::OptionType::kFlag) return s.help;
  return std::string(s.help) + " [" + rt::value_text(s) + "; default: " + s.default_text + "]";
}

void add_table_options(CLI::App* app, TrainOptions& o) {
#define DL_TRAIN_OPTION(field, ...) bind_option(app, rt::option(#field), o.field);
#define DL_RUN_OPTION(field, type, sources, ...) \
  if (rt::sources & rt::kCommandLine) bind_option(app, rt::option(#field), o.field);
#include "runtime/option_list.def"
#undef DL_TRAIN_OPTION
#undef DL_RUN_OPTION
}

bool apply_json_option(const std::string& key, const nlohmann::json& value, const std::string& where,
                       TrainOptions& o) {
  const rt::OptionSpec* spec = rt::find_option(key, rt::kBatch);
  if (!spec) return false;
  const std::string what = where + ": '" + key + "'";
  set_option(*spec, rt::parse_option(*spec, json_text(*spec, value, what), what), o);
  return true;
}

std::vector<std::string> apply_overrides(const TrainOptions& o, rt::TrainConfig& c) {
#define DL_TRAIN_OPTION(field, target, ...) \
  if (o.field) {                            \
    c.target = *o.field;                    \
    c.optimizer.origin.erase(rt::option(#field).key); \
  }
#define DL_RUN_OPTION(...)
#include "runtime/option_list.def"
#undef DL_TRAIN_OPTION
#undef DL_RUN_OPTION
  // The model's settings were made for the model's optimizer: another one chosen here
  // replaces them where it has no such setting, rather than failing on them.
  if (o.optimizer) return rt::drop_settings_not_taken(c.optimizer);
  return {};
}

}  // namespace dl::cli
