// The option table (runtime/option_list.def): every source of a value (command line,
// model metadata, batch options.json) accepts and rejects the same values with the same
// message, ranges are readable, and README's table is the table.
#include <doctest/doctest.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

#include "analysis/rule.h"
#include "cli/batch_command.h"
#include "cli/train_command.h"
#include "converter/errors.h"
#include "runtime/options.h"
#include "runtime/train_config.h"

using namespace dl;
using nlohmann::json;

namespace {

// The message of the error `fn` throws, or "" when it throws none.
template <class Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

std::string from_cli(const rt::OptionSpec& s, const std::string& text) {
  CLI::App app;
  cli::TrainOptions o;
  cli::add_train_command(app, o);
  std::vector<std::string> args = {text, s.flag, "d.csv", "m.onnx", "train"};  // CLI11 takes them reversed
  return error_of([&] { app.parse(args); });
}

std::string from_batch_cli(const rt::OptionSpec& s, const std::string& text) {
  CLI::App app;
  cli::BatchOptions o;
  cli::add_batch_command(app, o);
  std::vector<std::string> args = {text, s.long_flag(), "cases/", "batch"};
  return error_of([&] { app.parse(args); });
}

std::string from_metadata(const rt::OptionSpec& s, const std::string& text) {
  return error_of([&] { rt::config_from_metadata({{"deeplocalize." + std::string(s.key), text}}, "m.onnx"); });
}

std::string from_batch(const std::string& key, const json& value) {
  cli::TrainOptions o;
  return error_of([&] { cli::apply_case_options(json{{key, value}}, "x/options.json", o); });
}

// The message without the prefix that names the source; "" when it lacks that prefix.
std::string core(const std::string& message, const std::string& prefix) {
  return message.compare(0, prefix.size(), prefix) == 0 ? message.substr(prefix.size()) : "(no prefix " + prefix + ") " + message;
}

std::vector<std::string> bad_texts(const rt::OptionSpec& s) {
  const std::string below = rt::short_number(s.bounds == rt::Bounds::kLowOpen ? s.lo : s.lo - 1);
  const std::string above = rt::short_number(s.bounds == rt::Bounds::kHighOpen ? s.hi : s.hi * 2 + 1);
  switch (s.type) {
    case rt::OptionType::kInteger: return {below, above, "1.5", "ten", "", "9223372036854775808", "-99999999999999999999"};
    case rt::OptionType::kNumber: return {below, above, "nan", "inf", "-inf", "1e999", "x", ""};
    // Free text (no choices, e.g. --frozen's parameter names) is checked where it is used.
    case rt::OptionType::kText: return *s.choices ? std::vector<std::string>{"nonsense"} : std::vector<std::string>{};
    default: return {"maybe", "yes"};
  }
}

}  // namespace

TEST_CASE("options: every source gives the same message for the same bad value") {
  int compared = 0;
  for (const rt::OptionSpec& s : rt::all_options()) {
    for (const std::string& text : bad_texts(s)) {
      CAPTURE(s.flag);
      CAPTURE(text);
      std::vector<std::string> cores;
      if (s.from(rt::kCommandLine) && s.type != rt::OptionType::kFlag)
        cores.push_back(core(from_cli(s, text), s.long_flag() + ": "));
      if (s.from(rt::kBatchCommand)) cores.push_back(core(from_batch_cli(s, text), s.long_flag() + ": "));
      if (s.from(rt::kMetadata))
        cores.push_back(core(from_metadata(s, text), "m.onnx: model metadata 'deeplocalize." + std::string(s.key) + "': "));
      if (s.from(rt::kBatch)) {
        cores.push_back(core(from_batch(s.key, text), "x/options.json: '" + std::string(s.key) + "': "));
        cores.push_back(core(from_batch(s.flag_key(), text), "x/options.json: '" + s.flag_key() + "': "));
        // A number written as a JSON number gets the message of its text.
        const bool json_number = (s.type == rt::OptionType::kInteger || s.type == rt::OptionType::kNumber) &&
                                 json::accept(text) && json::parse(text).is_number() && json::parse(text).dump() == text;
        if (json_number) cores.push_back(core(from_batch(s.key, json::parse(text)), "x/options.json: '" + std::string(s.key) + "': "));
      }
      REQUIRE(!cores.empty());
      CHECK(!cores[0].empty());
      CHECK(cores[0].find("(no prefix") == std::string::npos);
      for (const std::string& c : cores) CHECK(c == cores[0]);
      ++compared;
    }
  }
  CHECK(compared > 50);
}

TEST_CASE("options: the ends of every range are accepted by every source") {
  for (const rt::OptionSpec& s : rt::all_options()) {
    if (s.type != rt::OptionType::kInteger && s.type != rt::OptionType::kNumber) continue;
    std::vector<std::string> good = {rt::short_number((s.lo + s.hi) / 2)};
    if (s.type == rt::OptionType::kInteger) good = {rt::short_number(s.lo), rt::short_number(s.hi)};
    if (s.bounds != rt::Bounds::kLowOpen && s.type == rt::OptionType::kNumber) good.push_back(rt::short_number(s.lo));
    if (s.bounds != rt::Bounds::kHighOpen && s.type == rt::OptionType::kNumber) good.push_back(rt::short_number(s.hi));
    for (const std::string& text : good) {
      CAPTURE(s.flag);
      CAPTURE(text);
      if (s.from(rt::kCommandLine)) CHECK(from_cli(s, text) == "");
      if (s.from(rt::kBatchCommand)) CHECK(from_batch_cli(s, text) == "");
      if (s.from(rt::kMetadata)) CHECK(from_metadata(s, text) == "");
      if (s.from(rt::kBatch)) CHECK(from_batch(s.key, json::parse(text)) == "");
    }
  }
}

