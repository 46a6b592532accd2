// Writing an ir::Model as ONNX: the inverse of build_ir in import.cpp, for models that
// were edited in memory (transform.h) and so have no source file to copy.
#include <onnx/checker.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "converter/errors.h"
#include "converter/fuse_layer_norm.h"
#include "converter/onnx_util.h"
#include "converter/transform.h"

namespace dl::conv {
namespace {

// The IR version each default-domain opset first appeared with (onnx/docs/Versioning.md):
// runtimes refuse a model whose ir_version is older than its opset.
int64_t min_ir_version(int64_t opset) {
  if (opset <= 8) return 3;
  if (opset == 9) return 4;
  if (opset == 10) return 5;
  if (opset == 11) return 6;
  if (opset <= 14) return 7;
  if (opset <= 18) return 8;
  return opset <= 20 ? 9 : 10;
}

int32_t onnx_dtype(ir::DType t, const std::string& what) {
  switch (t) {
    case ir::DType::kFloat32: return onnx::TensorProto::FLOAT;
    case ir::DType::kFloat64: return onnx::TensorProto::DOUBLE;
    case ir::DType::kInt64: return onnx::TensorProto::INT64;
    case ir::DType::kInt32: return onnx::TensorProto::INT32;
    case ir::DType::kBool: return onnx::TensorProto::BOOL;
    case ir::DType::kOther: break;
  }
  throw ModelError(what + " has a data type deeplocalize cannot write (only float, double, int64, int32, bool)");
}

template <class Stored, class Value>
std::string raw_bytes(const std::vector<Value>& values) {
  std::string raw(values.size() * sizeof(Stored), '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    const Stored v = static_cast<Stored>(values[i]);
    std::memcpy(&raw[i * sizeof(Stored)], &v, sizeof(Stored));
  }
  return raw;
}

void write_tensor(const ir::TensorData& t, onnx::TensorProto& out, const std::string& what) {
  out.set_name(t.name);
  out.set_data_type(onnx_dtype(t.dtype, what));
  for (int64_t d : t.dims) out.add_dims(d);
  const bool is_float = t.dtype == ir::DType::kFloat32 || t.dtype == ir::DType::kFloat64;
  const size_t held = is_float ? t.floats.size() : t.ints.size();
  if (static_cast<int64_t>(held) != t.numel()) {
    throw ModelError(what + " holds " + std::to_string(held) + " values for " + std::to_string(t.numel()) +
                     " elements");
  }
  switch (t.dtype) {
    case ir::DType::kFloat32: out.set_raw_data(raw_bytes<float>(t.floats)); break;
    case ir::DType::kFloat64: out.set_raw_data(raw_bytes<double>(t.floats)); break;
    case ir::DType::kInt64: out.set_raw_data(raw_bytes<int64_t>(t.ints)); break;
    case ir::DType::kInt32: out.set_raw_data(raw_bytes<int32_t>(t.ints)); break;
    default: {  // kBool: one byte per value, 0 or 1
      std::vector<uint8_t> bits(t.ints.size());
      for (size_t i = 0; i < bits.size(); ++i) bits[i] = t.ints[i] != 0;
      out.set_raw_data(raw_bytes<uint8_t>(bits));
    }
  }
}

void write_value_info(const ir::ValueInfo& v, onnx::ValueInfoProto& out, const std::string& what) {
  out.set_name(v.name);
  auto* tensor = out.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx_dtype(v.dtype, what));
  if (!v.has_shape) return;
  auto* shape = tensor->mutable_shape();
  for (const auto& d : v.dims) {
    auto* dim = shape->add_dim();
    if (d.known()) dim->set_dim_value(d.value);
    else if (!d.param.empty()) dim->set_dim_param(d.param);
  }
}

void write_attribute(const std::string& name, const ir::Attribute& a, onnx::AttributeProto& out,
                     const std::string& what) {
  using Kind = ir::Attribute::Kind;
  out.set_name(name);
  switch (a.kind) {
    case Kind::kFloat: out.set_type(onnx::AttributeProto::FLOAT); out.set_f(a.f); break;
    case Kind::kInt: out.set_type(onnx::AttributeProto::INT); out.set_i(a.i); break;
    case Kind::kString: out.set_type(onnx::AttributeProto::STRING); out.set_s(a.s); break;
    case Kind::kTensor:
      out.set_type(onnx::AttributeProto::TENSOR);
      write_tensor(a.t, *out.mutable_t(), what);
      break;
    case Kind::kFloats:
      out.set_type(onnx::AttributeProto::FLOATS);
      for (float f : a.floats) out.add_floats(f);
      break;
    case Kind::kInts:
      out.set_type(onnx::AttributeProto::INTS);
      for (int64_t i : a.ints) out.add_ints(i);
      break;
    case Kind::kStrings:
      out.set_type(onnx::AttributeProto::STRINGS);
      for (const auto& s : a.strings) out.add_strings(s);
      break;
    case Kind::kOther:
      throw ModelError(what + " is a graph, type or sparse tensor, which the imported model does not keep");
  }
}

void write_node(const ir::Node& n, int64_t opset, onnx::GraphProto& out, std::set<std::string>& produced,
                const std::string& label) {
  // Fused from torch's decomposition at this opset (fuse_layer_norm.h): written back as one.
  if (n.op_type == "LayerNormalization" && n.domain.empty() && opset < 17) {
    for (const ir::Node& part : decompose_layer_norm(n)) write_node(part, opset, out, produced, label);
    return;
  }
  const std::string what = label + ": node '" + n.name + "'";
  auto* node = out.add_node();
  node->set_name(n.name);
  node->set_op_type(n.op_type);
  if (!n.domain.empty()) node->set_domain(n.domain);
  for (const auto& in : n.inputs) node->add_input(in);
  for (const auto& o : n.outputs) {
    node->add_output(o);
    produced.insert(o);
  }
  for (const auto& [name, attr] : n.attrs)
    write_attribute(name, attr, *node->add_attribute(), what + " attribute '" + name + "'");
}

void write_graph(const ir::Graph& g, int64_t opset, onnx::GraphProto& out, const std::string& label) {
  out.set_name(g.name.empty() ? "main_graph" : g.name);  // the checker wants a name
  std::set<std::string> produced;
  for (const auto& n : g.nodes) write_node(n, opset, out, produced, label);
  for (const auto& [name, t] : g.initializers) {
    onnx::TensorProto& tensor = *out.add_initializer();
    write_tensor(t, tensor, label + ": initializer '" + name + "'");
    tensor.set_name(name);  // the map's key is the name the nodes read
  }
  for (const auto& v : g.inputs) write_value_info(v, *out.add_input(), label + ": graph input '" + v.name + "'");
  for (const auto& v : g.outputs) write_value_info(v, *out.add_output(), label + ": graph output '" + v.name + "'");
  // Inferred shapes only: entries of values an edit removed, or of types the IR could not
  // hold, are left out (shape inference recomputes them on import).
  for (const auto& [name, v] : g.value_info) {
    if (!produced.count(name) || v.dtype == ir::DType::kOther) continue;
    write_value_info(v, *out.add_value_info(), label + ": value '" + name + "'");
  }
}

// The default domain at model.opset, and every other domain the nodes use at the newest
// schema version among its nodes (the IR keeps the schema versions, not those opsets).
void write_opsets(const ir::Model& model, onnx::ModelProto& out) {
  std::map<std::string, int64_t> domains;
  for (const auto& n : model.graph.nodes) {
    if (n.domain.empty() || n.domain == "ai.onnx") continue;
    int64_t& v = domains[n.domain];
    v = std::max<int64_t>({v, n.since_version, 1});
  }
  auto* onnx_domain = out.add_opset_import();
  onnx_domain->set_domain("");
  onnx_domain->set_version(model.opset);
  for (const auto& [domain, version] : domains) {
    auto* entry = out.add_opset_import();
    entry->set_domain(domain);
    entry->set_version(version);
  }
}

}  // namespace

