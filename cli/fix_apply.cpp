// Applying a candidate repair to a loaded case: edits of the model (converter/transform.h),
// of the training configuration, and of the data (runtime/data/preprocess.h).
#include <cmath>
#include <cstdio>

#include "cli/fix_trials.h"
#include "converter/errors.h"
#include "converter/transform.h"
#include "runtime/param_roles.h"
#include "runtime/optimizer.h"

namespace dl::cli {
namespace {

using Kind = an::FixAction::Kind;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

double effective_lr(const rt::OptimizerConfig& c) { return rt::make_optimizer(c)->learning_rate(); }

const an::LayerInfo& layer_of(const an::Trace& trace, int layer) {
  const auto& layers = trace.header.layers;
  if (layer < 0 || static_cast<size_t>(layer) >= layers.size())
    throw ModelError("repair names layer " + std::to_string(layer) + ", but the model has " +
                     std::to_string(layers.size()) + " layers");
  return layers[static_cast<size_t>(layer)];
}

// The repair's own copy of the model, to edit: the case's model is shared by every trial
// that does not change it (a learning-rate or data repair trains the case's model).
ir::Model& edit_model(RepairedCase& r) {
  auto copy = std::make_shared<ir::Model>(*r.model);
  r.model = copy;
  return *copy;
}

std::string layer_name(const an::LayerInfo& l) {
  return "layer " + std::to_string(l.index) + (l.nodes.empty() ? "" : " (" + l.nodes.front() + ")");
}

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
  for (const an::FixAction& a : actions) {
    std::string change;
    switch (a.kind) {
      case Kind::kLearningRate: {
        const double before = effective_lr(r.config.optimizer);
        r.config.optimizer.learning_rate = before * a.factor;
        change = "learning rate " + num(before) + " -> " + num(before * a.factor);
        break;
      }
      case Kind::kOptimizer: {
        const std::string before = r.config.optimizer.name;
        rt::OptimizerConfig o;
        o.name = a.value;
        o.clipnorm = r.config.optimizer.clipnorm, o.clipvalue = r.config.optimizer.clipvalue;
        r.config.optimizer = o;
        change = "optimizer " + before + " -> " + a.value + " (learning rate " + num(effective_lr(o)) + ")";
        break;
      }
      case Kind::kEpochs: {
        const int64_t before = r.config.epochs;
        r.config.epochs = std::max<int64_t>(a.count, static_cast<int64_t>(std::llround(double(before) * a.factor)));
        change = "epochs " + std::to_string(before) + " -> " + std::to_string(r.config.epochs);
        break;
      }
      case Kind::kLoss: {
        change = "loss " + r.config.loss + (r.config.from_logits ? " (from logits)" : "") + " -> " + a.value;
        r.config.loss = a.value;
        r.config.from_logits = false;
        r.loss_changed = true;
        break;
      }
      case Kind::kActivation: {
        const an::LayerInfo& l = layer_of(trace, a.layer);
        std::string what = conv::set_layer_activation(edit_model(r), l.nodes, a.value);
        if (what.empty()) throw ModelError(layer_name(l) + " already has activation " + a.value);  // not a repair
        if (const size_t colon = what.rfind(": "); colon != std::string::npos) what = what.substr(colon + 2);
        // "Softmax inserted after /1/Gemm (...)" reads "add Softmax"; "Relu -> Identity (...)", "remove Relu".
        if (what.find(" inserted after ") != std::string::npos) {
          what = "add " + a.value;
        } else if (const size_t id = what.find(" -> Identity"); id != std::string::npos) {
          what = "remove " + what.substr(0, id);
        }
        change = layer_name(l) + ": " + what;
        break;
      }
      case Kind::kReinitialize: {
        const an::LayerInfo& l = layer_of(trace, a.layer);
        rt::reinitialize_params(edit_model(r), l.params, a.value, r.config.seed + 1 + static_cast<uint64_t>(a.layer));
        change = layer_name(l) + ": re-initialise (" + a.value + " weights, zero biases)";
        break;
      }
      case Kind::kFeatures:
        r.preprocessing.fit_features(data.train, a.value == "minmax" ? rt::Preprocessing::Features::kMinMax
                                                                    : rt::Preprocessing::Features::kStandardize);
        change = a.value == "minmax" ? "min-max scale the input features to [0, 1]" : "standardise the input features";
        break;
      case Kind::kTargets:
        r.preprocessing.fit_targets(data.train);
        change = "standardise the regression targets";
        break;
      case Kind::kLabels:
        if (!r.preprocessing.fit_labels(data.train))
          throw DataError(data.train.source + ": the class ids cannot be mapped onto 0.." +
                          std::to_string(std::max<int64_t>(data.train.num_classes - 1, 0)));
        change = "map the class ids onto 0.." + std::to_string(data.train.num_classes - 1);
        break;
    }
    r.actions.push_back(a);
    r.changes.push_back(change);
  }
  rt::validate(r.config);
  return r;
}

std::string describe(const RepairedCase& r) {
  // "layer 0 (/0/Gemm): X" and "layer 1 (/2/Gemm): X" read as "layers 0 (/0/Gemm), 1 (/2/Gemm): X".
  std::vector<std::pair<std::string, std::string>> merged;  // (who, what)
  for (const std::string& c : r.changes) {
    const size_t colon = c.rfind("): ");
    if (c.compare(0, 6, "layer ") != 0 || colon == std::string::npos) {
      merged.emplace_back("", c);
      continue;
    }
    const std::string who = c.substr(6, colon + 1 - 6), what = c.substr(colon + 3);
    if (!merged.empty() && !merged.back().first.empty() && merged.back().second == what) {
      merged.back().first += ", " + who;
    } else {
      merged.emplace_back(who, what);
    }
  }
  std::string s;
  for (const auto& [who, what] : merged) {
    if (!s.empty()) s += "; ";
    if (!who.empty()) s += (who.find(", ") != std::string::npos && who.find("), ") != std::string::npos ? "layers " : "layer ") + who + ": ";
    s += what;
  }
  return s;
}

void record_in_metadata(RepairedCase& r, const rt::Preprocessing& already_applied) {
  ir::Model& m = edit_model(r);
  for (const auto& [key, value] : rt::config_to_metadata(r.config)) m.metadata[key] = value;
  const rt::Preprocessing p = compose(already_applied, r.preprocessing);
  if (p.empty()) {
    m.metadata.erase(rt::kPreprocessingKey);
  } else {
    m.metadata[rt::kPreprocessingKey] = p.to_json();
  }
}

}  // namespace dl::cli
