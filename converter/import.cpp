// The import pipeline: parse, validate, upgrade, infer shapes, build the IR.
#include <cmath>
#include "converter/import.h"

#include <onnx/checker.h>
#include <onnx/common/assertions.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include <set>
#include <utility>

#include "converter/errors.h"
#include "converter/fuse_layer_norm.h"
#include "converter/onnx_util.h"

namespace dl::conv {
namespace {

using detail::one_line;

bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

int64_t default_opset(const onnx::ModelProto& model, const std::string& label) {
  for (const auto& entry : model.opset_import()) {
    if (!is_default_domain(entry.domain())) continue;
    const int64_t version = entry.version();
    if (version < 1) throw ModelError(label + ": invalid opset " + std::to_string(version) + " for the ONNX domain");
    if (version > max_known_opset()) {
      throw ModelError(label + ": opset " + std::to_string(version) + " is newer than this deeplocalize supports (max " +
                       std::to_string(max_known_opset()) + ")");
    }
    return version;
  }
  throw ModelError(label + ": the model imports no opset for the default ONNX domain");
}

// Checked before onnx::checker so that the errors are ours, naming the initializer.
void validate_tensors(const onnx::GraphProto& graph, const std::string& label) {
  for (const auto& t : graph.initializer()) detail::validate_tensor(t, label + ": initializer '" + t.name() + "'");
  if (graph.sparse_initializer_size() > 0) {
    throw ModelError(label + ": sparse initializer '" + graph.sparse_initializer(0).values().name() +
                     "' is not supported");
  }
  for (const auto& node : graph.node()) {
    for (const auto& attr : node.attribute()) {
      if (attr.has_t() && detail::has_external_data(attr.t())) {
        throw ModelError(label + ": node '" + node.name() + "' attribute '" + attr.name() +
                         "' keeps its tensor in an external file, which deeplocalize does not support");
      }
    }
  }
}

// ONNX's shape inference divides by some attributes without checking them (a stride
// of 0 is a SIGFPE in onnx 1.12's convPoolShapeInference, found by fuzzing): refuse
// values below 1 first, naming the node. Subgraphs (If, Loop, Scan bodies) too.
void validate_window_attributes(const onnx::GraphProto& graph, const std::string& label) {
  static const std::set<std::string> windowed = {"Conv",    "ConvTranspose", "ConvInteger", "QLinearConv",
                                                 "MaxPool", "AveragePool",   "LpPool",      "MaxUnpool",
                                                 "MaxRoiPool", "DeformConv", "Col2Im"};
  for (const auto& node : graph.node()) {
    const bool onnx_op = is_default_domain(node.domain());
    for (const auto& a : node.attribute()) {
      const bool ints = onnx_op && windowed.count(node.op_type()) &&
                        (a.name() == "strides" || a.name() == "dilations" || a.name() == "kernel_shape");
      const bool one = onnx_op && ((a.name() == "blocksize" && (node.op_type() == "DepthToSpace" ||
                                                                node.op_type() == "SpaceToDepth")) ||
                                   (a.name() == "group" && windowed.count(node.op_type())));
      bool bad = one && a.i() < 1;
      for (int64_t v : a.ints()) bad = bad || (ints && v < 1);
      if (bad) {
        std::string value = one ? std::to_string(a.i()) : "[";
        if (!one) {
          for (int k = 0; k < a.ints_size(); ++k) value += (k ? ", " : "") + std::to_string(a.ints(k));
          value += "]";
        }
        throw ModelError(label + ": node '" + node.name() + "' (" + node.op_type() + ") attribute '" + a.name() +
                         "' is " + value + ": " + (one ? "it must be" : "every value must be") + " at least 1");
      }
      if (a.has_g()) validate_window_attributes(a.g(), label);
      for (const auto& g : a.graphs()) validate_window_attributes(g, label);
    }
  }
}

void run_checker(const onnx::ModelProto& model, const std::string& label) {
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    throw ModelError(label + ": invalid ONNX model: " + one_line(e.what()));
  }
}

// The version converter rebuilds the model through ONNX's IR and can fail on valid
// models (see NOTES.md); a failed or unusable conversion keeps the original, and the
// ops reject the versions they cannot run, by name.
bool try_upgrade(onnx::ModelProto& model, int64_t target, const std::string& label) {
  try {
    onnx::ModelProto converted = onnx::version_conversion::ConvertVersion(model, static_cast<int>(target));
    // Adapters that replace or add nodes (Scatter -> ScatterElements, Upsample ->
    // Resize + Constant) leave them unnamed.
    detail::validate_and_sort_graph(*converted.mutable_graph(), label);
    onnx::checker::check_model(converted);
    model = std::move(converted);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// Shape inference adds value_info for intermediate values. A conflict between what
// it infers and what the file declares means the file contradicts itself: a model
// error. Anything else is a limit of ONNX's inference, not of the model: import
// continues without inferred shapes (the runtime infers its own).
void infer_shapes(onnx::ModelProto& model, ir::Model& out, const std::string& label) {
  onnx::GraphProto& graph = *model.mutable_graph();
  const int declared = graph.value_info_size();
  std::string failure;
  try {
    onnx::shape_inference::InferShapes(model);
    return;
  } catch (const std::exception& e) {
    failure = one_line(e.what());
  }
  const bool contradiction = failure.find("existing shape differ") != std::string::npos ||
                             failure.find("differs from existing") != std::string::npos ||
                             failure.find("type case mismatch") != std::string::npos;
  if (contradiction) {
    throw ModelError(label + ": a declared type or shape contradicts what the operators produce: " + failure);
  }
  graph.mutable_value_info()->DeleteSubrange(declared, graph.value_info_size() - declared);
  out.warnings.push_back("ONNX shape inference failed, continuing without inferred shapes: " + failure);
}

ir::ValueInfo convert_value_info(const onnx::ValueInfoProto& v) {
  ir::ValueInfo out;
  out.name = v.name();
  if (!v.type().has_tensor_type()) {
    out.dtype = ir::DType::kOther;
    return out;
  }
  const auto& tensor = v.type().tensor_type();
  out.dtype = detail::dtype_from_onnx(tensor.elem_type());
  if (tensor.has_shape()) {
    out.has_shape = true;
    for (const auto& d : tensor.shape().dim()) {
      ir::Dim dim;
      if (d.has_dim_value()) dim.value = d.dim_value();
      if (d.has_dim_param()) dim.param = d.dim_param();
      out.dims.push_back(std::move(dim));
    }
  }
  return out;
}

ir::Attribute convert_attribute(onnx::AttributeProto& a, const std::string& what) {
  using Kind = ir::Attribute::Kind;
  ir::Attribute out;
  switch (a.type()) {
    case onnx::AttributeProto::FLOAT: out.kind = Kind::kFloat; out.f = a.f(); break;
    case onnx::AttributeProto::INT: out.kind = Kind::kInt; out.i = a.i(); break;
    case onnx::AttributeProto::STRING: out.kind = Kind::kString; out.s = a.s(); break;
    case onnx::AttributeProto::FLOATS: out.kind = Kind::kFloats; out.floats.assign(a.floats().begin(), a.floats().end()); break;
    case onnx::AttributeProto::INTS: out.kind = Kind::kInts; out.ints.assign(a.ints().begin(), a.ints().end()); break;
    case onnx::AttributeProto::STRINGS: out.kind = Kind::kStrings; out.strings.assign(a.strings().begin(), a.strings().end()); break;
    case onnx::AttributeProto::TENSOR:
      out.kind = Kind::kTensor;
      // A tensor the IR cannot hold (float16, string) is left for the op to reject
      // by name, like an unsupported operator.
      if (detail::dtype_from_onnx(a.t().data_type()) == ir::DType::kOther) {
        out.t.name = a.t().name();
        out.t.dtype = ir::DType::kOther;
        out.t.dims.assign(a.t().dims().begin(), a.t().dims().end());
      } else {
        out.t = detail::tensor_from_proto(*a.mutable_t(), what);
      }
      break;
    default: out.kind = Kind::kOther; break;  // graphs, tensor lists, sparse tensors, types
  }
  return out;
}

void build_ir(onnx::ModelProto& model, ir::Model& out, const std::string& label) {
  out.ir_version = model.ir_version();
  out.producer_name = model.producer_name();
  out.producer_version = model.producer_version();
  for (const auto& entry : model.metadata_props()) out.metadata[entry.key()] = entry.value();

  std::map<std::string, int> opsets;  // domain -> version
  for (const auto& entry : model.opset_import()) {
    opsets[is_default_domain(entry.domain()) ? "" : entry.domain()] = static_cast<int>(entry.version());
  }

  onnx::GraphProto& graph = *model.mutable_graph();
  ir::Graph& g = out.graph;
  g.name = graph.name();
  for (auto& t : *graph.mutable_initializer()) {
    const std::string name = t.name();
    const ir::TensorData& data =
        g.initializers.emplace(name, detail::tensor_from_proto(t, label + ": initializer '" + name + "'"))
            .first->second;
    // A NaN initializer is a corrupt (or already diverged) model, not something training
    // could diagnose. Inf is legitimate in a constant (an attention mask's -inf); a
    // trainable parameter holding it is rejected once the ops' roles are known
    // (rt::adapt_export, runtime/export_adapt.h).
    for (size_t k = 0; k < data.floats.size(); ++k)
      if (std::isnan(data.floats[k]))
        throw ModelError(label + ": initializer '" + name + "' holds NaN at flat index " + std::to_string(k) +
                         " (initializers must not hold NaN)");
  }
  for (const auto& v : graph.input()) {
    if (!g.initializers.count(v.name())) g.inputs.push_back(convert_value_info(v));
  }
  for (const auto& v : graph.output()) g.outputs.push_back(convert_value_info(v));
  for (const auto& v : graph.value_info()) g.value_info[v.name()] = convert_value_info(v);

  g.nodes.reserve(static_cast<size_t>(graph.node_size()));
  for (auto& node : *graph.mutable_node()) {
    ir::Node n;
    n.name = node.name();
    n.op_type = node.op_type();
    n.domain = is_default_domain(node.domain()) ? "" : node.domain();
    auto opset = opsets.find(n.domain);
    if (opset != opsets.end()) {
      const auto* schema = onnx::OpSchemaRegistry::Schema(n.op_type, opset->second, n.domain);
      if (schema) n.since_version = schema->SinceVersion();
    }
    n.inputs.assign(node.input().begin(), node.input().end());
    n.outputs.assign(node.output().begin(), node.output().end());
    for (auto& a : *node.mutable_attribute()) {
      n.attrs[a.name()] = convert_attribute(a, label + ": node '" + n.name + "' attribute '" + a.name() + "'");
    }
    g.nodes.push_back(std::move(n));
  }
}

ir::Model import_parsed(onnx::ModelProto& model, const std::string& label, const ImportOptions& options) {
  ir::Model out;
  out.path = label;
  out.original_opset = out.opset = default_opset(model, label);
  detail::validate_and_sort_graph(*model.mutable_graph(), label);  // names nodes first
  validate_tensors(model.graph(), label);
  validate_window_attributes(model.graph(), label);
  if (options.run_checker) run_checker(model, label);
  // ONNX's Gemm-6 shape inference and its converter's Gemm 6->7 adapter trust Gemm's ranks.
  if (out.opset <= 6 && (options.upgrade_opset || options.infer_shapes)) detail::check_old_gemm_ranks(model, label);
  if (options.upgrade_opset && out.opset < kCanonicalOpset && try_upgrade(model, kCanonicalOpset, label)) {
    out.opset = kCanonicalOpset;
  }
  if (options.infer_shapes) infer_shapes(model, out, label);
  build_ir(model, out, label);
  for (std::string& note : fuse_layer_norms(out.graph)) out.warnings.push_back(std::move(note));
  return out;
}

}  // namespace

int64_t max_known_opset() {
  static const int64_t version =
      onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at(onnx::ONNX_DOMAIN).second;
  return version;
}

ir::Model import_model(const std::string& path, const ImportOptions& options) {
  onnx::ModelProto model;
  {
    const std::string bytes = detail::read_file(path, options.max_file_bytes);  // freed before the IR is built
    model = detail::parse_model(bytes, path);
  }
  return import_parsed(model, path, options);
}

ir::Model import_model_bytes(const std::string& bytes, const std::string& label, const ImportOptions& options) {
  onnx::ModelProto model = detail::parse_model(bytes, label);
  return import_parsed(model, label, options);
}

}  // namespace dl::conv
