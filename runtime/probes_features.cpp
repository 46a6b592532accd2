// The probes of op features (an::OpFeature): declared for the steps whose op reports
// one (Op::feature) and reduced from what the op reports while it runs. Part of
// ProbeRecorder (runtime/probes.h).
#include <algorithm>
#include <limits>
#include <unordered_map>
#include <vector>

#include "runtime/probes.h"

namespace dl::rt {

void ProbeRecorder::declare_features(const ExecutionGraph& graph) {
  const auto& steps = graph.steps();
  feature_probe_.assign(steps.size(), -1);
  std::vector<int> model_outputs;
  for (const std::string& name : graph.output_names()) model_outputs.push_back(graph.slot_of(name));
  auto& probes = trace_.header.probes;
  for (size_t k = 0; k < steps.size(); ++k) {
    const Step& st = steps[k];
    const OpFeatureInfo f = st.op->feature();
    if (f.kind == an::OpFeature::kNone || f.rows <= 0 || st.outputs.empty() || st.outputs[0] < 0) continue;
    if (std::find(model_outputs.begin(), model_outputs.end(), st.outputs[0]) != model_outputs.end()) continue;
    // A softmax in the last layer is the model's output (maybe reshaped after it), not an
    // attention: the output and loss rules judge it.
    if (f.kind == an::OpFeature::kRowEntropy && !graph.layers().empty() &&
        st.layer == graph.layers().back().index)
      continue;
    an::Probe p;
    p.kind = an::ProbeKind::kFeature;
    p.feature = f.kind;
    p.layer = st.layer;
    p.step = static_cast<int>(k);
    p.node = st.node->name;
    p.op_type = st.node->op_type;
    p.op = describe(st.op->traits(), graph.value(st.outputs[0]).shape());
    p.op.units = f.row_length;
    feature_probe_[k] = static_cast<int>(probes.size());
    probes.push_back(p);
  }
}

void ProbeRecorder::declare_masked(const ExecutionGraph& graph) {
  const auto& steps = graph.steps();
  std::unordered_map<int, std::vector<size_t>> readers;  // value slot -> the steps reading it
  for (size_t k = 0; k < steps.size(); ++k)
    for (int v : steps[k].inputs)
      if (v >= 0) readers[v].push_back(k);
  for (const std::string& name : graph.output_names())
    if (const int v = graph.slot_of(name); v >= 0) readers[v].push_back(steps.size());  // (not a step)
  std::unordered_map<int, size_t> producer;  // value slot -> the step writing it
  for (size_t k = 0; k < steps.size(); ++k)
    for (int v : steps[k].outputs)
      if (v >= 0) producer[v] = k;
  auto is_float = [&](int v) { return v >= 0 && graph.value(v).dtype() == DType::kFloat32; };
  auto holds_neg_inf = [&](int v) {
    const Tensor& t = graph.value(v);
    if (!is_float(v) || t.numel() == 0) return false;
    return std::any_of(t.f(), t.f() + t.numel(), [](float x) { return x == -std::numeric_limits<float>::infinity(); });
  };
  // The steps a mask's -inf passes through to the scores: element-wise arithmetic (Add,
  // Mul), steps that pass values on (Where, as masked_fill exports; a float Cast) and
  // moves (Reshape, Expand, Slice, Concat, ...). Their float inputs can carry it.
  auto carries = [&](const Step& st) {
    const OpTraits t = st.op->traits();
    return !st.outputs.empty() && is_float(st.outputs[0]) &&
           (t.role == OpTraits::Role::kElementwise || t.passes_values || t.rearranges || st.op->copies_input());
  };
  // Which steps' outputs may hold a mask's -inf: such a step reading a -inf among the
  // values no step writes (initializers, plan-time constants: the mask itself), or an
  // output of such a step. A -inf anywhere else is an overflow, counted as Inf.
  std::vector<uint8_t> mask_source(steps.size(), 0);
  for (size_t k = 0; k < steps.size(); ++k) {
    const Step& st = steps[k];
    if (!carries(st)) continue;
    for (size_t i = 0; i < st.inputs.size() && !mask_source[k]; ++i) {
      const int v = st.inputs[i];
      if (!is_float(v)) continue;
      const auto p = producer.find(v);
      mask_source[k] = p == producer.end() ? holds_neg_inf(v) : mask_source[p->second];
    }
  }
  // Masked: a mask source's output that only softmaxes read (as their data input), or
  // mask sources whose own outputs are masked (the mask added to the scores, a scaled or
  // reshaped mask). Later steps first: a reader is decided before the steps it reads.
  std::vector<uint8_t> masked(steps.size(), 0);
  for (size_t k = steps.size(); k-- > 0;) {
    const Step& st = steps[k];
    if (!mask_source[k]) continue;
    const int out = st.outputs[0];
    const std::vector<size_t>& r = readers[out];
    bool all = !r.empty();
    for (size_t j : r) {
      if (!all) break;
      if (j >= steps.size()) {
        all = false;  // a model output
        continue;
      }
      const Step& reader = steps[j];
      const bool as_data = !reader.inputs.empty() && reader.inputs[0] == out &&
                           std::count(reader.inputs.begin(), reader.inputs.end(), out) == 1;
      all = (as_data && reader.op->traits().normalizes) || masked[j];
    }
    masked[k] = all;
    if (all && forward_probe_[k] >= 0) probe_bands_[size_t(forward_probe_[k])].masked = true;
  }
}

ValueSink* ProbeRecorder::feature_sink(size_t step_index) {
  if (!current_ || feature_probe_[step_index] < 0) return nullptr;
  feature_sink_probe_ = feature_probe_[step_index];
  feature_sink_.reset(stats::Bands{});
  return &feature_sink_;
}

// The feature's statistics over the rows the op reported (none: an empty record).
void ProbeRecorder::reduce_feature(size_t step_index) {
  const int probe = feature_probe_[step_index];
  if (probe < 0) return;
  an::TensorStats s;
  if (feature_sink_probe_ == probe && feature_sink_.reported() > 0)
    s = stats::finish(feature_sink_.total(), feature_sink_.reported());
  feature_sink_probe_ = -1;
  current_[probe] = s;
}

}  // namespace dl::rt
