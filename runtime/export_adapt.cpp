#include "runtime/export_adapt.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "converter/errors.h"
#include "runtime/graph.h"
#include "runtime/param_roles.h"
#include "runtime/registry.h"

namespace dl::rt {
namespace {

bool is_float(ir::DType t) { return t == ir::DType::kFloat32 || t == ir::DType::kFloat64; }

std::string quoted_list(const std::vector<std::string>& names, size_t shown = 4) {
  std::string s;
  for (size_t k = 0; k < names.size() && k < shown; ++k) s += (k ? ", '" : "'") + names[k] + "'";
  if (names.size() > shown) s += " and " + std::to_string(names.size() - shown) + " more";
  return s;
}

std::string dims_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + std::to_string(v[k]);
  return s + "]";
}

std::string source_of(const ir::Model& m) { return m.path.empty() ? "model" : m.path; }

// Identity nodes reading a float initializer: the node goes, its output becomes a copy.
std::vector<std::string> untie_aliases(ir::Graph& g) {
  std::set<std::string> graph_outputs;
  for (const ir::ValueInfo& o : g.outputs) graph_outputs.insert(o.name);
  std::vector<std::string> untied;
  std::vector<ir::Node> kept;
  kept.reserve(g.nodes.size());
  for (ir::Node& n : g.nodes) {
    if (n.op_type == "Identity" && n.domain.empty() && n.inputs.size() == 1 && n.outputs.size() == 1 &&
        !n.outputs[0].empty() && !graph_outputs.count(n.outputs[0])) {
      auto it = g.initializers.find(n.inputs[0]);
      if (it != g.initializers.end() && is_float(it->second.dtype) && !g.initializers.count(n.outputs[0])) {
        ir::TensorData copy = it->second;
        copy.name = n.outputs[0];
        g.initializers.emplace(copy.name, std::move(copy));
        untied.push_back(n.outputs[0] + "\t" + n.inputs[0]);
        continue;
      }
    }
    kept.push_back(std::move(n));
  }
  g.nodes = std::move(kept);
  return untied;
}

// The constant value of `name` when an initializer or a Constant node holds it.
ir::TensorData* constant_value(ir::Graph& g, const std::string& name) {
  auto it = g.initializers.find(name);
  if (it != g.initializers.end()) return &it->second;
  for (ir::Node& n : g.nodes)
    if (n.op_type == "Constant" && n.outputs.size() == 1 && n.outputs[0] == name) {
      auto a = n.attrs.find("value");
      return a != n.attrs.end() && a->second.kind == ir::Attribute::Kind::kTensor ? &a->second.t : nullptr;
    }
  return nullptr;
}

// Values computed from the graph inputs (not only from constants).
std::set<std::string> input_dependent(const ir::Graph& g) {
  std::set<std::string> dep;
  for (const ir::ValueInfo& in : g.inputs) dep.insert(in.name);
  for (const ir::Node& n : g.nodes)
    if (std::any_of(n.inputs.begin(), n.inputs.end(), [&](const std::string& i) { return dep.count(i) > 0; }))
      dep.insert(n.outputs.begin(), n.outputs.end());
  return dep;
}

// Reshape nodes of batch-dependent data whose constant shape starts with the fixed batch.
std::vector<std::string> rewrite_batch_reshapes(ir::Graph& g, int64_t batch) {
  const std::set<std::string> dep = input_dependent(g);
  std::vector<std::string> changed;
  for (ir::Node& n : g.nodes) {
    if (n.op_type != "Reshape" || n.inputs.size() < 2 || !dep.count(n.inputs[0])) continue;
    ir::TensorData* shape = constant_value(g, n.inputs[1]);
    if (!shape || shape->dtype != ir::DType::kInt64 || shape->ints.size() < 2 || shape->ints[0] != batch) continue;
    auto az = n.attrs.find("allowzero");
    const bool allow_zero = az != n.attrs.end() && az->second.i != 0;
    const bool has_minus_one = std::count(shape->ints.begin() + 1, shape->ints.end(), int64_t(-1)) > 0;
    if (allow_zero && has_minus_one) continue;  // neither 0 nor -1 can stand for the batch: the check reports it
    ir::TensorData fixed = *shape;
    fixed.ints[0] = allow_zero ? -1 : 0;  // 0: "copy dimension 0 of the data", the batch
    fixed.name = n.name + "/rebatched_shape";
    while (g.initializers.count(fixed.name)) fixed.name += "_";
    changed.push_back("'" + n.name + "' (" + dims_str(shape->ints) + " -> " + dims_str(fixed.ints) + ")");
    n.inputs[1] = fixed.name;
    g.initializers.emplace(fixed.name, std::move(fixed));
  }
  return changed;
}

// The node that bakes the batch in, found on the graph planned at the fixed batch (which
// works, it is the export's own): a Reshape of batch-dependent data whose shape, computed
// from constants only (Concat of Unsqueeze'd constants without constant folding), starts
// with the fixed batch. "" when there is none.
std::string baked_reshape(const ir::Model& m, int64_t fixed) {
  const std::set<std::string> dep = input_dependent(m.graph);
  GraphOptions go;
  go.batch_size = fixed;
  std::unique_ptr<ExecutionGraph> g;
  try {
    g = std::make_unique<ExecutionGraph>(m, go);
  } catch (const Error&) {
    return "";
  }
  for (const ir::Node& n : m.graph.nodes) {
    if (n.op_type != "Reshape" || n.inputs.size() < 2 || !dep.count(n.inputs[0]) || dep.count(n.inputs[1])) continue;
    const int s = g->slot_of(n.inputs[1]);
    if (s < 0) continue;
    const Tensor& shape = g->value(s);
    if (shape.dtype() != DType::kInt64 || shape.numel() < 1 || shape.i()[0] != fixed) continue;
    return "node '" + n.name + "' (Reshape) bakes the batch size in: its shape " +
           shape_str(Shape(shape.i(), shape.i() + shape.numel())) + " is computed from constants";
  }
  return "";
}

// Plans the forward graph for batch `b`: every graph output must then lead with b.
void check_rebatched(const ir::Model& m, int64_t b, const std::string& fixed_what, int64_t fixed) {
  const std::string advice = training_export_advice(
      [&] {
        std::vector<std::string> v;
        for (const ir::ValueInfo& i : m.graph.inputs) v.push_back(i.name);
        return v;
      }(),
      [&] {
        std::vector<std::string> v;
        for (const ir::ValueInfo& o : m.graph.outputs) v.push_back(o.name);
        return v;
      }());
  const std::string head = source_of(m) + ": " + fixed_what + " has a fixed batch dimension of " +
                           std::to_string(fixed) + " (exported without dynamic_axes), and ";
  GraphOptions go;
  go.batch_size = b;
  std::unique_ptr<ExecutionGraph> graph;
  try {
    graph = std::make_unique<ExecutionGraph>(m, go);
  } catch (const ShapeError& e) {
    const std::string culprit = baked_reshape(m, fixed);
    throw ModelError(head + (culprit.empty() ? "the model does not run with another batch size: " + std::string(e.what())
                                             : culprit + " (with a batch of " + std::to_string(b) + ": " + e.what() + ")") +
                     ". Re-export with a dynamic batch: " + advice);
  }
  for (size_t k = 0; k < graph->output_names().size(); ++k) {
    const Tensor& out = graph->output(k);
    if (out.rank() > 0 && out.dim(0) == b) continue;
    std::string msg = head + "with a batch of " + std::to_string(b) + " the output '" + graph->output_names()[k] +
                      "' has shape " + shape_str(out.shape()) + ", not " + std::to_string(b) + " rows";
    const std::string culprit = baked_reshape(m, fixed);
    if (!culprit.empty()) throw ModelError(msg + ": " + culprit + ". Re-export with a dynamic batch: " + advice);
    // The first step that takes a float value leading with b and puts out one that does not
    // (a Reshape to [1, -1]) is where the batch size is baked in. (Only when the outputs are
    // wrong: a Transpose to time-major legitimately moves the batch.)
    for (const Step& st : graph->steps()) {
      auto leads = [&](int s) {
        const Tensor& t = graph->value(s);
        return t.dtype() == DType::kFloat32 && t.rank() > 0 && t.dim(0) == b;
      };
      const bool in = std::any_of(st.inputs.begin(), st.inputs.end(), [&](int s) { return s >= 0 && leads(s); });
      auto bad = std::find_if(st.outputs.begin(), st.outputs.end(), [&](int s) {
        return s >= 0 && graph->value(s).dtype() == DType::kFloat32 && !leads(s);
      });
      if (!in || bad == st.outputs.end()) continue;
      msg += ": node '" + st.node->name + "' (" + st.node->op_type + ") bakes the batch size in (its output has shape " +
             shape_str(graph->value(*bad).shape()) + ")";
      break;
    }
    throw ModelError(msg + ". Re-export with a dynamic batch: " + advice);
  }
}

void rebatch(ir::Model& m, ExportAdaptation& a) {
  ir::Graph& g = m.graph;
  int64_t fixed = -1;
  for (ir::ValueInfo& in : g.inputs) {
    if (!in.has_shape || in.dims.empty() || !in.dims[0].known()) continue;
    if (fixed >= 0 && in.dims[0].value != fixed) return;  // inputs disagree: dimension 0 is not one batch
    fixed = in.dims[0].value;
  }
  if (fixed < 0) return;
  for (ir::ValueInfo& in : g.inputs)
    if (in.has_shape && !in.dims.empty() && in.dims[0].known()) {
      in.dims[0] = ir::Dim{-1, "batch"};
      a.rebatched.push_back(in.name);
    }
  for (ir::ValueInfo& out : g.outputs)
    if (out.has_shape && !out.dims.empty() && out.dims[0].value == fixed) out.dims[0] = ir::Dim{-1, "batch"};
  // Inferred intermediate shapes were for the fixed batch: stale now.
  for (auto& [name, info] : g.value_info)
    if (info.has_shape && !info.dims.empty() && info.dims[0].value == fixed) info.dims[0] = ir::Dim{-1, "batch"};
  const std::vector<std::string> reshapes = rewrite_batch_reshapes(g, fixed);
  const std::string what = "the graph input " + quoted_list(a.rebatched);
  check_rebatched(m, fixed == 2 ? 3 : 2, what, fixed);  // small: a fixed batch may be large
  std::string note = what + " has a fixed batch dimension of " + std::to_string(fixed) +
                     " in the file (exported without dynamic_axes): dimension 0 is taken as the batch and the model "
                     "trains with batches of --batch-size";
  if (!reshapes.empty()) {
    note += "; the batch size baked into Reshape";
    for (size_t k = 0; k < reshapes.size(); ++k) note += (k ? ", " : " ") + reshapes[k];
    note += " was rewritten";
  }
  a.notes.push_back(note);
}

bool pytorch(const ir::Model& m) { return m.producer_name.find("pytorch") != std::string::npos; }

void eval_mode_notes(const ir::Model& m, ExportAdaptation& a) {
  std::vector<std::string> inference_bn, folded;
  bool dropout = false;
  for (const ir::Node& n : m.graph.nodes) {
    if (n.op_type == "Dropout") dropout = true;
    if (n.op_type == "BatchNormalization") {
      auto tm = n.attrs.find("training_mode");
      const bool outputs_stats = n.outputs.size() > 1 && !n.outputs[1].empty();
      const bool training = n.since_version >= 14 ? tm != n.attrs.end() && tm->second.i != 0 : outputs_stats;
      if (!training) inference_bn.push_back(n.name);
    }
    // torch names the tensors it computes at export "onnx::<Op>_<id>"; a Conv weight so named,
    // with a bias, is a convolution with its BatchNorm folded in.
    if (n.op_type == "Conv" && n.inputs.size() >= 3 && !n.inputs[2].empty() && pytorch(m) &&
        n.inputs[1].rfind("onnx::Conv_", 0) == 0 && m.graph.initializers.count(n.inputs[1]))
      folded.push_back(n.name);
  }
  if (!inference_bn.empty())
    a.notes.push_back(std::to_string(inference_bn.size()) + " BatchNormalization node(s) (" +
                      quoted_list(inference_bn) +
                      ") are in inference mode (training_mode=0: an eval-mode export); they are trained as PyTorch's "
                      "train mode and Keras' fit do, normalising with each batch's statistics and updating the running "
                      "mean and variance");
  if (!folded.empty())
    a.notes.push_back(std::to_string(folded.size()) + " Conv node(s) (" + quoted_list(folded) +
                      ") have weights torch computed at export ('onnx::Conv_*'): an eval-mode export folded their "
                      "BatchNorm into the convolution. That cannot be undone: they train as plain convolutions with a "
                      "bias and no normalisation, which trains differently from the PyTorch model, and the diagnosis "
                      "sees no BatchNorm layers there");
  a.eval_mode = !inference_bn.empty() || !folded.empty();
  if (a.eval_mode && !dropout)
    a.notes.push_back("the model has no Dropout node: an eval-mode export removes Dropout, so any the PyTorch model had "
                      "is absent from training here");
}

// Initializers that look like weights but no op trains (param_roles.h).
void constant_notes(const ir::Model& m, ExportAdaptation& a) {
  std::vector<std::unique_ptr<Op>> ops;
  try {
    for (const ir::Node& n : m.graph.nodes) ops.push_back(make_op(n));
  } catch (const Error&) {
    return;  // an op the runtime cannot run: planning the graph reports it, naming the node
  }
  const std::map<std::string, ModelParam> params = model_params(m.graph, ops);
  // Trainable parameters must start finite (NaN is rejected on import for every
  // initializer; a constant may hold Inf: an attention mask's -inf).
  for (const auto& [name, p] : params) {
    if (!p.trainable()) continue;
    const std::vector<float>& v = m.graph.initializers.at(name).floats;
    for (size_t k = 0; k < v.size(); ++k)
      if (std::isinf(v[k]))
        throw ModelError(m.path + ": initializer '" + name + "' holds Inf at flat index " + std::to_string(k) +
                         " (initial weights must be finite)");
  }
  std::vector<std::string> masks;
  for (const auto& [name, data] : m.graph.initializers)
    if (is_mask(data) && !params.count(name)) masks.push_back(name);
  if (!masks.empty())
    a.notes.push_back(std::to_string(masks.size()) + " float initializer(s) (" + quoted_list(masks) +
                      ") hold -inf: taken as masks, constants whose -inf are masked positions where only softmaxes "
                      "read them (an attention or action mask), not trained");
  a.constants = constant_initializers(m.graph, ops, params);
  if (!a.constants.empty())
    a.notes.push_back(std::to_string(a.constants.size()) + " float initializer(s) (" + quoted_list(a.constants) +
                      ") enter element-wise arithmetic but are no op's weight, bias or scale, so they are treated as "
                      "constants and not trained");
}

}  // namespace

