#include <array>
#include <cstdio>

#include "cli/repairs/repair.h"
#include "converter/errors.h"

namespace dl::cli::repairs {
namespace {

constexpr ApplyFn kApply[] = {
#define DL_REPAIR(stem, Name, fields, scope, doc) &apply_repair_##stem,
#include "analysis/repair_list.def"
#undef DL_REPAIR
};

}  // namespace

ApplyFn apply_fn(an::FixAction::Kind k) {
  const size_t i = static_cast<size_t>(k);
  if (i >= std::size(kApply)) throw InternalError("repair kind " + std::to_string(i) + " has no apply function");
  return kApply[i];
}

const an::LayerInfo& layer_of(const an::Trace& trace, int layer) {
  const auto& layers = trace.header.layers;
  if (layer < 0 || static_cast<size_t>(layer) >= layers.size())
    throw ModelError("repair names layer " + std::to_string(layer) + ", but the model has " +
                     std::to_string(layers.size()) + " layers");
  return layers[static_cast<size_t>(layer)];
}

ir::Model& edit_model(RepairedCase& r) {
  auto copy = std::make_shared<ir::Model>(*r.model);
  r.model = copy;
  return *copy;
}

RepairChange layer_change(const an::LayerInfo& l, std::string what) {
  RepairChange c;
  c.layer = l.index;
  c.layer_node = l.nodes.empty() ? "" : l.nodes.front();
  c.what = std::move(what);
  return c;
}

std::string layer_name(const an::LayerInfo& l) {
  return "layer " + std::to_string(l.index) + (l.nodes.empty() ? "" : " (" + l.nodes.front() + ")");
}

std::string short_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

double effective_lr(const rt::OptimizerConfig& c) { return rt::make_optimizer(c)->learning_rate(); }

}  // namespace dl::cli::repairs
