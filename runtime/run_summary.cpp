#include "runtime/run_summary.h"

#include <cmath>
#include <sstream>

#include "runtime/registry.h"

namespace dl::rt {

an::ColumnSummary summarize(const float* values, int64_t count, int64_t stride) {
  an::ColumnSummary c;
  double sum = 0, sumsq = 0;
  int64_t finite = 0;
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
  }
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
  h.metric_name = metric_name;
  h.metric_higher_is_better = metric_higher_is_better;
  h.batches_per_epoch = (train.n + config.batch_size - 1) / config.batch_size;

  const auto& steps = graph.steps();
  for (const Layer& l : graph.layers()) {
    an::LayerInfo info;
    info.index = l.index;
    info.nodes = l.nodes;
    for (size_t k : l.steps) info.op_types.push_back(steps[k].node->op_type);
    info.params = l.params;
    for (const std::string& p : l.params) info.param_count += graph.store()->values.at(p).numel();
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
  for (int64_t f = 0; f < train.y_size; ++f) d.target_columns.push_back(summarize(train.y.data() + f, train.n, train.y_size));
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
