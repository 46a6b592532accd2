#include "cli/model_view.h"

#include <fmt/format.h>

#include <map>
#include <memory>

#include "cli/model_blocks.h"
#include "io/text_escape.h"
#include "runtime/graph.h"
#include "runtime/param_roles.h"

namespace dl::cli {
namespace {

// Names, paths and strings come from the model file: shown visibly, never as the
// terminal escape sequences or invalid UTF-8 they may hold (io/text_escape.h).
using io::visible;

std::string visible_join(const std::vector<std::string>& names) {
  std::string s;
  for (size_t k = 0; k < names.size(); ++k) s += (k ? ", " : "") + visible(names[k]);
  return s;
}

// Plans the graph at batch sizes 1 and 2: a dimension that differs between the two
// follows the batch and is printed as N.
struct PlannedPair {
  std::unique_ptr<rt::ExecutionGraph> one, two;
};

PlannedPair plan_pair(const ir::Model& model) {
  PlannedPair p;
  rt::GraphOptions o;
  o.budget = std::make_shared<rt::MemoryBudget>();
  o.batch_size = 1;
  p.one = std::make_unique<rt::ExecutionGraph>(model, o);
  o.batch_size = 2;
  p.two = std::make_unique<rt::ExecutionGraph>(p.one->shared_model(), o, p.one->store());
  return p;
}

std::string shape_of(const PlannedPair& p, int slot) {
  const rt::Shape& a = p.one->value(slot).shape();
  const rt::Shape& b = p.two->value(slot).shape();
  std::string s = "[";
  for (size_t k = 0; k < a.size(); ++k) {
    if (k) s += ", ";
    s += (k < b.size() && a[k] != b[k]) ? (a[k] == 1 ? std::string("N") : fmt::format("{}N", a[k]))
                                        : std::to_string(a[k]);
  }
  return s + "]";
}

std::string attr_str(const ir::Attribute& a) {
  using K = ir::Attribute::Kind;
  switch (a.kind) {
    case K::kFloat: return fmt::format("{:g}", a.f);
    case K::kInt: return std::to_string(a.i);
    case K::kString: return "\"" + visible(a.s) + "\"";
    case K::kInts: return fmt::format("[{}]", fmt::join(a.ints, ","));
    case K::kFloats: return fmt::format("[{}]", fmt::join(a.floats, ","));
    case K::kTensor: return fmt::format("<tensor {}>", a.t.numel());
    default: return "<…>";
  }
}

int64_t layer_param_count(const rt::ExecutionGraph& g, const rt::Layer& l) {
  int64_t n = 0;
  for (const std::string& name : l.params) n += g.store()->values.at(name).numel();
  return n;
}

// The attention blocks starting at layer `index`, one line each.
std::string block_headers(const rt::ExecutionGraph& g, const std::vector<AttentionBlock>& blocks, int index,
                          const char* prefix) {
  std::string s;
  for (const AttentionBlock& b : blocks) {
    if (b.first_layer != index) continue;
    const std::string layers = b.last_layer > b.first_layer ? fmt::format("layers {}-{}", b.first_layer, b.last_layer)
                                                            : fmt::format("layer {}", b.first_layer);
    s += fmt::format("{}attention block, {}: softmax '{}' over {} positions, {} head{}\n", prefix, layers,
                     visible(g.steps()[b.softmax_step].node->name), b.positions, b.heads, b.heads == 1 ? "" : "s");
  }
  return s;
}

const char* kConfigKeys[] = {"loss", "from_logits", "optimizer", "learning_rate", "momentum", "nesterov",
                             "epochs", "batch_size", "targets", "seed"};

}  // namespace

void print_inspect(const ir::Model& model, std::ostream& out) {
  PlannedPair p = plan_pair(model);
  const rt::ExecutionGraph& g = *p.one;
  out << fmt::format("model    {}\nproducer {} {}, ONNX opset {}{}\n", visible(model.path), visible(model.producer_name),
                     visible(model.producer_version), model.opset,
                     model.original_opset != model.opset ? fmt::format(" (upgraded from {})", model.original_opset) : "");
  for (const std::string& name : g.input_names())
    out << fmt::format("input    {}: {} {}\n", visible(name), rt::dtype_name(g.value(g.slot_of(name)).dtype()),
                       shape_of(p, g.slot_of(name)));
  for (const std::string& name : g.output_names())
    out << fmt::format("output   {}: {} {}\n", visible(name), rt::dtype_name(g.value(g.slot_of(name)).dtype()),
                       shape_of(p, g.slot_of(name)));
  out << fmt::format("\nlayers ({}):\n", g.layers().size());
  const std::vector<AttentionBlock> blocks = find_attention_blocks(g);
  for (const rt::Layer& l : g.layers()) {
    out << block_headers(g, blocks, l.index, "  ");
    const rt::Step& last = g.steps()[l.output_step];
    int64_t n = layer_param_count(g, l);
    out << fmt::format("  {:>3}  {:<44} out {:<14} params {}\n", l.index, visible_join(l.nodes),
                       shape_of(p, last.outputs[0]), n);
    for (size_t k : l.steps) {
      const std::string what = g.steps()[k].op->describe();
      if (!what.empty())
        out << fmt::format("       {} '{}': {}\n", g.steps()[k].node->op_type, visible(g.steps()[k].node->name), what);
    }
  }
  // Totals count each trainable tensor once: a tied one appears in every layer reading it.
  int64_t trainable = 0, state = 0, state_tensors = 0;
  for (const rt::Param& prm : p.one->params()) trainable += prm.value->numel();
  const auto roles = rt::model_params(model);
  for (const auto& [name, mp] : roles)
    if (!mp.trainable()) state += rt::shape_numel(mp.shape), ++state_tensors;
  out << fmt::format("parameters: {} in {} tensors\n", trainable, p.one->params().size());
  if (state_tensors)
    out << fmt::format("state: {} values in {} tensors (running statistics, updated by the ops)\n", state,
                       state_tensors);
  const std::vector<std::string> tied = rt::tied_param_notes(roles);
  if (!tied.empty()) {
    out << fmt::format("tied parameters ({}): each trains as one tensor shared by its readers\n", tied.size());
    for (const std::string& t : tied) out << "  " << visible(t) << "\n";
  }
  out << "\ntraining configuration (model metadata):\n";
  bool any = false;
  for (const char* key : kConfigKeys) {
    auto it = model.metadata.find(std::string("deeplocalize.") + key);
    if (it == model.metadata.end()) continue;
    out << fmt::format("  {:<14} {}\n", key, visible(it->second));
    any = true;
  }
  if (!any) out << "  (none: defaults and command-line options apply)\n";
  if (!model.warnings.empty()) {
    out << fmt::format("\nnotes ({}):\n", model.warnings.size());
    for (const std::string& w : model.warnings) out << "  " << visible(w) << "\n";
  }
}

void print_program(const ir::Model& model, std::ostream& out) {
  PlannedPair p = plan_pair(model);
  const rt::ExecutionGraph& g = *p.one;
  std::map<std::string, bool> is_param;
  for (const rt::Param& prm : p.one->params()) is_param[prm.name] = true;
  auto ref = [&](int slot) -> std::string {
    if (slot < 0) return "_";
    const std::string& name = g.value_name(slot);
    return (is_param.count(name) ? "@" : "%") + visible(name);
  };
  out << fmt::format("# deeplocalize program for {} (opset {}, {} {})\n", visible(model.path), model.opset,
                     visible(model.producer_name), visible(model.producer_version));
  out << "# N is the batch size. %x is a value, @w a trainable parameter.\n"
         "# ◆ marks a probe: statistics of the value just written are recorded after the\n"
         "#   step (forward) and of its gradient when the backward sweep reaches it.\n";
  size_t merged = 0;
  for (const rt::Step& st : g.steps()) merged += (st.merged != nullptr) + st.merged_before.size();
  const size_t folded = model.graph.nodes.size() - g.steps().size() - merged;
  if (folded)
    out << fmt::format("# {} node(s) computing only shapes and constants were evaluated at load time.\n", folded);
  if (merged)
    out << fmt::format("# {} node(s) (a bias Add, a Transpose) run inside the MatMul next to them (one step each).\n",
                       merged);
  size_t views = 0;
  for (const rt::Step& st : g.steps()) views += st.view;
  if (views)
    out << fmt::format("# {} step(s) marked 'view' only re-view their input (no copy, no buffer; nor for the\n"
                       "#   gradient where marked 'and its gradient': runtime/graph_views.cpp).\n",
                       views);
  for (const std::string& w : model.warnings) out << "# note: " << visible(w) << "\n";
  out << "\nprogram forward(";
  for (size_t k = 0; k < g.input_names().size(); ++k)
    out << (k ? ", " : "") << "%" << visible(g.input_names()[k]) << ": " << shape_of(p, g.slot_of(g.input_names()[k]));
  out << "):\n";
  const std::vector<AttentionBlock> blocks = find_attention_blocks(g);
  for (const rt::Layer& l : g.layers()) {
    out << "\n" << block_headers(g, blocks, l.index, "  # ");
    out << fmt::format("  # layer {} ({} parameters)\n", l.index, layer_param_count(g, l));
    for (size_t k : l.steps) {
      const rt::Step& st = g.steps()[k];
      const std::string what = st.op->describe();
      if (!what.empty()) out << fmt::format("      # {}: {}\n", st.node->op_type, what);
      std::vector<std::string> args;
      for (int s : st.inputs) args.push_back(ref(s));
      for (const auto& [name, a] : st.node->attrs) args.push_back(visible(name) + "=" + attr_str(a));
      std::vector<std::string> outs;
      for (int s : st.outputs)
        if (s >= 0) outs.push_back(ref(s));
      const std::string view = !st.view ? "" : st.grad_view ? ", view of " + ref(st.inputs[0]) + " and its gradient"
                                                            : ", view of " + ref(st.inputs[0]);
      out << fmt::format("  {:<3} {} = {}({})  # {} {}{}\n", k, fmt::join(outs, ", "), st.node->op_type,
                         fmt::join(args, ", "), st.outputs[0] >= 0 ? shape_of(p, st.outputs[0]) : "",
                         st.needs_backward ? "◆ fwd+bwd" : "◆ fwd", view);
    }
  }
  out << "\n  return ";
  for (size_t k = 0; k < g.output_names().size(); ++k) out << (k ? ", " : "") << "%" << visible(g.output_names()[k]);
  out << "\n\nprogram update():  # after backward, for each trainable parameter\n";
  for (const rt::Param& prm : p.one->params())
    out << fmt::format("  @{} -= optimizer_step(grad @{})  # {} ◆ weight, update ratio\n", visible(prm.name), visible(prm.name),
                       rt::shape_str(prm.value->shape()));
}

}  // namespace dl::cli
