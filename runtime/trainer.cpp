#include "runtime/trainer.h"

#include <algorithm>
#include <chrono>

#include "converter/errors.h"

namespace dl::rt {
namespace {

// Runs the forward pass; an id outside an op's range (an embedding table) becomes a
// DataError naming the first data cell of the batch that holds it.
void forward_batch(ExecutionGraph& g, const Dataset& data, const BatchIterator& batches, int64_t b) {
  try {
    g.forward();
  } catch (const IndexRangeError& e) {
    for (int64_t i = 0; i < batches.batch_rows(b); ++i) {
      const int64_t r = batches.row(b, i);
      for (int64_t c = 0; c < data.x_size; ++c)
        if (data.x[static_cast<size_t>(r * data.x_size + c)] == static_cast<float>(e.value))
          throw DataError(data.where(r) + (data.csv_lines ? ":" + std::to_string(c + 1) : " column " + std::to_string(c)) +
                          ": id " + std::to_string(e.value) + " is out of range: " + e.what());
    }
    throw;
  }
}

}  // namespace

bool targets_are_classes(const Dataset& data) {
  for (float v : data.y)
    if (v != 0.0f && v != 1.0f) return false;
  return !data.y.empty();
}

// Every frozen name must be a trainable parameter: a typo would silently train the layer.
static void check_frozen(ExecutionGraph& g, const OptimizerConfig& c, const std::string& path) {
  const auto it = c.origin.find("frozen");
  const std::string where = it == c.origin.end() ? "--frozen" : it->second;
  for (const std::string& name : frozen_names(c.frozen)) {
    bool found = false;
    for (const Param& p : g.params()) found = found || p.name == name;
    if (found) continue;
    std::string known;
    for (const Param& p : g.params()) known += (known.empty() ? "" : ", ") + p.name;
    if (known.size() > 300) known = known.substr(0, 300) + "...";
    throw ConfigError(where + ": '" + name + "' is not a trainable parameter of " + path + " (its parameters: " +
                      known + ")");
  }
}

Trainer::Trainer(std::shared_ptr<const ir::Model> model, const TrainConfig& config, Dataset train,
                 Dataset validation)
    : model_(std::move(model)),
      config_(config),
      train_(std::move(train)),
      validation_(std::move(validation)),
      budget_(std::make_shared<MemoryBudget>(config.max_memory_bytes)) {
  validate(config_);
  if (train_.n == 0) throw DataError(train_.source + ": no training rows (after the validation split)");
  loss_ = make_loss(config_.loss, config_.from_logits);
  metric_ = make_metric(config_.loss, config_.from_logits, targets_are_classes(train_));
  optimizer_ = make_optimizer(config_.optimizer);
  budget_->charge(initializer_bytes(*model_), model_->path + ": the model's initializers");
  store_ = ParamStore::from_model(*model_);
  budget_->charge(store_->bytes(), model_->path + ": the parameters being trained");
  ExecutionGraph& g = graph_for(std::min(config_.batch_size, train_.n));
  if (g.input_names().size() != 1 || g.output_names().size() < 1)
    throw ConfigError(model_->path + ": training needs a model with exactly one data input (this one has " +
                      std::to_string(g.input_names().size()) + ")");
  if (g.params().empty()) throw ConfigError(model_->path + ": the model has no trainable parameters");
  check_frozen(g, config_.optimizer, model_->path);
  if (g.input(0).dtype() == DType::kInt64) {  // token ids: the data files hold them as numbers
    check_integer_features(train_, g.input_names()[0]);
    check_integer_features(validation_, g.input_names()[0]);
  }
  main_ = &g;
  budget_->charge(optimizer_->state_bytes(g.params()), "the " + optimizer_->name() + " optimizer's state");
}

Trainer::Trainer(const ir::Model& model, const TrainConfig& config, Dataset train, Dataset validation)
    : Trainer(std::make_shared<const ir::Model>(model), config, std::move(train), std::move(validation)) {}

void Trainer::set_observer(Observer* observer) {
  observer_ = observer;
  for (auto& [rows, g] : graphs_) g->set_observer(observer);
}

ExecutionGraph& Trainer::graph_for(int64_t rows) {
  auto it = graphs_.find(rows);
  if (it != graphs_.end()) return *it->second;
  GraphOptions o;
  o.training = true;
  o.batch_size = rows;
  o.seed = config_.seed;
  o.budget = budget_;
  auto g = std::make_unique<ExecutionGraph>(model_, o, store_);
  const Tensor& out = g->output(0);
  if (out.dtype() != DType::kFloat32) throw ConfigError(model_->path + ": the model output is not float32");
  if (shape_numel(out.shape()) != rows * (loss_ && loss_->name() == "sparse_categorical_crossentropy"
                                              ? out.numel() / rows
                                              : train_.y_size))
    throw ShapeError(train_.source + ": " + std::to_string(train_.y_size) + " target value(s) per row, but the model output '" +
                     g->output_names()[0] + "' has shape " + shape_str(out.shape()) + " (" +
                     std::to_string(out.numel() / std::max<int64_t>(rows, 1)) + " per sample)");
  const bool sparse = loss_ && loss_->name() == "sparse_categorical_crossentropy";
  budget_->charge((sparse ? rows : out.numel()) * int64_t(sizeof(float)),
                  "the targets of a batch of " + std::to_string(rows));
  Tensor target;
  if (sparse)
    target.reset(DType::kFloat32, {rows});
  else
    target.reset(DType::kFloat32, out.shape());
  targets_[rows] = std::move(target);
  g->set_observer(observer_);
  return *graphs_.emplace(rows, std::move(g)).first->second;
}

TrainResult Trainer::run() {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  TrainResult result;
  result.metric_name = metric_->name();
  for (TrainListener* l : listeners_) l->on_train_begin(graph());
  BatchIterator batches(train_, config_.batch_size, config_.seed);
  // Per-iteration history is reserved up front (no allocation per step), up to 2^20
  // iterations: a run of a million epochs, stopped early or by a timeout, must not
  // reserve gigabytes it never uses; beyond that the history grows as the run does.
  const int64_t kMaxReserved = int64_t{1} << 20;
  result.loss.reserve(static_cast<size_t>(std::min(config_.epochs * batches.batch_count(), kMaxReserved)));
  result.metric.reserve(result.loss.capacity());
  result.history.reserve(static_cast<size_t>(std::min(config_.epochs, kMaxReserved)));
  int64_t iteration = 0;
  bool stop = false;
  for (int64_t epoch = 0; epoch < config_.epochs && !stop; ++epoch) {
    const auto e0 = Clock::now();
    batches.epoch(static_cast<int>(epoch));
    EpochSummary summary;
    summary.epoch = epoch;
    double loss_sum = 0, metric_sum = 0;
    int64_t rows_seen = 0;
    result.epochs = epoch + 1;
    for (int64_t b = 0; b < batches.batch_count(); ++b) {
      const int64_t rows = batches.batch_rows(b);
      ExecutionGraph& g = graph_for(rows);
      g.set_training(true);
      Tensor& target = targets_[rows];
      batches.fill(b, g.input(0), target.f());
      IterationInfo info;
      info.iteration = iteration;
      info.epoch = epoch;
      info.batch = b;
      info.batches = batches.batch_count();
      info.rows = rows;
      for (TrainListener* l : listeners_) l->on_batch_begin(info);
      forward_batch(g, train_, batches, b);
      info.loss = loss_->compute(g.output(0), target, &g.output_grad(0));
      info.metric = metric_->compute(g.output(0), target);
      g.backward();
      for (TrainListener* l : listeners_) l->before_update(g, info);
      Optimizer::UpdateObserver* watch = nullptr;
      for (TrainListener* l : listeners_)
        if (!watch) watch = l->update_observer(info);
      optimizer_->step(g.params(), watch);
      for (TrainListener* l : listeners_) l->after_update(g, info);
      result.loss.push_back(info.loss);
      result.metric.push_back(info.metric);
      loss_sum += info.loss * double(rows);
      metric_sum += info.metric * double(rows);
      rows_seen += rows;
      ++iteration;
      for (TrainListener* l : listeners_) stop = l->should_stop() || stop;
      if (interrupt_ && interrupt_->load()) {
        result.interrupted = true;
        stop = true;
      }
      if (stop) break;
    }
    summary.loss = loss_sum / double(std::max<int64_t>(rows_seen, 1));
    summary.metric = metric_sum / double(std::max<int64_t>(rows_seen, 1));
    if (!stop) evaluate(summary);
    summary.seconds = std::chrono::duration<double>(Clock::now() - e0).count();
    result.history.push_back(summary);
    for (TrainListener* l : listeners_) l->on_epoch_end(summary);
    for (TrainListener* l : listeners_) stop = l->should_stop() || stop;
  }
  result.iterations = iteration;
  result.stopped_early = stop && !result.interrupted;
  result.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return result;
}

void Trainer::evaluate(EpochSummary& summary) {
  if (validation_.n == 0) return;
  BatchIterator batches(validation_, config_.batch_size, config_.seed, /*shuffle=*/false);
  batches.epoch(0);
  double loss_sum = 0, metric_sum = 0;
  for (int64_t b = 0; b < batches.batch_count(); ++b) {
    const int64_t rows = batches.batch_rows(b);
    ExecutionGraph& g = graph_for(rows);
    g.set_training(false);
    Observer* saved = observer_;
    g.set_observer(nullptr);  // probes record training steps only
    Tensor& target = targets_[rows];
    batches.fill(b, g.input(0), target.f());
    forward_batch(g, validation_, batches, b);
    loss_sum += loss_->compute(g.output(0), target, nullptr) * double(rows);
    metric_sum += metric_->compute(g.output(0), target) * double(rows);
    g.set_observer(saved);
  }
  summary.has_validation = true;
  summary.val_loss = loss_sum / double(validation_.n);
  summary.val_metric = metric_sum / double(validation_.n);
}

}  // namespace dl::rt
