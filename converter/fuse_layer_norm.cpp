// Fusing torch's decomposed LayerNorm (see fuse_layer_norm.h for the pattern and why).
#include "converter/fuse_layer_norm.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "converter/errors.h"

namespace dl::conv {
namespace {

class Matcher {
 public:
  explicit Matcher(ir::Graph& g) : g_(g) {
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      for (const std::string& in : g.nodes[k].inputs)
        if (!in.empty()) readers_[in].push_back(k);
      for (const std::string& out : g.nodes[k].outputs) producer_[out] = k;
    }
    for (const ir::ValueInfo& o : g.outputs) graph_outputs_.insert(o.name);
  }

  // The one node reading `value`, if it is of `op` and nothing else (no graph output) reads it.
  const ir::Node* sole_reader(const std::string& value, const char* op, size_t* index = nullptr) const {
    if (graph_outputs_.count(value)) return nullptr;
    auto it = readers_.find(value);
    if (it == readers_.end() || it->second.size() != 1) return nullptr;
    const ir::Node& n = g_.nodes[it->second[0]];
    if (!is(n, op)) return nullptr;
    if (index) *index = it->second[0];
    return &n;
  }

  size_t reader_count(const std::string& value) const {
    auto it = readers_.find(value);
    return it == readers_.end() ? 0 : it->second.size();
  }
  bool graph_output(const std::string& value) const { return graph_outputs_.count(value) > 0; }

  static bool is(const ir::Node& n, const char* op) {
    return n.domain.empty() && n.op_type == op && !n.outputs.empty() && !n.outputs[0].empty();
  }

  // A float constant of one element (an initializer or a Constant node's value).
  bool scalar(const std::string& value, float* out) const {
    const ir::TensorData* t = constant(value);
    if (!t || t->dtype != ir::DType::kFloat32 || t->numel() != 1 || t->floats.size() != 1) return false;
    *out = t->floats[0];
    return true;
  }

  const ir::TensorData* constant(const std::string& value) const {
    auto it = g_.initializers.find(value);
    if (it != g_.initializers.end()) return &it->second;
    auto p = producer_.find(value);
    if (p == producer_.end()) return nullptr;
    const ir::Node& n = g_.nodes[p->second];
    if (!is(n, "Constant") || n.attrs.size() != 1) return nullptr;
    auto a = n.attrs.find("value");
    return a != n.attrs.end() && a->second.kind == ir::Attribute::Kind::kTensor ? &a->second.t : nullptr;
  }

  // The Constant node producing `value` when the chain is its only reader.
  bool own_constant(const std::string& value, size_t* index) const {
    auto p = producer_.find(value);
    if (p == producer_.end() || !is(g_.nodes[p->second], "Constant")) return false;
    if (reader_count(value) != 1 || graph_output(value)) return false;
    *index = p->second;
    return true;
  }

  // X's dimensions (-1 where unknown) when shape inference knows its rank; empty otherwise.
  std::vector<int64_t> known_dims(const std::string& value, bool* is_float) const {
    const ir::ValueInfo* info = nullptr;
    auto it = g_.value_info.find(value);
    if (it != g_.value_info.end()) info = &it->second;
    for (const ir::ValueInfo& v : g_.inputs)
      if (v.name == value) info = &v;
    *is_float = info && info->dtype == ir::DType::kFloat32;
    std::vector<int64_t> dims;
    if (!info || !info->has_shape) return dims;
    for (const ir::Dim& d : info->dims) dims.push_back(d.known() ? d.value : -1);
    return dims;
  }

  const ir::Graph& graph() const { return g_; }

