// Shared by the conformance runner's files (runner.cpp, node_test.cpp, isolation.cpp,
// proto_peek.cpp): the outcome of one ONNX backend node test, running one test in this
// process or in a forked child, and the few proto fields read without protobuf.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "converter/ir.h"

namespace dl::test::conformance {

namespace fs = std::filesystem;

enum class Status : char { kPass = 'P', kFail = 'F', kSkipOp = 'O', kSkipDtype = 'D' };

struct Outcome {
  Status status = Status::kFail;
  std::string message;
};

// Thrown inside a test to classify it as skipped for its data types.
struct DtypeSkip {
  std::string why;
};

// ---- node_test.cpp: one test ---------------------------------------------------
// Imports DIR/model.onnx, then runs every DIR/test_data_set_* through an ExecutionGraph
// and compares the outputs. Never throws: errors become a failure or a skip.
Outcome run_test(const fs::path& dir);

// ---- isolation.cpp: one test in a forked child -------------------------------------
// run_test in a child process: a crash, or a run longer than timeout_s, is that test's
// failure.
Outcome run_isolated(const fs::path& dir, int timeout_s);

// ---- proto_peek.cpp: a few fields of serialized protos, read without protobuf -------
// The element type of test data and the op types of a model the converter refuses:
// lets a test be classified (skip vs failure) independently of the converter. The
// runner links no protobuf: ONNX stays private to converter/.

// "float32", "int64", ... for a TensorProto.DataType; "unknown" when out of range.
const char* onnx_type_name(int64_t t);
// TensorProto.data_type (field 2) of the file at `path`; -1 when absent or unparsable.
int64_t peek_tensor_dtype(const std::string& path);
// The top-level nodes' names, op types and domains of the model file at `path`.
std::vector<ir::Node> peek_model_nodes(const std::string& path);

}  // namespace dl::test::conformance
