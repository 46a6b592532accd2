// ONNX import: the only place that sees protobuf. Reads a model file, validates it
// (onnx::checker), upgrades opsets below kCanonicalOpset with the ONNX version
// converter, runs ONNX shape inference, and returns the plain IR.
#pragma once

#include <map>
#include <string>

#include "converter/ir.h"

namespace dl::conv {

// Models below this default-domain opset are upgraded to it; models at or above it
// are kept as they are (each op knows which since-versions it implements).
constexpr int64_t kCanonicalOpset = 13;
// The newest default-domain opset the bundled ONNX library knows.
int64_t max_known_opset();

struct ImportOptions {
  bool run_checker = true;
  bool upgrade_opset = true;
  bool infer_shapes = true;
  // The most bytes the model file (or stream) may hold: --max-memory; 0 = protobuf's
  // 2 GB limit. A stream that does not end within it is refused (ResourceError).
  int64_t max_file_bytes = 0;
};

// Throws ModelError naming the file (and node, where one is at fault): unreadable,
// truncated or non-ONNX bytes, external data, cycles, dangling inputs, duplicate
// outputs, unknown opset, checker failures.
ir::Model import_model(const std::string& path, const ImportOptions& options = {});
// Same, from bytes in memory (fuzzing, tests); `label` names the source in errors.
ir::Model import_model_bytes(const std::string& bytes, const std::string& label,
                             const ImportOptions& options = {});

// Reads a serialized TensorProto (the ONNX backend tests' input_N.pb / output_N.pb).
ir::TensorData load_tensor_file(const std::string& path);

// Writes a copy of the model at `source_path` to `out_path` with the given float
// initializers replaced and metadata_props entries set (added or overwritten).
// The file is written to a temporary name and renamed. Throws ModelError for an
// unreadable source, an unknown initializer name or other dims, ConfigError when
// `out_path` cannot be written. Float64 initializers stay float64.
void save_model_with(const std::string& source_path, const std::string& out_path,
                     const std::map<std::string, ir::TensorData>& initializers,
                     const std::map<std::string, std::string>& metadata);

}  // namespace dl::conv