 private:
  ir::Graph& g_;
  std::map<std::string, std::vector<size_t>> readers_;
  std::map<std::string, size_t> producer_;
  std::set<std::string> graph_outputs_;
};

// The other operand of a binary node one of whose inputs is `value`.
bool other_operand(const ir::Node& n, const std::string& value, std::string* other) {
  if (n.inputs.size() != 2) return false;
  if (n.inputs[0] == value && n.inputs[1] != value) *other = n.inputs[1];
  else if (n.inputs[1] == value && n.inputs[0] != value) *other = n.inputs[0];
  else return false;
  return true;
}

// ReduceMean's axes (attribute form, keepdims 1) as negative axes, sorted; empty if not.
std::vector<int64_t> mean_axes(const ir::Node& n, int64_t rank) {
  if (n.inputs.size() != 1) return {};
  for (const auto& [name, a] : n.attrs)
    if (name != "axes" && !(name == "keepdims" && a.kind == ir::Attribute::Kind::kInt && a.i == 1)) return {};
  auto it = n.attrs.find("axes");
  if (it == n.attrs.end() || it->second.kind != ir::Attribute::Kind::kInts) return {};
  std::vector<int64_t> axes;
  for (int64_t a : it->second.ints) {
    if (a >= 0 && rank < 0) return {};
    axes.push_back(a >= 0 ? a - rank : a);
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

// {-k, ..., -1}: the trailing axes, each once.
bool trailing(const std::vector<int64_t>& axes, int64_t rank) {
  if (axes.empty() || (rank >= 0 && static_cast<int64_t>(axes.size()) > rank)) return false;
  for (size_t k = 0; k < axes.size(); ++k)
    if (axes[k] != -static_cast<int64_t>(axes.size() - k)) return false;
  return true;
}

// Leading 1s aside, `dims` equals `norm`, and has no more axes than X.
bool fits(std::vector<int64_t> dims, std::vector<int64_t> norm, size_t x_rank) {
  if (dims.size() > x_rank) return false;
  auto strip = [](std::vector<int64_t>& v) {
    while (!v.empty() && v.front() == 1) v.erase(v.begin());
  };
  strip(dims), strip(norm);
  return dims == norm;
}

std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

struct Match {
  std::vector<size_t> nodes;  // the chain and its own Constant nodes
  size_t last = 0;            // where the fused node goes
  std::string x, weight, bias, out;
  int64_t axis = -1;
  float eps = 0;
};

bool match_at(const Matcher& m, size_t k, Match* out) {
  const ir::Graph& g = m.graph();
  const ir::Node& mean = g.nodes[k];
  if (!Matcher::is(mean, "ReduceMean") || mean.outputs.size() != 1 || mean.inputs.size() != 1) return false;
  Match r;
  r.x = mean.inputs[0];
  bool x_float = false;
  const std::vector<int64_t> xdims = m.known_dims(r.x, &x_float);
  if (!x_float) return false;
  const int64_t rank = xdims.empty() ? -1 : static_cast<int64_t>(xdims.size());
  const std::vector<int64_t> axes = mean_axes(mean, rank);
  if (!trailing(axes, rank)) return false;
  // The normalised dimensions; unknown (empty) when shape inference does not know them all.
  std::vector<int64_t> norm;
  if (!xdims.empty()) norm.assign(xdims.end() - static_cast<std::ptrdiff_t>(axes.size()), xdims.end());
  if (std::any_of(norm.begin(), norm.end(), [](int64_t d) { return d < 1; })) norm.clear();
  size_t i_sub, i_pow = 0, i_mean2, i_add, i_sqrt, i_div = 0, i_mul, i_bias;
  const ir::Node* sub = m.sole_reader(mean.outputs[0], "Sub", &i_sub);
  if (!sub || sub->inputs.size() != 2 || sub->inputs[0] != r.x || sub->inputs[1] != mean.outputs[0]) return false;
  // The centred values feed exactly the Pow and the Div.
  const std::string& d = sub->outputs[0];
  if (m.graph_output(d) || m.reader_count(d) != 2) return false;
  const ir::Node *pow = nullptr, *div = nullptr;
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    const ir::Node& n = g.nodes[j];
    if (std::find(n.inputs.begin(), n.inputs.end(), d) == n.inputs.end()) continue;
    if (Matcher::is(n, "Pow") && n.inputs.size() == 2 && n.inputs[0] == d) pow = &n, i_pow = j;
    if (Matcher::is(n, "Div") && n.inputs.size() == 2 && n.inputs[0] == d) div = &n, i_div = j;
  }
  float two = 0;
  if (!pow || !div || !m.scalar(pow->inputs[1], &two) || two != 2.0f) return false;
  const ir::Node* mean2 = m.sole_reader(pow->outputs[0], "ReduceMean", &i_mean2);
  if (!mean2 || mean2->inputs.size() != 1 || mean_axes(*mean2, rank) != axes) return false;
  const ir::Node* add = m.sole_reader(mean2->outputs[0], "Add", &i_add);
  std::string eps;
  if (!add || !other_operand(*add, mean2->outputs[0], &eps) || !m.scalar(eps, &r.eps)) return false;
  if (!(r.eps > 0.0f) || !std::isfinite(r.eps)) return false;
  const ir::Node* sqrt = m.sole_reader(add->outputs[0], "Sqrt", &i_sqrt);
  if (!sqrt || sqrt->inputs.size() != 1) return false;
  const ir::Node* div2 = m.sole_reader(sqrt->outputs[0], "Div");
  if (div2 != div || div->inputs[1] != sqrt->outputs[0]) return false;
  const ir::Node* mul = m.sole_reader(div->outputs[0], "Mul", &i_mul);
  if (!mul || !other_operand(*mul, div->outputs[0], &r.weight)) return false;
  // Known normalised dimensions: the weight has them (leading 1s aside). Unknown ones: the
  // weight has one dimension per normalised axis, as nn.LayerNorm's normalized_shape, and the
  // bias the weight's shape; planning the fused node checks them against X.
  std::vector<int64_t> wdims;
  auto param = [&](const std::string& name) {
    auto it = g.initializers.find(name);
    if (it == g.initializers.end() || it->second.dtype != ir::DType::kFloat32) return false;
    const std::vector<int64_t>& dims = it->second.dims;
    if (!norm.empty()) return fits(dims, norm, xdims.size());
    if (wdims.empty()) return dims.size() == axes.size() && std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 1; });
    return dims == wdims;
  };
  if (!param(r.weight)) return false;
  wdims = g.initializers.at(r.weight).dims;
  r.nodes = {k, i_sub, i_pow, i_mean2, i_add, i_sqrt, i_div, i_mul};
  r.last = i_mul;
  r.out = mul->outputs[0];
  const ir::Node* bias = m.sole_reader(mul->outputs[0], "Add", &i_bias);
  std::string b;
  if (bias && other_operand(*bias, mul->outputs[0], &b) && param(b)) {
    r.bias = b;
    r.nodes.push_back(i_bias);
    r.last = i_bias;
    r.out = bias->outputs[0];
  }
  for (const std::string& c : {pow->inputs[1], eps}) {
    size_t own;
    if (m.own_constant(c, &own)) r.nodes.push_back(own);
  }
  std::sort(r.nodes.begin(), r.nodes.end());
  r.axis = -static_cast<int64_t>(axes.size());
  *out = r;
  return true;
}

