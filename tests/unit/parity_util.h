// Shared by the PyTorch parity tests and dl_parity_dump: the data spec `deeplocalize train`
// derives from a model, and the gzip-compressed fixtures' bytes.
#pragma once

#include <zlib.h>

#include <string>

#include "converter/errors.h"
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

// The whole content of a gzip file (the cnn/*.onnx.gz fixtures); throws ConfigError when it
// cannot be opened, ModelError when it is not a complete gzip stream.
inline std::string gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw ConfigError(path + ": cannot open");
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  if (n != 0) throw ModelError(path + ": not a complete gzip file");
  return out;
}

}  // namespace dl::test