TEST_CASE("options: the values of issue 18 are exit-2 errors naming the option, key and file") {
  CHECK(from_cli(rt::option("epochs"), "9223372036854775807") ==
        "--epochs: epochs must be at least 1 and at most 1000000 (got 9223372036854775807)");
  CHECK(from_cli(rt::option("epochs"), "1000000000000") ==
        "--epochs: epochs must be at least 1 and at most 1000000 (got 1000000000000)");
  // nlohmann keeps 2^64 - 1 as an unsigned number; it used to wrap to -1.
  CHECK(from_batch("epochs", json::parse("18446744073709551615")) ==
        "x/options.json: 'epochs': epochs must be at least 1 and at most 1000000 (got 18446744073709551615)");
  CHECK(from_batch("epochs", json::parse("1e30")) == "x/options.json: 'epochs': '1e+30' is not an integer");
  CHECK(from_metadata(rt::option("lr"), "-1") ==
        "m.onnx: model metadata 'deeplocalize.learning_rate': learning rate must be in [0, 1000000] (got -1)");
  CHECK(from_metadata(rt::option("validation_split"), "1.0") ==
        "m.onnx: model metadata 'deeplocalize.validation_split': validation split must be in [0, 1) (got 1.0)");
  CHECK(from_metadata(rt::option("targets"), "0").find("'deeplocalize.targets': targets must be at least 1") != std::string::npos);
  CHECK(from_metadata(rt::option("batch_size"), "0").find("batch size must be at least 1") != std::string::npos);
  CHECK(from_cli(rt::option("max_memory_mb"), "0") == "--max-memory: memory cap must be in (0, 16777216] (got 0)");
  CHECK(from_cli(rt::option("max_memory_mb"), "nan") == "--max-memory: 'nan' is not a finite number");
  CHECK(from_cli(rt::option("trace_max_mb"), "0") == "--trace-max-mb: trace cap must be in [0.01, 1048576] (got 0)");
  CHECK(from_cli(rt::option("probe_every"), "0") ==
        "--probe-every: probe interval must be at least 1 and at most 1073741824 (got 0)");
  // Batch used to turn probe_every 0 into 1.
  CHECK(from_batch("probe_every", 0) ==
        "x/options.json: 'probe_every': probe interval must be at least 1 and at most 1073741824 (got 0)");
  CHECK(from_batch_cli(rt::option("timeout_s"), "nan") == "--timeout: 'nan' is not a finite number");
  CHECK(from_batch_cli(rt::option("jobs"), "-1") == "--jobs: jobs must be at least 0 and at most 1024 (got -1)");
  an::Settings settings;
  CHECK(error_of([&] { settings.set("dead_units.dead_frac=nan"); }).find("is not a finite number") != std::string::npos);
  CHECK(error_of([&] { settings.set("dead_units.dead_frac=inf"); }).find("is not a finite number") != std::string::npos);
  CHECK(error_of([&] { settings.set("dead_units.dead_frac=0.5"); }) == "");
}

TEST_CASE("options: values reach the configuration and the run options") {
  CLI::App app;
  cli::TrainOptions o;
  cli::add_train_command(app, o);
  std::vector<std::string> args = {"mae", "--loss", "2",  "--probe-every", "7", "--epochs", "false", "--from-logits",
                                   "Adam", "--optimizer", "d.csv", "m.onnx", "train"};
  app.parse(args);
  CHECK(*o.epochs == 7);
  CHECK(o.probe_every == 2);
  CHECK(*o.from_logits == false);
  CHECK(*o.optimizer == "adam");  // choices are case-insensitive
  rt::TrainConfig c = rt::config_from_metadata({{"deeplocalize.loss", "mse"}, {"deeplocalize.epochs", "3"},
                                                {"deeplocalize.learning_rate", "0.5"}, {"deeplocalize.seed", "9"}});
  CHECK(c.epochs == 3);
  CHECK(*c.optimizer.learning_rate == 0.5);
  CHECK(c.seed == 9);
  CHECK(error_of([] { rt::config_from_metadata({{"deeplocalize.epoch", "3"}}, "m.onnx"); })
            .find("m.onnx: model metadata 'deeplocalize.epoch': unknown key (known: loss, ") == 0);
}

TEST_CASE("options: numbers in messages are short") {
  CHECK(rt::short_number(1e6) == "1000000");
  CHECK(rt::short_number(0.01) == "0.01");
  CHECK(rt::short_number(1e300) == "1e+300");
  CHECK(rt::short_number(-1) == "-1");
  CHECK(rt::range_text(rt::option("momentum")) == "in [0, 1)");
  CHECK(rt::range_text(rt::option("epochs")) == "at least 1 and at most 1000000");
}

TEST_CASE("options: README's options table is the table (regenerate with `deeplocalize options`)") {
  std::ifstream f(std::string(DL_SOURCE_DIR) + "/README.md");
  REQUIRE(f);
  std::stringstream text;
  text << f.rdbuf();
  const std::string readme = text.str();
  const std::string begin = "<!-- options table: `deeplocalize options` prints it -->\n";
  const std::string end = "<!-- end of options table -->";
  const size_t b = readme.find(begin), e = readme.find(end);
  REQUIRE(b != std::string::npos);
  REQUIRE(e != std::string::npos);
  CHECK(readme.substr(b + begin.size(), e - b - begin.size()) == rt::options_markdown());
}