// "/1/" for nodes all named "/1/...": torch's module path, which the fused node keeps.
std::string fused_name(const ir::Graph& g, const Match& r) {
  std::string prefix = g.nodes[r.nodes.front()].name;
  for (size_t k : r.nodes) {
    const std::string& n = g.nodes[k].name;
    size_t i = 0;
    while (i < prefix.size() && i < n.size() && prefix[i] == n[i]) ++i;
    prefix.resize(i);
  }
  prefix.resize(prefix.rfind('/') == std::string::npos ? 0 : prefix.rfind('/') + 1);
  std::string name = (prefix.empty() ? g.nodes[r.nodes.front()].name + "/" : prefix) + "LayerNormalization";
  std::set<std::string> taken;
  for (const ir::Node& n : g.nodes) taken.insert(n.name);
  const std::string base = name;
  for (int k = 1; taken.count(name); ++k) name = base + "_" + std::to_string(k);
  return name;
}

}  // namespace

std::vector<std::string> fuse_layer_norms(ir::Graph& g) {
  std::vector<std::string> notes;
  auto matcher = std::make_unique<Matcher>(g);
  for (size_t k = 0; k < g.nodes.size();) {
    Match r;
    if (!match_at(*matcher, k, &r)) {
      ++k;
      continue;
    }
    ir::Node fused;
    fused.name = fused_name(g, r);
    fused.op_type = "LayerNormalization";
    fused.since_version = 17;
    fused.inputs = {r.x, r.weight};
    if (!r.bias.empty()) fused.inputs.push_back(r.bias);
    fused.outputs = {r.out};
    fused.attrs["axis"].kind = ir::Attribute::Kind::kInt;
    fused.attrs["axis"].i = r.axis;
    fused.attrs["epsilon"].kind = ir::Attribute::Kind::kFloat;
    fused.attrs["epsilon"].f = r.eps;
    std::string note = "'" + fused.name + "': the decomposed LayerNorm of torch.onnx.export below opset 17 (nodes '" +
                       g.nodes[k].name + "' ... '" + g.nodes[r.last].name +
                       "') was fused into one LayerNormalization (axis " + std::to_string(r.axis) + ", epsilon " +
                       number(r.eps) + "), so its scale '" + r.weight + "'" +
                       (r.bias.empty() ? std::string() : " and bias '" + r.bias + "'") + " are trained";
    for (size_t i : r.nodes)
      for (const std::string& o : g.nodes[i].outputs)
        if (o != r.out) g.value_info.erase(o);
    std::vector<ir::Node> kept;
    kept.reserve(g.nodes.size());
    size_t next = 0;  // where the scan goes on: the first node after k that is kept
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (i == k) next = kept.size();
      if (i == r.last) kept.push_back(fused);
      else if (!std::binary_search(r.nodes.begin(), r.nodes.end(), i)) kept.push_back(std::move(g.nodes[i]));
    }
    g.nodes = std::move(kept);
    notes.push_back(note);
    // No chain starting before k matched, and fusing one cannot make one match there.
    matcher = std::make_unique<Matcher>(g);
    k = next;
  }
  return notes;
}

