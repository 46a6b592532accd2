// Times the import of a large model: one 5000x5000 float initializer (100 MB) in a
// MatMul. Not a test (timings depend on the machine); run by hand:
//   dl_import_bench [DIR] [N]     (DIR defaults to the system temp directory,
//                                  N to 5000; DL_BENCH_KEEP=1 keeps the files)
#include <onnx/onnx_pb.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "converter/import.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void write_model(const std::string& path, int64_t n, int64_t opset) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.set_producer_name("dl_import_bench");
  auto* op = m.add_opset_import();
  op->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("large");
  auto value = [](onnx::ValueInfoProto* v, const std::string& name, int64_t width) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_param("batch");
    t->mutable_shape()->add_dim()->set_dim_value(width);
  };
  value(g->add_input(), "x", n);
  value(g->add_output(), "y", n);
  auto* w = g->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(n);
  w->add_dims(n);
  std::vector<float> values(static_cast<size_t>(n * n));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 1000) * 1e-3f;
  w->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  auto* node = g->add_node();
  node->set_op_type("MatMul");
  node->set_name("matmul");
  node->add_input("x");
  node->add_input("W");
  node->add_output("y");
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  const fs::path dir = argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path();
  const int64_t n = argc > 2 ? std::stoll(argv[2]) : 5000;
  for (int64_t opset : {13, 11}) {
    const std::string path = (dir / ("dl_import_bench_" + std::to_string(opset) + ".onnx")).string();
    write_model(path, n, opset);
    const double mb = static_cast<double>(fs::file_size(path)) / 1e6;

    auto start = std::chrono::steady_clock::now();
    std::ifstream file(path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    const double read_s = seconds_since(start);

    start = std::chrono::steady_clock::now();
    const dl::ir::Model model = dl::conv::import_model(path);
    const double import_s = seconds_since(start);

    std::printf("opset %lld -> %lld: %.1f MB, reading the file alone %.3f s, import_model %.3f s (%zu weights)\n",
                static_cast<long long>(opset), static_cast<long long>(model.opset), mb, read_s, import_s,
                model.graph.initializers.at("W").floats.size());
    if (!std::getenv("DL_BENCH_KEEP")) fs::remove(path);
  }
  return 0;
}
