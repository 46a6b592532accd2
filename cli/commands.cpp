#include "cli/commands.h"

#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/batch_command.h"
#include "cli/model_view.h"
#include "cli/output.h"
#include "cli/output_guard.h"
#include "cli/train_command.h"
#include "converter/errors.h"
#include "converter/import.h"
#include "runtime/export_adapt.h"
#include "runtime/options.h"
#include "runtime/registry.h"

namespace dl::cli {

int CommandSet::run() const {
  for (const auto& [sub, fn] : commands)
    if (sub->parsed()) return fn();
  return 2;
}

namespace {

struct ModelArgs {
  std::string model;
  std::string out;
  bool force = false;
};

}  // namespace

CommandSet register_commands(CLI::App& app) {
  CommandSet set;

  auto inspect_args = std::make_shared<ModelArgs>();
  CLI::App* inspect = app.add_subcommand("inspect", "Show a model's inputs, outputs, layers, parameters and training configuration");
  inspect->add_option("model", inspect_args->model, "ONNX model")->required();
  set.commands.emplace_back(inspect, [inspect_args] {
    ir::Model m = conv::import_model(inspect_args->model);
    rt::adapt_export(m);  // as train sees it: notes in m.warnings
    print_inspect(m, std::cout);
    return 0;
  });

  auto convert_args = std::make_shared<ModelArgs>();
  CLI::App* convert = app.add_subcommand("convert", "Print the imperative, instrumented program built from a model");
  convert->add_option("model", convert_args->model, "ONNX model")->required();
  convert->add_option("-o,--output", convert_args->out, "Write the program to this file instead of stdout");
  convert->add_flag("--force", convert_args->force, "Allow -o to overwrite the input model");
  set.commands.emplace_back(convert, [convert_args] {
    check_outputs({{"the model", convert_args->model}}, {{"-o", convert_args->out, true}}, convert_args->force);
    ir::Model m = conv::import_model(convert_args->model);
    rt::adapt_export(m);
    std::ostringstream text;
    print_program(m, text);
    if (convert_args->out.empty())
      std::cout << text.str();
    else
      write_text_output(convert_args->out, text.str());
    return 0;
  });

  CLI::App* ops = app.add_subcommand("ops", "List the supported ONNX operators and the since-versions each implements");
  set.commands.emplace_back(ops, [] {
    std::cout << rt::operator_table();
    return 0;
  });

  CLI::App* options = app.add_subcommand("options", "Print the table of training options (Markdown, as in README.md)");
  set.commands.emplace_back(options, [] {
    std::cout << rt::options_markdown();
    return 0;
  });

  auto train_args = std::make_shared<TrainOptions>();
  CLI::App* train = add_train_command(app, *train_args);
  set.commands.emplace_back(train, [train_args] { return run_train(*train_args); });

  auto analyze_args = std::make_shared<AnalyzeOptions>();
  CLI::App* analyze = add_analyze_command(app, *analyze_args);
  set.commands.emplace_back(analyze, [analyze_args] { return run_analyze(*analyze_args); });

  auto batch_args = std::make_shared<BatchOptions>();
  CLI::App* batch = add_batch_command(app, *batch_args);
  set.commands.emplace_back(batch, [batch_args] { return run_batch(*batch_args); });

  auto merge_args = std::make_shared<MergeOptions>();
  CLI::App* merge = add_merge_command(app, *merge_args);
  set.commands.emplace_back(merge, [merge_args] { return run_merge(*merge_args); });

  return set;
}

}  // namespace dl::cli
