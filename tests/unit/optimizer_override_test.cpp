// An optimizer chosen on the command line replaces the model's: the model's settings that
// optimizer has no use for (an SGD momentum under --optimizer adam) are dropped with a
// note instead of failing the run; contradictions on the command line itself stay errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "cli/option_bindings.h"
#include "cli/train_command.h"
#include "converter/errors.h"
#include "runtime/optimizer.h"
#include "runtime/train_config.h"
#include "runtime/trainer.h"

using namespace dl;

namespace {

rt::TrainConfig sgd_model_config() {
  return rt::config_from_metadata({{"deeplocalize.loss", "mse"},
                                   {"deeplocalize.optimizer", "sgd"},
                                   {"deeplocalize.learning_rate", "0.05"},
                                   {"deeplocalize.momentum", "0.9"},
                                   {"deeplocalize.nesterov", "true"}},
                                  "m.onnx");
}

bool has_note(const std::vector<std::string>& notes, const std::string& fragment) {
  return std::any_of(notes.begin(), notes.end(), [&](const std::string& n) { return n.find(fragment) != std::string::npos; });
}

}  // namespace

TEST_CASE("optimizer override: --optimizer adam drops the model's momentum and nesterov with a note") {
  rt::TrainConfig c = sgd_model_config();
  cli::TrainOptions o;
  o.optimizer = "adam";
  const std::vector<std::string> notes = cli::apply_overrides(o, c);
  REQUIRE(notes.size() == 2);
  CHECK(has_note(notes, "model metadata 'deeplocalize.momentum' = 0.9 is ignored: the adam optimizer chosen on the "
                        "command line has no momentum"));
  CHECK(has_note(notes, "'deeplocalize.nesterov' = true is ignored"));
  CHECK(c.optimizer.name == "adam");
  CHECK(c.optimizer.momentum == 0);
  CHECK(!c.optimizer.nesterov);
  CHECK(*c.optimizer.learning_rate == 0.05);  // applies to every optimizer: kept
  CHECK_NOTHROW(rt::make_optimizer(c.optimizer));
}

TEST_CASE("optimizer override: what the chosen optimizer takes is kept") {
  rt::TrainConfig c = sgd_model_config();
  cli::TrainOptions o;
  o.optimizer = "rmsprop";  // has a momentum, no Nesterov
  const std::vector<std::string> notes = cli::apply_overrides(o, c);
  REQUIRE(notes.size() == 1);
  CHECK(has_note(notes, "nesterov"));
  CHECK(c.optimizer.momentum == 0.9);
  CHECK_NOTHROW(rt::make_optimizer(c.optimizer));

  rt::TrainConfig same = sgd_model_config();
  cli::TrainOptions sgd;
  sgd.optimizer = "sgd";
  CHECK(cli::apply_overrides(sgd, same).empty());
  CHECK(same.optimizer.momentum == 0.9);
  CHECK(same.optimizer.nesterov);
}

TEST_CASE("optimizer override: contradictions not made by the override stay errors naming their source") {
  // The model's own metadata contradicts itself: no override, so no note, an error.
  rt::TrainConfig model_only = rt::config_from_metadata(
      {{"deeplocalize.loss", "mse"}, {"deeplocalize.optimizer", "adam"}, {"deeplocalize.momentum", "0.9"}}, "m.onnx");
  CHECK(cli::apply_overrides(cli::TrainOptions{}, model_only).empty());
  CHECK_THROWS_WITH_AS(rt::make_optimizer(model_only.optimizer),
                       doctest::Contains("m.onnx: model metadata 'deeplocalize.momentum': the adam optimizer has no momentum"),
                       ConfigError);
  // --optimizer adam --momentum 0.9: both on the command line, the user asked for both.
  rt::TrainConfig c = sgd_model_config();
  cli::TrainOptions o;
  o.optimizer = "adam";
  o.momentum = 0.9;
  const std::vector<std::string> notes = cli::apply_overrides(o, c);
  CHECK(!has_note(notes, "momentum"));
  CHECK_THROWS_WITH_AS(rt::make_optimizer(c.optimizer), doctest::Contains("--momentum: the adam optimizer has no momentum"),
                       ConfigError);
}

TEST_CASE("optimizer override: `train --optimizer adam` on a model with an SGD momentum trains, with the note") {
  // gru_classifier_scce_momentum: deeplocalize.optimizer sgd, momentum 0.9.
  cli::TrainOptions o;
  o.model = std::string(DL_SOURCE_DIR) + "/tests/fixtures/parity/gru_classifier_scce_momentum.onnx";
  o.data = std::string(DL_SOURCE_DIR) + "/tests/fixtures/parity/gru_classifier_scce_momentum.csv";
  o.optimizer = "adam";
  o.epochs = 1;
  const cli::LoadedCase c = cli::load_case(o);
  CHECK(c.config.optimizer.name == "adam");
  CHECK(has_note(c.model->warnings, "'deeplocalize.momentum' = 0.9 is ignored"));
  rt::Trainer trainer(c.model, c.config, c.train, rt::Dataset{});  // threw "adam has no momentum"
  CHECK(trainer.run().iterations == 4);
}
