// Applying a candidate repair to a loaded case: each action by its kind's file
// (cli/repairs/<stem>.cpp), and recording a repair in the exported model's metadata.
#include "cli/fix_trials.h"
#include "cli/repairs/repair.h"

namespace dl::cli {
namespace {

// Affine maps compose: (x - o1) * s1 then (. - o2) * s2 = (x - (o1 + o2 / s1)) * (s1 * s2).
void compose_affine(std::vector<float>& o1, std::vector<float>& s1, const std::vector<float>& o2,
                    const std::vector<float>& s2) {
  for (size_t j = 0; j < o1.size() && j < o2.size(); ++j) {
    o1[j] = static_cast<float>(double(o1[j]) + double(o2[j]) / double(s1[j]));
    s1[j] = static_cast<float>(double(s1[j]) * double(s2[j]));
  }
}

// `first` (already applied by the metadata) followed by `then` (fitted on its output).
rt::Preprocessing compose(const rt::Preprocessing& first, const rt::Preprocessing& then) {
  if (first.empty()) return then;
  if (then.empty()) return first;
  rt::Preprocessing p = first;
  if (then.features != rt::Preprocessing::Features::kNone) {
    if (p.features == rt::Preprocessing::Features::kNone) {
      p.feature_offset = then.feature_offset, p.feature_scale = then.feature_scale;
    } else {
      compose_affine(p.feature_offset, p.feature_scale, then.feature_offset, then.feature_scale);
    }
    p.features = then.features;
  }
  if (then.targets) {
    if (p.targets) {
      std::vector<float> o{p.target_offset}, s{p.target_scale};
      compose_affine(o, s, {then.target_offset}, {then.target_scale});
      p.target_offset = o[0], p.target_scale = s[0];
    } else {
      p.targets = true, p.target_offset = then.target_offset, p.target_scale = then.target_scale;
    }
  }
  if (!then.label_map.empty()) {
    if (p.label_map.empty()) {
      p.label_map = then.label_map;
    } else {
      for (auto& [from, to] : p.label_map)
        for (const auto& [mid, last] : then.label_map)
          if (float(to) == mid) to = last;
    }
  }
  return p;
}

}  // namespace

RepairedCase unrepaired(const LoadedCase& c) {
  RepairedCase r;
  r.model = c.model;
  r.config = c.config;
  return r;
}

RepairedCase apply_fix(const RepairedCase& base, const std::vector<an::FixAction>& actions, const an::Trace& trace,
                       const LoadedCase& data) {
  RepairedCase r = base;
  const repairs::RepairInputs in{trace, data};
  for (const an::FixAction& a : actions) {
    r.changes.push_back(repairs::apply_fn(a.kind)(r, a, in));
    r.actions.push_back(a);
  }
  rt::validate(r.config);
  return r;
}

std::string describe(const RepairedCase& r) {
  // Consecutive changes that do the same to several layers read as one:
  // "layers 0 (/0/Gemm), 1 (/2/Gemm): Relu -> LeakyRelu (alpha 0.01)".
  std::string s;
  for (size_t i = 0; i < r.changes.size();) {
    const RepairChange& c = r.changes[i];
    size_t j = i + 1;
    if (c.layer >= 0)
      while (j < r.changes.size() && r.changes[j].layer >= 0 && r.changes[j].what == c.what) ++j;
    if (!s.empty()) s += "; ";
    if (c.layer >= 0) {
      s += j - i > 1 ? "layers " : "layer ";
      for (size_t k = i; k < j; ++k) {
        const RepairChange& x = r.changes[k];
        s += (k > i ? ", " : "") + std::to_string(x.layer) + (x.layer_node.empty() ? "" : " (" + x.layer_node + ")");
      }
      s += ": ";
    }
    s += c.what;
    i = j;
  }
  return s;
}

void record_in_metadata(RepairedCase& r, const rt::Preprocessing& already_applied) {
  ir::Model& m = repairs::edit_model(r);
  for (const auto& [key, value] : rt::config_to_metadata(r.config)) m.metadata[key] = value;
  const rt::Preprocessing p = compose(already_applied, r.preprocessing);
  if (p.empty()) {
    m.metadata.erase(rt::kPreprocessingKey);
  } else {
    m.metadata[rt::kPreprocessingKey] = p.to_json();
  }
}

}  // namespace dl::cli
