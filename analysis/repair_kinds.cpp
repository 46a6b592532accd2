#include "analysis/repair_kinds.h"

#include <stdexcept>

namespace dl::an {
namespace {

using Scope = RepairKindInfo::Scope;
constexpr Scope kTraining = Scope::kTraining, kModel = Scope::kModel, kData = Scope::kData;

std::string fields_text(unsigned f) {
  std::string s;
  auto add = [&](unsigned bit, const char* name) {
    if (f & bit) s += std::string(s.empty() ? "" : ", ") + "`" + name + "`";
  };
  add(kRepairLayer, "layer");
  add(kRepairValue, "value");
  add(kRepairFactor, "factor");
  add(kRepairCount, "count");
  return s.empty() ? "—" : s;
}

}  // namespace

const std::vector<RepairKindInfo>& repair_kinds() {
  static const std::vector<RepairKindInfo> kinds = {
#define DL_REPAIR(stem, Name, fields, scope, doc) {FixAction::Kind::k##Name, #stem, (fields), (scope), (doc)},
#include "analysis/repair_list.def"
#undef DL_REPAIR
  };
  return kinds;
}

const RepairKindInfo& repair_kind(FixAction::Kind k) {
  const auto& kinds = repair_kinds();
  const size_t i = static_cast<size_t>(k);
  // The enum and the table come from the same list, so only a cast from a bad integer gets here.
  if (i >= kinds.size()) throw std::logic_error("repair kind " + std::to_string(i) + " is not in repair_list.def");
  return kinds[i];
}

const char* fix_kind_name(FixAction::Kind k) { return repair_kind(k).name; }

std::optional<FixAction::Kind> repair_kind_from(const std::string& name) {
  for (const RepairKindInfo& k : repair_kinds())
    if (name == k.name) return k.kind;
  return std::nullopt;
}

const char* repair_scope_name(Scope s) {
  switch (s) {
    case Scope::kTraining: return "training";
    case Scope::kModel: return "model";
    case Scope::kData: return "data";
  }
  return "?";
}

bool is_layer_repair(const FixAction& a) {
  const RepairKindInfo& k = repair_kind(a.kind);
  return k.scope == Scope::kModel && (k.fields & kRepairLayer) && a.layer >= 0;
}

nlohmann::json to_json(const FixAction& a) {
  const RepairKindInfo& k = repair_kind(a.kind);
  nlohmann::json x = {{"kind", k.name}};
  if ((k.fields & kRepairLayer) && a.layer >= 0) x["layer"] = a.layer;
  if ((k.fields & kRepairValue) && !a.value.empty()) x["value"] = a.value;
  if (k.fields & kRepairFactor) x["factor"] = a.factor;
  if (k.fields & kRepairCount) x["count"] = a.count;
  return x;
}

std::string repair_kind_table() {
  std::string s = "| kind | fields | changes | what it does |\n|---|---|---|---|\n";
  for (const RepairKindInfo& k : repair_kinds())
    s += std::string("| `") + k.name + "` | " + fields_text(k.fields) + " | " + repair_scope_name(k.scope) + " | " +
         k.doc + " |\n";
  return s;
}

}  // namespace dl::an
