// Helpers of the dynamic per-tensor rule tests (rules_dyn*_test.cpp): the rules under
// test, --set overrides, and edits that bend the builder's healthy trace into a symptom.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "analysis/context.h"
#include "rules_test_util.h"

namespace dl::test::rules_dyn {

using namespace dl::test::rules;

inline const std::set<std::string> kDyn = {"numerical_error", "exploding_tensor", "vanishing_gradient",
                                           "dead_units",      "saturated_units",  "unchanged_weights"};
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Findings and warnings of the rules in kDyn only.
inline std::vector<Finding> dyn(const std::vector<Finding>& all) { return of_rules(all, kDyn); }

// Applies fn to the stats of `probe` in records [from, to).
inline void edit(Trace& t, size_t probe, size_t from, size_t to,
                 const std::function<void(an::TensorStats&, size_t)>& fn) {
  for (size_t r = from; r < std::min(to, t.size()); ++r) fn(t.at(r, probe), r);
}

// Every probe of a kind (optionally of one layer).
inline std::vector<size_t> probes_of(const Trace& t, ProbeKind kind, int layer = -2) {
  std::vector<size_t> out;
  for (size_t k = 0; k < t.header.probes.size(); ++k)
    if (t.header.probes[k].kind == kind && (layer == -2 || t.header.probes[k].layer == layer)) out.push_back(k);
  return out;
}

// NaN everywhere from record `from` on (loss, every probe): what a diverged run looks like.
inline void poison_from(Trace& t, size_t from) {
  for (size_t r = from; r < t.size(); ++r) {
    t.records[r].loss = kNaN;
    t.loss[size_t(t.records[r].iteration)] = kNaN;
    for (size_t k = 0; k < t.header.probes.size(); ++k) t.at(r, k).nan = t.at(r, k).count;
  }
}

// A run that does not learn: flat loss, accuracy at chance.
inline void flat_run(Trace& t, double loss = 1.1) {
  for (size_t i = 0; i < t.loss.size(); ++i) {
    t.loss[i] = float(loss * (1 + 0.01 * std::sin(double(i))));
    t.metric[i] = 0.33f;
  }
  for (an::IterationRecord& r : t.records) {
    r.loss = t.loss[size_t(r.iteration)];
    r.metric = t.metric[size_t(r.iteration)];
  }
}

// Sets ||dw|| and ||dw||/||w|| of a layer's parameter updates (every layer with -1).
inline void set_updates(Trace& t, int layer, size_t from, size_t to, double ratio) {
  for (size_t k : probes_of(t, ProbeKind::kUpdate, layer == -1 ? -2 : layer))
    edit(t, k, from, to, [&](an::TensorStats& s, size_t) {
      s.mean = float(ratio);
      s.l2 = float(ratio * 1.2);
    });
}

// Sets ||g|| (and a matching spread) of a layer's parameter gradients (every layer with -1).
inline void set_param_grads(Trace& t, int layer, size_t from, size_t to, double l2) {
  for (size_t k : probes_of(t, ProbeKind::kParamGrad, layer == -1 ? -2 : layer))
    edit(t, k, from, to, [&](an::TensorStats& s, size_t) {
      s.l2 = float(l2);
      s.std = float(l2 / 8);
      s.min = float(-l2 / 4), s.max = float(l2 / 4), s.mean_abs = float(l2 / 10);
    });
}

// The first finding with this symptom, nullptr when none.
inline const Finding* find(const std::vector<Finding>& fs, const std::string& symptom) {
  for (const Finding& f : fs)
    if (f.symptom == symptom) return &f;
  return nullptr;
}

}  // namespace dl::test::rules_dyn
