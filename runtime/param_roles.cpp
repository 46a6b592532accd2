// Parameters by the ops' own account (Op::param_role), tied parameters, and
// re-initialisation by role (the repairs' "re-initialise this layer").
#include "runtime/param_roles.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <sstream>

#include "converter/errors.h"
#include "runtime/registry.h"

namespace dl::rt {

bool is_mask(const ir::TensorData& t) {
  if (t.dtype != ir::DType::kFloat32 && t.dtype != ir::DType::kFloat64) return false;
  bool neg_inf = false;
  for (float x : t.floats) {
    if (std::isinf(x) && x > 0) return false;
    neg_inf = neg_inf || std::isinf(x);
  }
  return neg_inf;
}

const char* param_kind_name(ParamRole::Kind k) {
  switch (k) {
    case ParamRole::Kind::kWeight: return "weight";
    case ParamRole::Kind::kEmbedding: return "embedding";
    case ParamRole::Kind::kBias: return "bias";
    case ParamRole::Kind::kScale: return "scale";
    case ParamRole::Kind::kRunningMean: return "running mean";
    case ParamRole::Kind::kRunningVar: return "running variance";
    case ParamRole::Kind::kNone: break;
  }
  return "constant";
}

namespace {

bool is_float(const ir::TensorData& t) { return t.dtype == ir::DType::kFloat32 || t.dtype == ir::DType::kFloat64; }

// The shape a node sees when it reads `value`: the initializer's own, or for a view the
// shape inference recorded (a transposed weight has its fans the other way round).
Shape seen_shape(const ir::Graph& g, const std::string& value, const ir::TensorData& init) {
  if (value == init.name) return init.dims;
  auto it = g.value_info.find(value);
  if (it == g.value_info.end() || !it->second.has_shape) return init.dims;
  Shape s;
  for (const ir::Dim& d : it->second.dims) {
    if (!d.known()) return init.dims;
    s.push_back(d.value);
  }
  return s;
}

}  // namespace

std::map<std::string, ModelParam> model_params(const ir::Graph& g, const std::vector<std::unique_ptr<Op>>& ops) {
  // value -> the float initializers whose values it holds (itself, or through ops that
  // only rearrange: Transpose(W), Concat(Slice(W_ih), ...) as torch exports an LSTM).
  std::map<std::string, std::vector<std::string>> source;
  for (const auto& [name, data] : g.initializers)
    if (is_float(data)) source[name] = {name};
  std::map<std::string, ModelParam> params;
  auto add_use = [&](const std::string& init, const ir::Node& n, size_t i, const ParamRole& role) {
    ModelParam& p = params[init];
    p.name = init;
    p.shape = g.initializers.at(init).dims;
    for (const ParamUse& u : p.uses)
      if (u.node == n.name) return;  // a node reading it twice is not a tie
    p.uses.push_back({n.name, n.op_type, i, role});
  };
  std::map<std::string, size_t> producer;
  std::vector<bool> has_trainable(g.nodes.size(), false);
  std::map<std::string, std::vector<std::string>> aliases;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const ir::Node& n = g.nodes[k];
    for (const std::string& o : n.outputs) producer[o] = k;
    const OpTraits t = ops[k]->traits();
    if (t.role == OpTraits::Role::kShape || t.rearranges) {
      // A rearrangement of initializers only (every differentiable input is one).
      std::vector<std::string> from;
      bool all = true;
      for (size_t i = 0; i < n.inputs.size() && all; ++i) {
        if (n.inputs[i].empty() || !ops[k]->differentiable_input(i)) continue;
        auto it = source.find(n.inputs[i]);
        all = it != source.end();
        if (all)
          for (const std::string& s : it->second)
            if (std::find(from.begin(), from.end(), s) == from.end()) from.push_back(s);
      }
      if (all && !from.empty()) {
        for (const std::string& o : n.outputs) {
          if (o.empty()) continue;
          source[o] = from;
          if (t.role == OpTraits::Role::kShape && from.size() == 1) aliases[from[0]].push_back(o);
        }
        continue;
      }
    }
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      auto it = source.find(n.inputs[i]);
      if (it == source.end()) continue;
      for (const std::string& name : it->second) {
        const ParamRole role = ops[k]->param_role(i, seen_shape(g, n.inputs[i], g.initializers.at(name)));
        if (role.kind == ParamRole::Kind::kNone) continue;
        add_use(name, n, i, role);
        has_trainable[k] = has_trainable[k] || role.trainable();
      }
    }
  }
  // Biases added after a node with a trainable parameter (MatMul + Add, Conv + Add).
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const ir::Node& n = g.nodes[k];
    const OpTraits t = ops[k]->traits();
    if (t.role != OpTraits::Role::kElementwise || !t.linear) continue;
    bool after = false;
    for (const std::string& in : n.inputs) {
      auto p = producer.find(in);
      after = after || (p != producer.end() && has_trainable[p->second]);
    }
    if (!after) continue;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      auto it = source.find(n.inputs[i]);
      // Only a differentiable input is a bias: Dropout's ratio is a setting, not a parameter.
      if (it == source.end() || !ops[k]->differentiable_input(i)) continue;
      ParamRole bias;
      bias.kind = ParamRole::Kind::kBias;
      for (const std::string& name : it->second)
        if (!is_mask(g.initializers.at(name))) add_use(name, n, i, bias);
    }
  }
  for (auto& [name, p] : params) {
    p.role = p.uses.front().role;
    for (const ParamUse& u : p.uses)
      if (u.role.trainable()) {
        p.role = u.role;
        break;
      }
    p.aliases = aliases[name];
  }
  return params;
}