void save_model(const ir::Model& model, const std::string& out_path) {
  const std::string label = out_path;
  if (model.opset < 1) throw ModelError(label + ": the model has no default-domain opset to write");
  onnx::ModelProto out;
  // Initializers are not written as graph inputs, which needs ir_version 4; 7 is what
  // the opset-13 exporters write. Newer opsets need newer versions.
  out.set_ir_version(std::min<int64_t>(std::max<int64_t>({model.ir_version, 7, min_ir_version(model.opset)}),
                                       onnx::Version::IR_VERSION));
  out.set_producer_name(model.producer_name.empty() ? "deeplocalize" : model.producer_name);
  out.set_producer_version(model.producer_version);
  for (const auto& [key, value] : model.metadata) {
    auto* entry = out.add_metadata_props();
    entry->set_key(key);
    entry->set_value(value);
  }
  write_opsets(model, out);
  write_graph(model.graph, model.opset, *out.mutable_graph(), label);
  // A model the edits broke is refused here, not written for the user to find out.
  try {
    onnx::checker::check_model(out);
  } catch (const std::exception& e) {
    throw ModelError(label + ": the model to write is not valid ONNX: " + detail::one_line(e.what()));
  }
  detail::write_model_atomically(out, out_path);
}

}  // namespace dl::conv
