// The registry of repair kinds (analysis/repair_list.def): names, the fields each kind
// carries, what it changes, and the table docs/fixes.md shows. Applying a kind is the
// cli's (cli/repairs/<stem>.cpp); proposing it, the evidence's (analysis/fixes.cpp).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "analysis/finding.h"

namespace dl::an {

struct RepairKindInfo {
  enum class Scope { kTraining, kModel, kData };
  FixAction::Kind kind;
  const char* name;  // the stem: "learning_rate", "activation", ...
  unsigned fields;   // kRepairLayer | kRepairValue | kRepairFactor | kRepairCount
  Scope scope;
  const char* doc;
};

// All kinds in repair_list.def order (the enum's order).
const std::vector<RepairKindInfo>& repair_kinds();
const RepairKindInfo& repair_kind(FixAction::Kind k);
std::optional<FixAction::Kind> repair_kind_from(const std::string& name);  // nullopt when unknown
const char* repair_scope_name(RepairKindInfo::Scope s);  // "training", "model", "data"

// A layer-local repair: it edits one layer of the graph (scope kModel, with a layer).
bool is_layer_repair(const FixAction& a);

// The action as the JSON report shows it: {"kind", then the fields its kind carries}
// ("layer" only when set, "value" only when not empty).
nlohmann::json to_json(const FixAction& a);

// docs/fixes.md's table of repair kinds (Markdown, one row per kind, ending in "\n").
std::string repair_kind_table();

}  // namespace dl::an