std::vector<ir::Node> decompose_layer_norm(const ir::Node& ln) {
  const std::string where = "node '" + ln.name + "' (LayerNormalization)";
  if (ln.inputs.size() < 2 || ln.inputs[0].empty() || ln.inputs[1].empty() || ln.outputs.empty())
    throw ModelError(where + ": needs X, Scale and an output to be written below opset 17");
  auto at = ln.attrs.find("axis");
  const int64_t axis = at == ln.attrs.end() ? -1 : at->second.i;
  if (axis >= 0)
    throw ModelError(where + ": axis " + std::to_string(axis) + " cannot be written below opset 17 (only negative axes)");
  for (size_t k = 1; k < ln.outputs.size(); ++k)
    if (!ln.outputs[k].empty()) throw ModelError(where + ": its Mean/InvStdDev outputs cannot be written below opset 17");
  auto e = ln.attrs.find("epsilon");
  const float eps = e == ln.attrs.end() ? 1e-5f : e->second.f;
  std::vector<ir::Node> out;
  auto add = [&](const std::string& op, std::vector<std::string> in, const std::string& value) {
    ir::Node n;
    n.name = ln.name + "_" + op + (out.empty() ? "" : "_" + std::to_string(out.size()));
    n.op_type = op;
    n.inputs = std::move(in);
    n.outputs = {value.empty() ? n.name + "_output_0" : value};
    out.push_back(std::move(n));
    return out.back().outputs[0];
  };
  auto constant = [&](float v) {
    const std::string c = add("Constant", {}, "");
    ir::Attribute& a = out.back().attrs["value"];
    a.kind = ir::Attribute::Kind::kTensor;
    a.t.dtype = ir::DType::kFloat32;
    a.t.floats = {v};
    return c;
  };
  ir::Attribute axes;
  axes.kind = ir::Attribute::Kind::kInts;
  for (int64_t k = axis; k < 0; ++k) axes.ints.push_back(k);
  const std::string& x = ln.inputs[0];
  const std::string mean = add("ReduceMean", {x}, "");
  out.back().attrs["axes"] = axes;
  const std::string d = add("Sub", {x, mean}, "");
  const std::string sq = add("Pow", {d, constant(2.0f)}, "");
  const std::string var = add("ReduceMean", {sq}, "");
  out.back().attrs["axes"] = axes;
  const std::string sd = add("Sqrt", {add("Add", {var, constant(eps)}, "")}, "");
  const std::string xhat = add("Div", {d, sd}, "");
  const bool bias = ln.inputs.size() > 2 && !ln.inputs[2].empty();
  const std::string scaled = add("Mul", {xhat, ln.inputs[1]}, bias ? "" : ln.outputs[0]);
  if (bias) add("Add", {scaled, ln.inputs[2]}, ln.outputs[0]);
  return out;
}

}  // namespace dl::conv
