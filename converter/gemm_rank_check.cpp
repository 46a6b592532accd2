// The Gemm rank check for old models (see onnx_util.h). ONNX 1.12 trusts the rank of
// Gemm's A and B in two places that run before the runtime's own checks: Gemm-6's shape
// inference and the version converter's Gemm 6->7 adapter read their first two
// dimensions unchecked (a rank-0 A is a SIGSEGV, found by fuzzing; rank 1 reads out of
// bounds). Both run only for models at default opset 6 or below. For those, the ranks
// ONNX would see (declared, or inferred from the nodes before) come from shape inference
// on a copy in which every Gemm is a Flatten of its A (rank 2 too, without that bug); a
// Gemm whose A or B is known not to be 2-D is refused, naming it. Unknown ranks are
// safe: both places skip or reject those.
#include <onnx/shape_inference/implementation.h>

#include <exception>
#include <map>
#include <string>

#include "converter/errors.h"
#include "converter/onnx_util.h"

namespace dl::conv::detail {
namespace {

using Ranks = std::map<std::string, int>;

bool is_gemm(const onnx::NodeProto& node) {
  return node.op_type() == "Gemm" && (node.domain().empty() || node.domain() == "ai.onnx");
}

void add_ranks(const onnx::GraphProto& g, Ranks& ranks) {
  auto add = [&ranks](const onnx::ValueInfoProto& v) {
    if (v.type().has_tensor_type() && v.type().tensor_type().has_shape())
      ranks[v.name()] = v.type().tensor_type().shape().dim_size();
  };
  for (const auto& v : g.input()) add(v);
  for (const auto& v : g.value_info()) add(v);
  for (const auto& v : g.output()) add(v);
  for (const auto& t : g.initializer()) ranks[t.name()] = t.dims_size();
}

bool has_gemm(const onnx::GraphProto& g) {
  for (const auto& node : g.node()) {
    if (is_gemm(node)) return true;
    for (const auto& a : node.attribute()) {
      if (a.has_g() && has_gemm(a.g())) return true;
      for (const auto& sub : a.graphs())
        if (has_gemm(sub)) return true;
    }
  }
  return false;
}

void gemms_to_flatten(onnx::GraphProto& g) {
  for (auto& node : *g.mutable_node()) {
    if (is_gemm(node)) {
      node.set_op_type("Flatten");
      if (node.input_size() > 1) node.mutable_input()->DeleteSubrange(1, node.input_size() - 1);
      node.clear_attribute();
      onnx::AttributeProto* axis = node.add_attribute();
      axis->set_name("axis");
      axis->set_type(onnx::AttributeProto::INT);
      axis->set_i(1);
      continue;
    }
    for (auto& a : *node.mutable_attribute()) {
      if (a.has_g()) gemms_to_flatten(*a.mutable_g());
      for (auto& sub : *a.mutable_graphs()) gemms_to_flatten(sub);
    }
  }
}

// `original` and `inferred` have the same nodes (Gemms aside, the same attributes).
void check_gemm_ranks(const onnx::GraphProto& original, const onnx::GraphProto& inferred, Ranks ranks,
                      const std::string& label) {
  add_ranks(inferred, ranks);
  for (int i = 0; i < original.node_size() && i < inferred.node_size(); ++i) {
    const onnx::NodeProto& node = original.node(i);
    if (is_gemm(node)) {
      for (int k = 0; k < 2 && k < node.input_size(); ++k) {
        auto r = ranks.find(node.input(k));
        if (node.input(k).empty() || r == ranks.end() || r->second == 2) continue;
        throw ModelError(label + ": node '" + node.name() + "' (Gemm): " + (k == 0 ? "A" : "B") + " '" +
                         node.input(k) + "' has rank " + std::to_string(r->second) + "; A and B must be 2-D");
      }
      continue;
    }
    const onnx::NodeProto& same = inferred.node(i);
    for (int k = 0; k < node.attribute_size() && k < same.attribute_size(); ++k) {
      const auto& a = node.attribute(k);
      const auto& b = same.attribute(k);
      if (a.has_g() && b.has_g()) check_gemm_ranks(a.g(), b.g(), ranks, label);
      for (int j = 0; j < a.graphs_size() && j < b.graphs_size(); ++j)
        check_gemm_ranks(a.graphs(j), b.graphs(j), ranks, label);
    }
  }
}

// The model without the values of its large floating-point initializers (inference
// needs only their dims), so that the copy stays small.
onnx::ModelProto copy_for_inference(const onnx::ModelProto& model) {
  onnx::ModelProto copy;
  copy.set_ir_version(model.ir_version());
  *copy.mutable_opset_import() = model.opset_import();
  *copy.mutable_functions() = model.functions();
  const onnx::GraphProto& from = model.graph();
  onnx::GraphProto& to = *copy.mutable_graph();
  *to.mutable_node() = from.node();
  *to.mutable_input() = from.input();
  *to.mutable_output() = from.output();
  *to.mutable_value_info() = from.value_info();
  for (const auto& t : from.initializer()) {
    const bool floating = t.data_type() == onnx::TensorProto::FLOAT || t.data_type() == onnx::TensorProto::DOUBLE ||
                          t.data_type() == onnx::TensorProto::FLOAT16;
    const size_t bytes = t.raw_data().size() + 4 * size_t(t.float_data_size()) + 8 * size_t(t.double_data_size()) +
                         4 * size_t(t.int32_data_size());
    onnx::TensorProto* c = to.add_initializer();
    if (!floating || bytes <= 4096) {
      *c = t;
      continue;
    }
    c->set_name(t.name());
    c->set_data_type(t.data_type());
    *c->mutable_dims() = t.dims();
  }
  return copy;
}

}  // namespace

void check_old_gemm_ranks(const onnx::ModelProto& model, const std::string& label) {
  if (!has_gemm(model.graph())) return;
  onnx::ModelProto copy = copy_for_inference(model);
  gemms_to_flatten(*copy.mutable_graph());
  try {
    onnx::shape_inference::InferShapes(copy);
  } catch (const std::exception&) {
    // What inference could not give stays unknown: the declared ranks still count.
  }
  check_gemm_ranks(model.graph(), copy.graph(), Ranks{}, label);
}

}  // namespace dl::conv::detail