std::string training_export_advice(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs) {
  std::string axes;
  for (const std::string& n : inputs) axes += (axes.empty() ? "'" : ", '") + n + "': {0: 'batch'}";
  for (const std::string& n : outputs) axes += (axes.empty() ? "'" : ", '") + n + "': {0: 'batch'}";
  return "export for training with torch.onnx.export(model.train(), x, path, "
         "training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False, dynamic_axes={" +
         axes + "}) or scripts/export_torch.py";
}

ExportAdaptation adapt_export(ir::Model& m) {
  ExportAdaptation a;
  eval_mode_notes(m, a);
  const std::vector<std::string> untied = untie_aliases(m.graph);
  std::string pairs;  // "'copy' from 'source'", the first three
  for (size_t k = 0; k < untied.size(); ++k) {
    const size_t tab = untied[k].find('\t');
    a.untied.push_back(untied[k].substr(0, tab));
    if (k < 3) pairs += (k ? ", '" : "'") + untied[k].substr(0, tab) + "' from '" + untied[k].substr(tab + 1) + "'";
  }
  if (untied.size() > 3) pairs += " and " + std::to_string(untied.size() - 3) + " more";
  if (!untied.empty())
    a.notes.push_back(std::to_string(untied.size()) + " Identity alias(es) of deduplicated initializers were untied (" +
                      pairs +
                      "): an eval-mode export merges initializers with equal values, but the PyTorch model had "
                      "separate parameters, so each alias now trains as its own copy");
  rebatch(m, a);
  constant_notes(m, a);
  if ((a.eval_mode && pytorch(m)) || !a.rebatched.empty()) {  // the advice is torch's
    std::vector<std::string> ins, outs;
    for (const ir::ValueInfo& i : m.graph.inputs) ins.push_back(i.name);
    for (const ir::ValueInfo& o : m.graph.outputs) outs.push_back(o.name);
    a.notes.push_back("to train the model as PyTorch trains it, " + training_export_advice(ins, outs));
  }
  m.warnings.insert(m.warnings.end(), a.notes.begin(), a.notes.end());
  m.rewritten = m.rewritten || !a.untied.empty() || !a.rebatched.empty();
  return a;
}

}  // namespace dl::rt
