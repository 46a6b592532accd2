// The option table (runtime/option_list.def) bound to cli::TrainOptions: the CLI11
// options of `train` (and the shared ones of `batch`), options.json values, and the
// command-line overrides of the model's training configuration.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <type_traits>
#include <vector>

#include "cli/train_command.h"
#include "converter/errors.h"
#include "runtime/options.h"
#include "runtime/train_config.h"

namespace dl::cli {

// "Epochs [integer [1, 1000000]; default 10]": the table's help for --help.
std::string option_help(const rt::OptionSpec& spec);

// Adds `spec` to `app`, parsed and checked by rt::parse_option into `field` (a member of
// TrainOptions or BatchOptions of the row's type). A bad value is a CLI::ValidationError
// (exit 2) with the table's message, e.g. "--epochs: epochs must be at least 1 ...".
template <class T>
CLI::Option* bind_option(CLI::App* app, const rt::OptionSpec& spec, T& field) {
  if constexpr (std::is_same_v<T, bool>) {
    if (spec.type == rt::OptionType::kFlag) return app->add_flag(spec.flag, field, option_help(spec));
  }
  CLI::Option* opt = app->add_option_function<std::string>(
      spec.flag,
      [&spec, &field](const std::string& text) {
        try {
          rt::assign(field, rt::parse_option(spec, text, spec.long_flag()));
        } catch (const Error& e) {
          throw CLI::ValidationError(e.what());
        }
      },
      option_help(spec));
  if (spec.type == rt::OptionType::kBool) opt->expected(0, 1)->default_str("true");
  opt->type_name(spec.type == rt::OptionType::kInteger  ? "N"
                 : spec.type == rt::OptionType::kNumber ? "X"
                 : spec.type == rt::OptionType::kBool   ? "BOOL"
                                                        : "TEXT");
  return opt;
}

// Every row given on the command line, bound to its TrainOptions member.
void add_table_options(CLI::App* app, TrainOptions& options);

// Sets `key` of a JSON options object (options.json) through the table: numbers and
// booleans may also be strings, as in the model metadata. Returns false when no row has
// that key. Wrong types and bad values are ConfigErrors naming `where`.
bool apply_json_option(const std::string& key, const nlohmann::json& value, const std::string& where,
                       TrainOptions& options);

// The model's training configuration overridden by every setting given in `options`.
// With an optimizer given, the model's settings that optimizer does not take (momentum,
// nesterov) are dropped; returns a note for each (rt::drop_settings_not_taken).
std::vector<std::string> apply_overrides(const TrainOptions& options, rt::TrainConfig& config);

}  // namespace dl::cli
