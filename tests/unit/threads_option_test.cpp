// --threads (runtime/option_list.def): parsed and range-checked by `train` and `batch`,
// applied by run_train, the batch's rule for jobs x threads, and training that gives
// the same bits on 1 and 2 threads.
#include <doctest/doctest.h>

#include <CLI/CLI.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>
#include <vector>

#include "cli/batch_command.h"
#include "cli/train_command.h"
#include "converter/errors.h"
#include "runtime/parallel.h"
#include "runtime/threads.h"

using namespace dl;

namespace {

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// CLI11 takes the arguments reversed.
void parse_train(std::vector<std::string> args, cli::TrainOptions& o) {
  CLI::App app;
  cli::add_train_command(app, o);
  args.insert(args.begin(), "train");
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  app.parse(reversed);
}

void parse_batch(std::vector<std::string> args, cli::BatchOptions& o) {
  CLI::App app;
  cli::add_batch_command(app, o);
  args.insert(args.begin(), "batch");
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  app.parse(reversed);
}

std::string config_error(const std::vector<std::string>& args, bool batch) {
  try {
    if (batch) {
      cli::BatchOptions o;
      parse_batch(args, o);
    } else {
      cli::TrainOptions o;
      parse_train(args, o);
    }
  } catch (const CLI::ParseError& e) {  // exit code 2 (cli/main.cpp)
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("threads option: parsed by train and batch, default 0 (all cores)") {
  cli::TrainOptions t;
  parse_train({"m.onnx", "d.csv"}, t);
  CHECK(t.threads == 0);
  parse_train({"m.onnx", "d.csv", "--threads", "3"}, t);
  CHECK(t.threads == 3);
  cli::BatchOptions b;
  parse_batch({"cases/", "--jobs", "2", "--threads", "1024"}, b);
  CHECK(b.jobs == 2);
  CHECK(b.threads == 1024);
}

TEST_CASE("threads option: out of range is a usage error naming --threads") {
  CHECK(config_error({"m.onnx", "d.csv", "--threads", "1025"}, false) ==
        "--threads: threads must be at least 0 and at most 1024 (got 1025)");
  CHECK(config_error({"m.onnx", "d.csv", "--threads", "-1"}, false) ==
        "--threads: threads must be at least 0 and at most 1024 (got -1)");
  CHECK(config_error({"m.onnx", "d.csv", "--threads", "two"}, false).find("--threads") == 0);
  CHECK(config_error({"cases/", "--threads", "2000"}, true) ==
        "--threads: threads must be at least 0 and at most 1024 (got 2000)");
}

TEST_CASE("threads option: a batch's cases get --threads, else 1 each when several run at once") {
  CHECK(cli::case_threads(1, 0) == 0);
  CHECK(cli::case_threads(4, 0) == 1);
  CHECK(cli::case_threads(4, 3) == 3);
  CHECK(cli::case_threads(1, 2) == 2);
  CHECK(cli::oversubscription_warning(2, 1, 2) == "");
  CHECK(cli::oversubscription_warning(1, 2, 2) == "");
  const std::string w = cli::oversubscription_warning(2, 2, 2);
  CHECK(w.find("--jobs 2 x --threads 2 = 4 compute threads on 2 cores") != std::string::npos);
}

TEST_CASE("threads option: train applies it, and 1 and 2 threads train the same bits") {
  const std::string dir = std::string(DL_SOURCE_DIR) + "/models/benchmark/healthy_digits_cnn/";
  const std::filesystem::path tmp =
      std::filesystem::temp_directory_path() / ("dl_threads_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(tmp);
  // Helpers always on: a busy machine must not quietly turn the 2-thread run into a
  // 1-thread one.
  rt::set_helper_policy(rt::HelperPolicy::kAlways);
  std::vector<std::string> saved, reports;
  for (const char* n : {"1", "2"}) {
    cli::TrainOptions o;
    const std::string save = (tmp / (std::string("w") + n + ".onnx")).string();
    const std::string report = (tmp / (std::string("r") + n + ".json")).string();
    parse_train({dir + "model.onnx", dir + "data.csv", "--threads", n, "--epochs", "1", "--save", save, "--report",
                 report, "--format", "json", "--quiet", "--no-stop"},
                o);
    cli::run_train(o);
    CHECK(rt::compute_threads() == std::stoi(n));
    saved.push_back(read_bytes(save));
    reports.push_back(read_bytes(report));
  }
  rt::set_compute_threads(0);
  rt::set_helper_policy(rt::HelperPolicy::kAuto);
  REQUIRE(saved[0].size() > 1000);
  CHECK(saved[0] == saved[1]);
  // The loss history (the report differs in timing only).
  auto losses = [](const std::string& r) { return r.substr(r.find("\"loss\":"), 400); };
  REQUIRE(reports[0].find("\"loss\":") != std::string::npos);
  CHECK(losses(reports[0]) == losses(reports[1]));
  std::filesystem::remove_all(tmp);
}
