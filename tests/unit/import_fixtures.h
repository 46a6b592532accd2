// Building ONNX ModelProtos and TensorProtos in code for the converter tests
// (import*_test.cpp): value infos, initializers, nodes, the small MLP most tests start
// from, the error text an import produces, and temporary directories.
#pragma once

#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "converter/errors.h"
#include "converter/import.h"

namespace dl::test::onnx_build {

namespace fs = std::filesystem;
using dl::ModelError;
using dl::conv::import_model_bytes;

constexpr int64_t kBatch = -1;  // a symbolic "batch" dimension in make_value

inline onnx::ValueInfoProto make_value(const std::string& name, std::vector<int64_t> dims,
                                       int elem = onnx::TensorProto::FLOAT) {
  onnx::ValueInfoProto v;
  v.set_name(name);
  auto* t = v.mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem);
  auto* shape = t->mutable_shape();
  for (int64_t d : dims) {
    if (d == kBatch) shape->add_dim()->set_dim_param("batch");
    else shape->add_dim()->set_dim_value(d);
  }
  return v;
}

// A FLOAT tensor with its name and dims and no values yet.
inline onnx::TensorProto float_tensor(const std::string& name, const std::vector<int64_t>& dims) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  return t;
}

inline onnx::TensorProto raw_floats(const std::string& name, std::vector<int64_t> dims,
                                    const std::vector<float>& values) {
  onnx::TensorProto t = float_tensor(name, dims);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  return t;
}

inline onnx::TensorProto typed_floats(const std::string& name, std::vector<int64_t> dims,
                                      const std::vector<float>& values) {
  onnx::TensorProto t = float_tensor(name, dims);
  for (float v : values) t.add_float_data(v);
  return t;
}

inline onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, const std::string& name,
                                 std::vector<std::string> inputs, std::vector<std::string> outputs) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

inline onnx::ModelProto empty_model(int64_t opset) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.set_producer_name("import_test");
  m.set_producer_version("1");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  m.mutable_graph()->set_name("g");
  return m;
}

// x[batch,4] -> fc1 (Gemm) -> h -> unnamed Relu -> r -> fc2 (Gemm) -> y[batch,2].
// W1, W2 in raw_data, B1, B2 in float_data.
inline onnx::ModelProto mlp(int64_t opset = 13) {
  onnx::ModelProto m = empty_model(opset);
  auto* g = m.mutable_graph();
  *g->add_input() = make_value("x", {kBatch, 4});
  std::vector<float> w1(12), w2(6);
  for (size_t i = 0; i < w1.size(); ++i) w1[i] = 0.1f * static_cast<float>(i);
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = -0.5f + 0.25f * static_cast<float>(i);
  *g->add_initializer() = raw_floats("W1", {4, 3}, w1);
  *g->add_initializer() = typed_floats("B1", {3}, {1, 2, 3});
  *g->add_initializer() = raw_floats("W2", {3, 2}, w2);
  *g->add_initializer() = typed_floats("B2", {2}, {0.5f, -0.5f});
  add_node(g, "Gemm", "fc1", {"x", "W1", "B1"}, {"h"});
  add_node(g, "Relu", "", {"h"}, {"r"});
  add_node(g, "Gemm", "fc2", {"r", "W2", "B2"}, {"y"});
  *g->add_output() = make_value("y", {kBatch, 2});
  return m;
}

inline std::string bytes_of(const onnx::ModelProto& m) { return m.SerializeAsString(); }

// The ModelError message of importing `bytes` as "m.onnx"; "(no error)" when it imports.
inline std::string error_of(const std::string& bytes, const dl::conv::ImportOptions& options = {}) {
  try {
    import_model_bytes(bytes, "m.onnx", options);
  } catch (const ModelError& e) {
    return e.what();
  }
  return "(no error)";
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A fresh directory under the system temp dir, removed with its contents at scope end.
struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("dl_import_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

}  // namespace dl::test::onnx_build