std::map<std::string, ModelParam> model_params(const ir::Model& model) {
  std::vector<std::unique_ptr<Op>> ops;
  ops.reserve(model.graph.nodes.size());
  for (const ir::Node& n : model.graph.nodes) ops.push_back(make_op(n));
  return model_params(model.graph, ops);
}

std::vector<std::string> constant_initializers(const ir::Graph& g, const std::vector<std::unique_ptr<Op>>& ops,
                                               const std::map<std::string, ModelParam>& params) {
  std::set<std::string> out;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (ops[k]->traits().role != OpTraits::Role::kElementwise) continue;
    const ir::Node& n = g.nodes[k];
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      auto it = g.initializers.find(n.inputs[i]);
      if (it == g.initializers.end() || !is_float(it->second) || it->second.numel() <= 1) continue;
      if (ops[k]->differentiable_input(i) && !params.count(it->first)) out.insert(it->first);
    }
  }
  return {out.begin(), out.end()};
}

std::vector<std::string> tied_param_notes(const std::map<std::string, ModelParam>& params) {
  std::vector<std::string> out;
  for (const auto& [name, p] : params) {
    if (!p.tied() || !p.trainable()) continue;
    std::string s = "'" + name + "' (" + param_kind_name(p.role.kind) + ") is read by ";
    for (size_t k = 0; k < p.uses.size(); ++k)
      s += (k ? (k + 1 == p.uses.size() ? " and " : ", ") : "") + ("'" + p.uses[k].node + "' (" + p.uses[k].op_type + ")");
    if (!p.aliases.empty()) {
      s += " (also as";
      for (const std::string& a : p.aliases) s += " '" + a + "'";
      s += ")";
    }
    out.push_back(s);
  }
  return out;
}

namespace {

// FNV-1a: a portable hash, so each parameter's values depend on the seed and its name only.
uint64_t name_hash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

std::string reinitialize_params(ir::Model& model, const std::vector<std::string>& param_names,
                                const std::string& scheme, uint64_t seed) {
  const bool glorot = scheme == "glorot_uniform";
  if (!glorot && scheme != "he_uniform")
    throw ConfigError("unknown initialisation scheme '" + scheme + "' (expected glorot_uniform or he_uniform)");
  const std::string src = model.path.empty() ? "model" : model.path;
  if (param_names.empty()) throw ConfigError(src + ": no parameters given to re-initialise");
  const std::map<std::string, ModelParam> params = model_params(model);
  std::vector<std::string> changes;
  for (const auto& name : param_names) {
    const std::string label = src + ": initializer '" + name + "'";
    auto it = model.graph.initializers.find(name);
    if (it == model.graph.initializers.end()) throw ModelError(src + ": no initializer named '" + name + "'");
    ir::TensorData& t = it->second;
    if (!is_float(t))
      throw ModelError(label + " is " + ir::dtype_name(t.dtype) + "; only float initializers can be re-initialised");
    if (t.dims.empty()) throw ModelError(label + " is a scalar, neither a weight nor a bias");
    auto p = params.find(name);
    if (p == params.end())
      throw ModelError(label + " is not the weight, bias, scale or statistic of any node, so it has no role to "
                               "re-initialise it by");
    const ParamRole& role = p->second.role;
    using K = ParamRole::Kind;
    const bool ones = role.kind == K::kScale || role.kind == K::kRunningVar;
    t.floats.assign(static_cast<size_t>(t.numel()), ones ? 1.0f : 0.0f);
    if (!role.has_fans()) {
      changes.push_back(name + (ones ? " ones" : " zeros"));
      continue;
    }
    const double denom = glorot ? double(role.fan_in + role.fan_out) : double(role.fan_in);
    const double limit = denom > 0 ? std::sqrt(6.0 / denom) : 0.0;
    std::mt19937_64 rng(seed ^ name_hash(name));
    // 53 random bits -> [0, 1): std::uniform_real_distribution differs between libraries.
    for (float& v : t.floats) v = static_cast<float>(limit * (2.0 * static_cast<double>(rng() >> 11) * 0x1.0p-53 - 1.0));
    changes.push_back(name + " " + shape_str(t.dims) + " U(+-" + number(limit) + ")");
  }
  return scheme + ": " + join(changes);
}

}  // namespace dl::rt
