// Shared by the PyTorch parity tests: the data spec `deeplocalize train` derives from a model.
#pragma once

#include "converter/ir.h"
#include "runtime/graph.h"
#include "runtime/train_config.h"
#include "runtime/trainer.h"

namespace dl::test {

// As cli/train_command.cpp (dataset_spec) does: the sample shape and output width from a
// batch-1 plan, one-hot or sparse class ids by the loss.
inline rt::DatasetSpec parity_spec(const ir::Model& model, const rt::TrainConfig& c) {
  rt::GraphOptions go;
  go.batch_size = 1;
  rt::ExecutionGraph probe(model, go);
  rt::DatasetSpec spec;
  spec.targets = c.targets;
  const rt::Shape& in = probe.input(0).shape();
  spec.sample_shape = rt::Shape(in.begin() + 1, in.end());
  spec.input_name = probe.input_names()[0];
  spec.output_width = probe.output(0).numel();
  if (c.loss == "sparse_categorical_crossentropy")
    spec.encoding = rt::DatasetSpec::Encoding::kSparse;
  else if (c.loss == "categorical_crossentropy" && c.targets == 1 && spec.output_width > 1)
    spec.encoding = rt::DatasetSpec::Encoding::kOneHot;
  return spec;
}

}  // namespace dl::test
