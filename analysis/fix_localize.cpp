// Localization confirmed by repair (analysis/fixes.h: localize_by_repair).
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "analysis/fixes.h"
#include "analysis/repair_kinds.h"

namespace dl::an {

const char* repair_localization_name(RepairLocalization::Status s) {
  using S = RepairLocalization::Status;
  switch (s) {
    case S::kNotTried: return "not_tried";
    case S::kConfirmed: return "confirmed";
    case S::kOtherLayer: return "other_layer";
    case S::kNotLayer: return "not_layer";
    case S::kMixed: return "mixed";
    case S::kUnconfirmed: return "unconfirmed";
  }
  return "?";
}

RepairLocalization localize_by_repair(const Finding& f) {
  using S = RepairLocalization::Status;
  RepairLocalization r;
  if (!f.fixes_attempted && f.fixes.empty()) return r;
  r.status = S::kUnconfirmed;
  std::map<int, RepairLocalization::LayerScore> scores;
  for (size_t i = 0; i < f.fixes.size(); ++i) {  // ranked: the best verified repair first
    const FixOutcome& x = f.fixes[i];
    if (!x.verified) continue;
    std::set<int> layers;
    size_t others = 0;
    for (const FixAction& a : x.actions) {
      if (is_layer_repair(a)) layers.insert(a.layer);
      else ++others;
    }
    // A repair that changes a layer and the training or the data at once (a sigmoid output
    // with binary cross-entropy, a layer edit stacked on a smaller learning rate) does not
    // tell which of its changes removed the fault.
    const bool mixed = !layers.empty() && others > 0;
    if (mixed) {
      if (r.status == S::kUnconfirmed) r.status = S::kMixed, r.repair = static_cast<int>(i);
      continue;
    }
    for (int l : layers) {
      RepairLocalization::LayerScore& s = scores[l];
      s.layer = l;
      s.score += 1.0 / static_cast<double>(layers.size());
      ++s.repairs;
    }
    // The best verified repair that changes only layers, or only the training and data, decides.
    if (r.status == S::kUnconfirmed || r.status == S::kMixed) {
      r.repair = static_cast<int>(i);
      r.status = layers.empty() ? S::kNotLayer : layers.count(f.layer) ? S::kConfirmed : S::kOtherLayer;
    }
  }
  for (const auto& [layer, s] : scores) r.ranking.push_back(s);
  std::stable_sort(r.ranking.begin(), r.ranking.end(),
                   [](const auto& a, const auto& b) { return a.score > b.score; });  // ties: graph order
  return r;
}

namespace {

// Whether the repairs put the fault in a layer: unknown (null) when they cannot tell.
nlohmann::json layer_blamed(RepairLocalization::Status s) {
  using S = RepairLocalization::Status;
  if (s == S::kConfirmed || s == S::kOtherLayer) return true;
  if (s == S::kNotLayer) return false;
  return nullptr;
}

}  // namespace

nlohmann::json to_json(const RepairLocalization& r, const std::vector<FixOutcome>& fixes) {
  using nlohmann::json;
  json ranking = json::array();
  for (const auto& s : r.ranking) ranking.push_back({{"layer", s.layer}, {"score", s.score}, {"repairs", s.repairs}});
  const bool has_repair = r.repair >= 0 && static_cast<size_t>(r.repair) < fixes.size();
  return {{"status", repair_localization_name(r.status)},
          {"confirmed_by_repair", r.status == RepairLocalization::Status::kConfirmed},
          {"layer_blamed", layer_blamed(r.status)},
          {"repair", has_repair ? json(fixes[static_cast<size_t>(r.repair)].change) : json(nullptr)},
          {"layer_ranking", ranking}};
}

std::string describe_repair_localization(const Finding& f) {
  using S = RepairLocalization::Status;
  const RepairLocalization& r = f.repair_localization;
  const std::string by = "repair " + std::to_string(r.repair + 1);
  std::string layers;
  for (const auto& s : r.ranking) {
    char score[32];
    std::snprintf(score, sizeof score, "%.3g", s.score);
    layers += (layers.empty() ? "" : ", ") + std::to_string(s.layer) + " (score " + score + ")";
  }
  std::string out;
  switch (r.status) {
    case S::kConfirmed:
      out = "layer " + std::to_string(f.layer) + " confirmed by " + by + ", which edits only layers and removes the fault.";
      break;
    case S::kOtherLayer: out = by + " edits only other layers and removes the fault: look there too."; break;
    case S::kNotLayer:
      out = "no layer to blame: " + by + " changes only the training or the data and removes the fault.";
      break;
    case S::kMixed:
      out = "the verified repairs change a layer and the training or the data at once, so they do not tell which one "
            "was at fault.";
      break;
    case S::kNotTried:
    case S::kUnconfirmed: return "";
  }
  if (!layers.empty() && (r.status != S::kConfirmed || r.ranking.size() > 1))
    out += " Layers whose own repair works: " + layers + ".";
  return out;
}

}  // namespace dl::an
