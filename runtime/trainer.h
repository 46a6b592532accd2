// The training loop: Keras' fit() on the execution graph. Batches come from a
// Dataset, the loss and metric follow Keras, the optimizer updates the shared
// parameters; listeners (progress, probes, the analysis) see every iteration and may
// stop training.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/data/dataset.h"
#include "runtime/graph.h"
#include "runtime/loss.h"
#include "runtime/optimizer.h"
#include "runtime/train_config.h"

namespace dl::rt {

struct IterationInfo {
  int64_t iteration = 0;  // 0-based, over the whole run
  int64_t epoch = 0;      // 0-based
  int64_t batch = 0;      // within the epoch
  int64_t batches = 0;    // per epoch
  int64_t rows = 0;       // rows in this batch
  double loss = 0;
  double metric = 0;
};

struct EpochSummary {
  int64_t epoch = 0;
  double loss = 0, metric = 0;  // means over the epoch's batches, weighted by rows (Keras)
  bool has_validation = false;
  double val_loss = 0, val_metric = 0;
  double seconds = 0;
};

class TrainListener {
 public:
  virtual ~TrainListener() = default;
  virtual void on_train_begin(const ExecutionGraph& graph) { (void)graph; }
  // Before the forward pass of an iteration (info has no loss yet).
  virtual void on_batch_begin(const IterationInfo& info) { (void)info; }
  // Just before the optimizer step: gradients are final, weights not yet changed.
  virtual void before_update(const ExecutionGraph& graph, const IterationInfo& info) { (void)graph; (void)info; }
  virtual void after_update(const ExecutionGraph& graph, const IterationInfo& info) { (void)graph; (void)info; }
  // Asked before each update (after before_update): an observer the optimizer shows
  // every chunk of every parameter as it updates it (Optimizer::UpdateObserver), or null.
  // The first listener that returns one gets it.
  virtual Optimizer::UpdateObserver* update_observer(const IterationInfo& info) { (void)info; return nullptr; }
  virtual void on_epoch_end(const EpochSummary& summary) { (void)summary; }
  // Polled after every iteration; true ends training (a conclusive fault was found).
  virtual bool should_stop() { return false; }
};

struct TrainResult {
  int64_t iterations = 0;
  int64_t epochs = 0;  // epochs started
  bool stopped_early = false;
  bool interrupted = false;
  std::vector<EpochSummary> history;
  std::vector<double> loss, metric;  // per iteration
  std::string metric_name;
  double seconds = 0;
};

class Trainer {
 public:
  // Throws ConfigError / ShapeError when the loss, optimizer or shapes do not fit, and
  // ResourceError when the run would plan more than config.max_memory_bytes: the model,
  // the parameter store, every graph's forward and gradient buffers, the optimizer's
  // state and the targets all count (memory_budget.h). The graphs share `model` (never
  // copied) and one parameter store.
  Trainer(std::shared_ptr<const ir::Model> model, const TrainConfig& config, Dataset train, Dataset validation);
  // Copies `model` once (tests, benchmarks).
  Trainer(const ir::Model& model, const TrainConfig& config, Dataset train, Dataset validation);

  void add_listener(TrainListener* listener) { listeners_.push_back(listener); }
  // Probes observe every graph the trainer runs (full and partial batch).
  void set_observer(Observer* observer);
  // Set from a signal handler to stop at the end of the current iteration.
  void set_interrupt_flag(const std::atomic<bool>* flag) { interrupt_ = flag; }

  TrainResult run();

  // The main graph: the one for full batches (min(batch_size, rows)), planned first.
  // Other batch sizes (the last partial batch, validation) have graphs of their own.
  ExecutionGraph& graph() { return *main_; }
  std::shared_ptr<ParamStore> store() const { return store_; }
  const MemoryBudget& budget() const { return *budget_; }
  size_t graph_count() const { return graphs_.size(); }
  const Loss& loss() const { return *loss_; }
  const Metric& metric() const { return *metric_; }
  const Dataset& train_data() const { return train_; }

 private:
  ExecutionGraph& graph_for(int64_t rows);
  void evaluate(EpochSummary& summary);

  std::shared_ptr<const ir::Model> model_;
  TrainConfig config_;
  Dataset train_, validation_;
  std::shared_ptr<MemoryBudget> budget_;
  std::shared_ptr<ParamStore> store_;
  ExecutionGraph* main_ = nullptr;
  std::map<int64_t, std::unique_ptr<ExecutionGraph>> graphs_;  // by batch rows
  std::map<int64_t, Tensor> targets_;                           // target buffer per batch rows
  std::unique_ptr<Loss> loss_;
  std::unique_ptr<Metric> metric_;
  std::unique_ptr<Optimizer> optimizer_;
  std::vector<TrainListener*> listeners_;
  Observer* observer_ = nullptr;
  const std::atomic<bool>* interrupt_ = nullptr;
};

// True when every target value is 0 or 1 (classification-like targets for mse/mae).
bool targets_are_classes(const Dataset& data);

}  // namespace dl::rt
