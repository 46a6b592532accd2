#include "runtime/run_summary.h"

#include <cmath>
#include <set>
#include <sstream>

#include "runtime/registry.h"

namespace dl::rt {

an::ColumnSummary summarize(const float* values, int64_t count, int64_t stride, bool count_bounds) {
  an::ColumnSummary c;
  double sum = 0, sumsq = 0;
  int64_t finite = 0, below_zero = 0, below_minus_one = 0, above_one = 0;
  double mn = INFINITY, mx = -INFINITY;
  for (int64_t k = 0; k < count; ++k) {
    const float v = values[k * stride];
    if (std::isnan(v)) { ++c.nan; continue; }
    if (std::isinf(v)) { ++c.inf; continue; }
    ++finite;
    sum += v;
    sumsq += double(v) * v;
    mn = std::min(mn, double(v));
    mx = std::max(mx, double(v));
    below_zero += v < 0.0f;
    below_minus_one += v < -1.0f;
    above_one += v > 1.0f;
  }
  if (count_bounds) c.below_zero = below_zero, c.below_minus_one = below_minus_one, c.above_one = above_one;
  if (finite > 0) {
    c.min = mn;
    c.max = mx;
    c.mean = sum / double(finite);
    c.std = std::sqrt(std::max(0.0, sumsq / double(finite) - c.mean * c.mean));
  }
  return c;
}

namespace {

std::string fmt_double(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// For each layer, the layer whose anchor step alone reads the values the layer's steps
// write (graph outputs count as readers outside every layer), else LayerInfo::kNoChain;
// also kNoChain for a layer that reads from more than one other layer (a merge).
std::vector<int> chained_layers(const ExecutionGraph& graph) {
  const auto& steps = graph.steps();
  std::vector<int> writer_layer;  // by slot
  for (const Step& st : steps)
    for (int s : st.outputs)
      if (s >= 0) {
        if (writer_layer.size() <= size_t(s)) writer_layer.resize(size_t(s) + 1, -1);
        writer_layer[size_t(s)] = st.layer;
      }
  const size_t n = graph.layers().size();
  std::vector<int> feeds(n, an::LayerInfo::kNoChain);
  std::vector<bool> broken(n, false);
  std::vector<std::set<int>> sources(n);  // the other layers each layer reads from
  auto reader = [&](int from, int to_layer, bool anchor) {
    if (from < 0 || to_layer == from) return;
    if (to_layer >= 0) sources[size_t(to_layer)].insert(from);
    int& f = feeds[size_t(from)];
    if (!anchor || (f != an::LayerInfo::kNoChain && f != to_layer)) broken[size_t(from)] = true;
    f = to_layer;
  };
  for (size_t k = 0; k < steps.size(); ++k) {
    const Step& st = steps[k];
    const bool anchor = st.layer >= 0 && graph.layers()[size_t(st.layer)].anchor_step == k;
    for (int s : st.inputs)
      if (s >= 0 && size_t(s) < writer_layer.size()) reader(writer_layer[size_t(s)], st.layer, anchor);
  }
  for (const std::string& out : graph.output_names()) {
    const int s = graph.slot_of(out);
    if (s >= 0 && size_t(s) < writer_layer.size() && writer_layer[size_t(s)] >= 0) broken[size_t(writer_layer[size_t(s)])] = true;
  }
  // A layer that merges several layers (a residual Add) is no link of a plain chain either.
  for (size_t l = 0; l < n; ++l)
    if (broken[l] || sources[l].size() > 1) feeds[l] = an::LayerInfo::kNoChain;
  return feeds;
}

}  // namespace

void describe_run(const ExecutionGraph& graph, const TrainConfig& config, const Dataset& train,
                  const std::string& metric_name, bool metric_higher_is_better, an::TraceHeader& h) {
  h.model = graph.model().path;
  h.data = train.source;
  h.config["loss"] = config.loss;
  h.config["from_logits"] = config.from_logits ? "true" : "false";
  h.config["optimizer"] = config.optimizer.name;
  if (config.optimizer.learning_rate) h.config["learning_rate"] = fmt_double(*config.optimizer.learning_rate);
  h.config["momentum"] = fmt_double(config.optimizer.momentum);
  h.config["epochs"] = std::to_string(config.epochs);
  h.config["batch_size"] = std::to_string(config.batch_size);
  h.config["validation_split"] = fmt_double(config.validation_split);
  if (!config.optimizer.frozen.empty()) h.config["frozen"] = config.optimizer.frozen;
  h.metric_name = metric_name;
  h.metric_higher_is_better = metric_higher_is_better;
  h.batches_per_epoch = (train.n + config.batch_size - 1) / config.batch_size;

  const std::vector<int> feeds = chained_layers(graph);
  for (const Layer& l : graph.layers()) {
    an::LayerInfo info;
    info.index = l.index;
    info.nodes = l.nodes;
    info.op_types = l.op_types;
    info.params = l.params;
    for (const std::string& p : l.params) info.param_count += graph.store()->values.at(p).numel();
    info.feeds = feeds[static_cast<size_t>(l.index)];
    h.layers.push_back(info);
  }
  for (const auto& [name, t] : graph.store()->values) {
    an::InitializerSummary s;
    an::ColumnSummary c = summarize(t.f(), t.numel(), 1);
    s.name = name;
    s.count = t.numel();
    s.min = c.min;
    s.max = c.max;
    s.mean = c.mean;
    s.std = c.std;
    s.nan = c.nan;
    s.inf = c.inf;
    h.initializers.push_back(s);
  }
  if (!graph.output_names().empty()) {
    const Tensor& out = graph.output(0);
    h.output_width = out.rank() >= 2 ? out.numel() / out.dim(0) : 1;
  }

  an::DataSummary& d = h.data_summary;
  d.source = train.source;
  d.rows = train.n;
  d.features = train.x_size;
  const int64_t shown = std::min<int64_t>(train.x_size, 4096);
  for (int64_t f = 0; f < shown; ++f) d.feature_columns.push_back(summarize(train.x.data() + f, train.n, train.x_size));
  d.all_features = summarize(train.x.data(), train.n * train.x_size, 1);
  for (int64_t f = 0; f < train.y_size; ++f)
    d.target_columns.push_back(summarize(train.y.data() + f, train.n, train.y_size, true));
  bool classes = !train.y.empty(), integer = !train.y.empty();
  for (float v : train.y) {
    classes = classes && (v == 0.0f || v == 1.0f);
    integer = integer && std::isfinite(v) && v == std::floor(v);
  }
  d.targets_are_classes = classes || config.loss == "sparse_categorical_crossentropy";
  d.targets_integer = integer;
  d.classes = h.output_width;
  for (const LabelIssue& issue : train.label_issues)
    d.label_issues.push_back({row_location(train.source, train.csv_lines, issue.line), double(issue.value)});
  d.label_issue_count = train.label_issue_count;
}

}  // namespace dl::rt
