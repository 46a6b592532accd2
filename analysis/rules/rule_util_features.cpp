#include <algorithm>

#include "analysis/context.h"
#include "analysis/rules/rule_util.h"

namespace dl::an::ru {

std::vector<size_t> feature_probes(const AnalysisContext& ctx, OpFeature feature) {
  std::vector<size_t> out;
  for (size_t k : ctx.probes(ProbeKind::kFeature))
    if (ctx.header().probes[k].feature == feature) out.push_back(k);
  return out;
}

FeatureSpan feature_span(const AnalysisContext& ctx, size_t probe, const std::function<bool(const TensorStats&)>& holds) {
  const Trace& t = ctx.trace();
  const size_t end = finite_prefix(ctx);
  FeatureSpan s;
  bool broken = false;
  for (size_t r = 0; r < end; ++r) {
    const TensorStats& v = t.at(r, probe);
    if (v.count == 0) continue;  // the op reported nothing at this record
    if (s.reported++ == 0) s.first = r;
    if (broken || !holds(v)) {
      broken = true;
      continue;
    }
    ++s.held;
    s.last_held = r;
  }
  if (s.held > 0) s.iterations = t.records[s.last_held].iteration - t.records[s.first].iteration + 1;
  return s;
}

bool persisted(const AnalysisContext& ctx, const FeatureSpan& s, double min_epochs, size_t min_records) {
  if (!s.all() || s.held < min_records) return false;
  const int64_t per_epoch = std::max<int64_t>(ctx.header().batches_per_epoch, 1);
  return ctx.final() || double(s.iterations) >= min_epochs * double(per_epoch);
}

std::optional<std::pair<size_t, FeatureSpan>> first_persisted(const AnalysisContext& ctx, OpFeature feature,
                                                              const std::function<bool(const TensorStats&)>& holds,
                                                              double min_epochs, size_t min_records) {
  for (size_t k : feature_probes(ctx, feature)) {
    const FeatureSpan s = feature_span(ctx, k, holds);
    if (persisted(ctx, s, min_epochs, min_records)) return std::make_pair(k, s);
  }
  return std::nullopt;
}

}  // namespace dl::an::ru
