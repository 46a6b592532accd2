// The conformance runner's protobuf peeking (see conformance.h): a minimal wire-format
// reader for the element type of test data and the op types of a model file.
#include <fstream>
#include <iterator>

#include "tests/conformance/conformance.h"

namespace dl::test::conformance {
namespace {

bool read_varint(const std::string& b, size_t& p, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && p < b.size(); shift += 7) {
    uint8_t c = static_cast<uint8_t>(b[p++]);
    v |= uint64_t(c & 0x7f) << shift;
    if (!(c & 0x80)) return true;
  }
  return false;
}

// Calls fn(field, wire, varint value, bytes view) for each top-level field of a
// serialized message; false when the bytes do not parse.
template <class Fn>
bool for_each_field(const std::string& b, Fn fn) {
  size_t p = 0;
  while (p < b.size()) {
    uint64_t key = 0, v = 0;
    if (!read_varint(b, p, key)) return false;
    const uint64_t field = key >> 3, wire = key & 7;
    if (wire == 0) {
      if (!read_varint(b, p, v)) return false;
      fn(field, wire, v, std::string());
    } else if (wire == 1 || wire == 5) {
      const size_t n = wire == 1 ? 8 : 4;
      if (n > b.size() - p) return false;
      p += n;
    } else if (wire == 2) {
      if (!read_varint(b, p, v) || v > b.size() - p) return false;
      fn(field, wire, v, b.substr(p, v));
      p += v;
    } else {
      return false;
    }
  }
  return true;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

const char* onnx_type_name(int64_t t) {
  static const char* names[] = {"undefined", "float32", "uint8",  "int8",      "uint16",
                                "int16",     "int32",   "int64",  "string",    "bool",
                                "float16",   "float64", "uint32", "uint64",    "complex64",
                                "complex128", "bfloat16"};
  return t >= 0 && t <= 16 ? names[t] : "unknown";
}

// TensorProto.data_type (field 2); -1 when absent or unparsable.
int64_t peek_tensor_dtype(const std::string& path) {
  int64_t t = -1;
  bool ok = for_each_field(read_file(path), [&](uint64_t f, uint64_t w, uint64_t v, const std::string&) {
    if (f == 2 && w == 0) t = static_cast<int64_t>(v);
  });
  return ok ? t : -1;
}

// The top-level nodes' names, op types and domains (ModelProto.graph = 7,
// GraphProto.node = 1, NodeProto name = 3, op_type = 4, domain = 7): lets a test whose
// model the converter refuses still be classified by the ops it uses.
std::vector<ir::Node> peek_model_nodes(const std::string& path) {
  std::vector<ir::Node> nodes;
  for_each_field(read_file(path), [&](uint64_t f, uint64_t w, uint64_t, const std::string& graph) {
    if (f != 7 || w != 2) return;
    for_each_field(graph, [&](uint64_t gf, uint64_t gw, uint64_t, const std::string& node) {
      if (gf != 1 || gw != 2) return;
      ir::Node n;
      for_each_field(node, [&](uint64_t nf, uint64_t nw, uint64_t, const std::string& s) {
        if (nw != 2) return;
        if (nf == 3) n.name = s;
        if (nf == 4) n.op_type = s;
        if (nf == 7) n.domain = s;
      });
      nodes.push_back(std::move(n));
    });
  });
  return nodes;
}

}  // namespace dl::test::conformance
