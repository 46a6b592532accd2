// The plain intermediate representation the converter produces from an ONNX model.
// No protobuf type appears here: runtime/, analysis/ and cli/ see only this.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dl::ir {

// int8 and uint8 tensors are imported as kInt32 (all integers live in `ints`).
enum class DType { kFloat32, kFloat64, kInt64, kInt32, kBool, kOther };

const char* dtype_name(DType t);

// A constant tensor (initializer, Constant attribute, test data). Float32 and
// Float64 values are held in `floats` (Float64 narrowed: the runtime computes in
// float32); Int64/Int32/Bool in `ints`.
struct TensorData {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> dims;
  std::vector<float> floats;
  std::vector<int64_t> ints;

  int64_t numel() const;
};

// One dimension of a declared shape: a fixed size, or a symbolic name ("batch", "N").
struct Dim {
  int64_t value = -1;  // -1 when unknown or symbolic
  std::string param;   // symbolic name, if any
  bool known() const { return value >= 0; }
};

struct ValueInfo {
  std::string name;
  DType dtype = DType::kFloat32;
  bool has_shape = false;
  std::vector<Dim> dims;
};

struct Attribute {
  enum class Kind { kFloat, kInt, kString, kTensor, kFloats, kInts, kStrings, kOther };
  Kind kind = Kind::kOther;
  float f = 0;
  int64_t i = 0;
  std::string s;
  TensorData t;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
};

struct Node {
  std::string name;     // ONNX node name; the converter names unnamed nodes "<op>_<index>"
  std::string op_type;  // e.g. "Gemm"
  std::string domain;   // "" for the default ONNX domain
  int since_version = 0;  // the schema version this node resolves to at the model's opset
  std::vector<std::string> inputs;   // "" marks an omitted optional input
  std::vector<std::string> outputs;  // "" marks an omitted optional output
  std::map<std::string, Attribute> attrs;
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;          // topological order
  std::vector<ValueInfo> inputs;    // graph inputs that are not initializers
  std::vector<ValueInfo> outputs;
  std::map<std::string, ValueInfo> value_info;  // inferred shapes of intermediate values
  std::map<std::string, TensorData> initializers;
};

struct Model {
  std::string path;
  int64_t ir_version = 0;
  int64_t opset = 0;           // default-domain opset after any upgrade
  int64_t original_opset = 0;  // as stored in the file
  std::string producer_name;
  std::string producer_version;
  std::map<std::string, std::string> metadata;  // metadata_props
  Graph graph;
  // Non-fatal notes from the import, e.g. why shape inference was skipped.
  std::vector<std::string> warnings;
  // The graph was changed after the import (rt::adapt_export untied or re-batched it), so
  // writing it back must write this graph, not a copy of the file's.
  bool rewritten = false;
};

}  // namespace dl::ir
