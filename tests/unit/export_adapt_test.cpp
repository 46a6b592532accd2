// rt::adapt_export on models exported the default way (torch.onnx.export(model.eval(), x,
// path): eval mode, a batch of 1), from tests/fixtures/export/gen_export_models.py and the
// eval-mode parity fixture; and the static rules on them: no linear_stack on a residual
// branch or a linear bottleneck, no zero_initialization from folded BatchNorm biases.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "analysis/report.h"
#include "cli/output.h"
#include "converter/errors.h"
#include "converter/import.h"
#include "runtime/export_adapt.h"
#include "runtime/graph.h"
#include "runtime/param_roles.h"
#include "runtime/probes.h"
#include "runtime/run_summary.h"
#include "runtime/trainer.h"

namespace {

using namespace dl;

const std::string kExport = std::string(DL_SOURCE_DIR) + "/tests/fixtures/export/";
const std::string kParity = std::string(DL_SOURCE_DIR) + "/tests/fixtures/parity/";

bool any_contains(const std::vector<std::string>& notes, const std::string& part) {
  return std::any_of(notes.begin(), notes.end(), [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

rt::Shape output_shape(const ir::Model& m, int64_t batch) {
  rt::GraphOptions go;
  go.batch_size = batch;
  rt::ExecutionGraph g(m, go);
  return g.output(0).shape();
}

// The symptoms of every finding and warning after a short training run with probes.
std::vector<std::string> symptoms_after_training(const ir::Model& model) {
  rt::GraphOptions go;
  rt::ExecutionGraph probe(model, go);
  const rt::Shape in = probe.input(0).shape();
  rt::Dataset d;
  d.source = "synthetic";
  d.n = 16;
  d.x_shape = rt::Shape(in.begin() + 1, in.end());
  d.x_size = rt::shape_numel(d.x_shape);
  d.y_size = 1;
  for (int64_t k = 0; k < d.n * d.x_size; ++k) d.x.push_back(float((k * 37) % 17) / 8.0f - 1.0f);
  for (int64_t r = 0; r < d.n; ++r) d.y.push_back(float(r % 3)), d.line_of_row.push_back(r + 1);
  d.encoding = rt::DatasetSpec::Encoding::kSparse;
  d.num_classes = 3;
  d.raw_labels = d.y;
  rt::TrainConfig config;
  config.loss = "sparse_categorical_crossentropy";
  config.from_logits = true;
  config.epochs = 1;
  config.batch_size = 8;
  rt::Trainer trainer(model, config, std::move(d), rt::Dataset{});
  an::Trace trace;
  rt::describe_run(trainer.graph(), config, trainer.train_data(), "accuracy", true, trace.header);
  rt::ProbeRecorder probes(trainer.graph(), trace);
  trace.set_capacity_bytes(16 << 20);
  trace.reserve_iterations(2);
  trainer.set_observer(&probes);
  trainer.add_listener(&probes);
  trainer.run();
  const an::Diagnosis diag = an::analyze(trace, an::Settings(), true);
  std::vector<std::string> out;
  for (const auto& f : diag.findings) out.push_back(f.symptom);
  for (const auto& f : diag.warnings) out.push_back(f.symptom);
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

}  // namespace

TEST_CASE("export adapt: a default eval-mode export with a batch of 1 is re-batched, untied and explained") {
  ir::Model m = conv::import_model(kParity + "cnn_eval_fixed_batch_scce_sgd.onnx");
  // As exported: the batch is 1 whatever the plan asks for (the reported bug), and the
  // deduplicated initializers tie bn2's running variance to its scale.
  CHECK(output_shape(m, 5) == rt::Shape{1, 3});
  CHECK_FALSE(rt::tied_param_notes(rt::model_params(m)).empty());

  const rt::ExportAdaptation a = rt::adapt_export(m);
  CHECK(m.rewritten);
  CHECK(output_shape(m, 5) == rt::Shape{5, 3});
  CHECK(a.rebatched == std::vector<std::string>{"input.1"});
  CHECK(a.eval_mode);
  CHECK(a.untied.size() == 3);
  CHECK(rt::tied_param_notes(rt::model_params(m)).empty());
  CHECK(m.graph.initializers.count("bn2.running_var") == 1);
  CHECK(any_contains(a.notes, "fixed batch dimension of 1"));
  CHECK(any_contains(a.notes, "[1, -1] -> [0, -1]"));
  CHECK(any_contains(a.notes, "folded their BatchNorm"));
  CHECK(any_contains(a.notes, "inference mode"));
  CHECK(any_contains(a.notes, "no Dropout"));
  CHECK(any_contains(a.notes, "3 Identity alias(es) of deduplicated initializers were untied ('"));
  CHECK(any_contains(a.notes, "'bn2.running_var' from 'bn2.weight'"));
  CHECK(any_contains(a.notes, "TrainingMode.TRAINING"));
  CHECK(m.warnings == a.notes);
}

TEST_CASE("export adapt: a training-mode export with a dynamic batch is left alone") {
  ir::Model m = conv::import_model(kParity + "layernorm_gelu_mlp_scce_adam.onnx");
  const size_t nodes = m.graph.nodes.size(), inits = m.graph.initializers.size();
  const rt::ExportAdaptation a = rt::adapt_export(m);
  CHECK(a.notes.empty());
  CHECK_FALSE(m.rewritten);
  CHECK(m.graph.nodes.size() == nodes);
  CHECK(m.graph.initializers.size() == inits);
}

TEST_CASE("export adapt: a batch baked in where it cannot be rewritten is named with the fix") {
  ir::Model m = conv::import_model(kExport + "reshape_concat_fixed.onnx");
  try {
    rt::adapt_export(m);
    FAIL("no error");
  } catch (const ModelError& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("reshape_concat_fixed.onnx") != std::string::npos);
    CHECK(msg.find("fixed batch dimension of 1") != std::string::npos);
    CHECK(msg.find("node '/Reshape' (Reshape) bakes the batch size in") != std::string::npos);
    CHECK(msg.find("dynamic_axes={'onnx::Reshape_0': {0: 'batch'}") != std::string::npos);
  }
}

TEST_CASE("export adapt: ResNet's downsample branch and folded BN biases raise no false alarm") {
  ir::Model m = conv::import_model(kExport + "resnet_block_eval.onnx");
  rt::adapt_export(m);
  const std::vector<std::string> s = symptoms_after_training(m);
  INFO(s.size());
  CHECK_FALSE(has(s, "linear_stack"));
  CHECK_FALSE(has(s, "zero_initialization"));
  CHECK_FALSE(has(s, "constant_initialization"));
}

TEST_CASE("export adapt: MobileNetV2's linear bottlenecks raise no linear_stack") {
  ir::Model m = conv::import_model(kExport + "bottleneck_eval.onnx");
  rt::adapt_export(m);
  const std::vector<std::string> s = symptoms_after_training(m);
  CHECK_FALSE(has(s, "linear_stack"));
  CHECK_FALSE(has(s, "zero_initialization"));
}

TEST_CASE("export adapt: train --save writes the adapted graph (the file's would not hold the untied copies)") {
  ir::Model m = conv::import_model(kParity + "cnn_eval_fixed_batch_scce_sgd.onnx");
  rt::adapt_export(m);
  auto store = rt::ParamStore::from_model(m);
  store->values.at("bn2.running_var").f()[0] = 7.0f;  // as trained: differs from bn2.weight now
  const std::string out = std::string(DL_BINARY_DIR) + "/export_adapt_saved.onnx";
  cli::save_trained_model(m, out, *store);
  const ir::Model back = conv::import_model(out);
  CHECK(std::none_of(back.graph.nodes.begin(), back.graph.nodes.end(),
                     [](const ir::Node& n) { return n.op_type == "Identity"; }));
  CHECK(back.graph.initializers.at("bn2.running_var").floats[0] == 7.0f);
  CHECK(back.graph.initializers.at("bn2.weight").floats[0] != 7.0f);
  REQUIRE(back.graph.inputs.size() == 1);
  CHECK_FALSE(back.graph.inputs[0].dims[0].known());  // saved with the symbolic batch
}

TEST_CASE("export adapt: the notes reach the trace header, the text and JSON reports and a saved trace") {
  an::Trace t;
  t.header.notes = {"the graph input 'x' has a fixed batch dimension of 1 in the file"};
  an::RunInfo info;
  info.metric_name = "accuracy";
  const auto j = an::report_json(an::Diagnosis{}, t, info);
  REQUIRE(j["notes"].size() == 1);
  CHECK(j["notes"][0] == t.header.notes[0]);
  const std::string text = an::report_text(an::Diagnosis{}, t, info, false);
  CHECK(text.find("Notes about the model:\n  - the graph input 'x' has a fixed batch dimension of 1") != std::string::npos);
  CHECK(an::report_json(an::Diagnosis{}, an::Trace{}, info)["notes"].empty());
  CHECK(an::report_text(an::Diagnosis{}, an::Trace{}, info, false).find("Notes about") == std::string::npos);
}
