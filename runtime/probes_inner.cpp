// The recurrent and embedding probes of ProbeRecorder (issue 16): a recurrent op's gates
// and hidden states over time (reported by the op, FwdCtx::inner), an embedding table's
// rows changed by each update (counted from the optimizer's chunks).
#include <algorithm>
#include <cmath>

#include "runtime/probes.h"

namespace dl::rt {
namespace {

an::TensorStats finish_part(const InnerStats::Part& p) {
  an::TensorStats s;
  s.count = static_cast<uint32_t>(std::min<int64_t>(p.n, UINT32_MAX));
  s.nan = static_cast<uint32_t>(std::min<int64_t>(p.nan, UINT32_MAX));
  s.inf = static_cast<uint32_t>(std::min<int64_t>(p.inf, UINT32_MAX));
  const int64_t finite = p.n - p.nan - p.inf;
  if (finite <= 0) return s;
  const double mean = p.sum / double(finite);
  s.mean = float(mean);
  s.std = float(std::sqrt(std::max(0.0, p.sumsq / double(finite) - mean * mean)));
  s.l2 = float(std::sqrt(p.sumsq));
  s.min = p.min;
  s.max = p.max;
  s.sat_frac = float(double(p.saturated) / double(finite));
  return s;
}

}  // namespace

void ProbeRecorder::declare_inner_probes(const ExecutionGraph& graph) {
  auto& probes = trace_.header.probes;
  const auto& steps = graph.steps();
  const auto& params = const_cast<ExecutionGraph&>(graph).params();
  inner_probe_.assign(steps.size(), -1);
  rows_.assign(params.size(), RowState{});
  for (size_t k = 0; k < steps.size(); ++k) {
    const Step& st = steps[k];
    const OpTraits traits = st.op->traits();
    if (!traits.recurrent && !traits.embedding) continue;
    an::Probe p;
    p.layer = st.layer;
    p.step = static_cast<int>(k);
    p.node = st.node->name;
    p.op_type = st.node->op_type;
    const Tensor* out = st.outputs.empty() || st.outputs[0] < 0 ? nullptr : &graph.value(st.outputs[0]);
    p.op = describe(traits, out ? out->shape() : Shape{});
    p.op.recurrent = traits.recurrent;
    p.op.bounded_state = traits.bounded_state;
    p.op.embedding = traits.embedding;
    if (traits.recurrent) {
      inner_probe_[k] = static_cast<int>(probes.size());
      for (an::ProbeKind kind : {an::ProbeKind::kGates, an::ProbeKind::kCandidates, an::ProbeKind::kStateFirst,
                                 an::ProbeKind::kStateLast}) {
        p.kind = kind;
        probes.push_back(p);
      }
      continue;
    }
    // The table: the parameter read as input 0 (a view of it does not count).
    if (st.inputs.empty() || st.inputs[0] < 0) continue;
    const std::string& table = graph.value_name(st.inputs[0]);
    for (size_t j = 0; j < params.size(); ++j) {
      const Tensor& v = *params[j].value;
      if (params[j].name != table || v.rank() < 1 || v.dim(0) <= 0 || rows_[j].probe >= 0) continue;
      rows_[j].probe = static_cast<int>(probes.size());
      rows_[j].width = v.numel() / v.dim(0);
      rows_[j].changed.assign(size_t(v.dim(0)), 0);
      rows_[j].ever.assign(size_t(v.dim(0)), 0);
      p.kind = an::ProbeKind::kRows;
      probes.push_back(p);
    }
  }
}

InnerStats* ProbeRecorder::inner_sink(size_t step_index) {
  if (!current_ || inner_probe_[step_index] < 0) return nullptr;
  inner_.reset();
  inner_.margin = an::kGateMargin;
  return &inner_;
}

void ProbeRecorder::record_inner(size_t step_index) {
  const int probe = inner_probe_[step_index];
  if (!current_ || probe < 0) return;
  current_[probe] = finish_part(inner_.gates);
  current_[probe + 1] = finish_part(inner_.candidates);
  current_[probe + 2] = finish_part(inner_.first);
  current_[probe + 3] = finish_part(inner_.last);
  inner_.reset();
}

// At a full iteration every chunk of the table went through on_chunk (changed rows
// marked there); otherwise the last full record is carried.
void ProbeRecorder::record_rows(size_t param, bool full) {
  RowState& r = rows_[param];
  if (r.probe < 0 || !current_) return;
  if (!full) {
    an::TensorStats s = r.last;
    s.flags |= an::TensorStats::kCarried;
    current_[r.probe] = s;
    return;
  }
  int64_t changed = 0, ever = 0;
  for (size_t k = 0; k < r.changed.size(); ++k) {
    changed += r.changed[k];
    ever += r.ever[k];
    r.changed[k] = 0;
  }
  const double rows = double(r.changed.size());
  an::TensorStats s;
  s.count = static_cast<uint32_t>(std::min<size_t>(r.changed.size(), UINT32_MAX));
  s.zero_frac = float(1.0 - double(changed) / rows);
  s.dead_frac = float(1.0 - double(ever) / rows);
  s.mean = float(changed);
  current_[r.probe] = r.last = s;
}

}  // namespace dl::rt
