// --max-memory counts what a run holds (issue 18): forward and gradient buffers of every
// graph, the model, the parameter store, the optimizer's state and the targets; the
// graphs of one run share one model and one parameter store instead of copying them.
#include <doctest/doctest.h>

#include <memory>
#include <set>
#include <string>

#include "converter/errors.h"
#include "converter/import.h"
#include "runtime/graph.h"
#include "runtime/memory_budget.h"
#include "runtime/optimizer.h"
#include "runtime/trainer.h"

namespace {

std::shared_ptr<const dl::ir::Model> demo_model() {
  return std::make_shared<const dl::ir::Model>(
      dl::conv::import_model(std::string(DL_SOURCE_DIR) + "/models/demo/model.onnx"));
}

dl::rt::Dataset demo_data() {
  dl::rt::DatasetSpec spec;
  spec.sample_shape = {4};
  spec.output_width = 3;
  spec.encoding = dl::rt::DatasetSpec::Encoding::kOneHot;
  return dl::rt::load_dataset(std::string(DL_SOURCE_DIR) + "/models/demo/data.csv", spec);
}

dl::rt::TrainConfig demo_config(const dl::ir::Model& m) {
  dl::rt::TrainConfig c = dl::rt::config_from_metadata(m.metadata);
  c.epochs = 1;
  c.batch_size = 64;
  c.optimizer.name = "adam";  // two state slots per parameter
  return c;
}

// Records the model and the first parameter tensor of every graph training runs on.
struct GraphWatch : dl::rt::TrainListener {
  std::set<const dl::ir::Model*> models;
  std::set<const dl::rt::Tensor*> first_params;
  std::set<int64_t> rows;
  void before_update(const dl::rt::ExecutionGraph& g, const dl::rt::IterationInfo& info) override {
    models.insert(&g.model());
    first_params.insert(const_cast<dl::rt::ExecutionGraph&>(g).params().at(0).value);
    rows.insert(info.rows);
  }
};

}  // namespace

TEST_CASE("memory budget: a charge over the cap is refused and leaves the total unchanged") {
  dl::rt::MemoryBudget b(1000);
  b.charge(600, "a");
  CHECK_THROWS_WITH_AS(b.charge(500, "the thing"), doctest::Contains("the thing needs 500.0 B, over the memory cap of 1000.0 B"),
                       dl::ResourceError);
  CHECK(b.used() == 600);
  b.release(600);
  CHECK(b.used() == 0);
  CHECK(dl::rt::MemoryBudget(0).cap() == dl::rt::kDefaultMaxMemory);
}

TEST_CASE("graph plan: the planned total includes the gradient buffers when training") {
  auto model = demo_model();
  dl::rt::GraphOptions o;
  o.batch_size = 32;
  dl::rt::ExecutionGraph forward_only(model, o);
  o.training = true;
  dl::rt::ExecutionGraph training(model, o);
  REQUIRE(training.gradient_bytes() > 0);
  CHECK(training.planned_bytes() == forward_only.planned_bytes() + training.gradient_bytes());

  // A cap between the forward-only and the full need: forward planning fits, training does not.
  o.max_memory_bytes = forward_only.planned_bytes() + training.gradient_bytes() / 2;
  o.training = false;
  CHECK_NOTHROW(std::make_unique<dl::rt::ExecutionGraph>(model, o));
  o.training = true;
  CHECK_THROWS_WITH_AS(std::make_unique<dl::rt::ExecutionGraph>(model, o), doctest::Contains("the gradient buffers (batch size 32) needs"),
                       dl::ResourceError);
}

TEST_CASE("graph plan: a budget shared by graphs counts them together and gets back what a graph held") {
  auto model = demo_model();
  dl::rt::GraphOptions o;
  o.batch_size = 8;
  o.budget = std::make_shared<dl::rt::MemoryBudget>();
  int64_t one = 0;
  {
    dl::rt::ExecutionGraph a(model, o);
    one = o.budget->used();
    CHECK(one == a.planned_bytes());
    dl::rt::ExecutionGraph b(model, o, a.store());  // shares the store: pays only its buffers
    CHECK(o.budget->used() == one + b.planned_bytes());
    CHECK(b.planned_bytes() < a.planned_bytes());
  }
  CHECK(o.budget->used() == 0);
}

TEST_CASE("trainer: the run's total counts the model, parameters, graphs, targets and optimizer state") {
  auto model = demo_model();
  const dl::rt::TrainConfig config = demo_config(*model);
  dl::rt::Trainer trainer(model, config, demo_data(), dl::rt::Dataset{});
  const int64_t used = trainer.budget().used();
  dl::rt::ExecutionGraph& g = trainer.graph();
  auto optimizer = dl::rt::make_optimizer(config.optimizer);
  const int64_t state = optimizer->state_bytes(g.params());
  CHECK(state > 0);
  CHECK(used >= dl::rt::initializer_bytes(*model) + trainer.store()->bytes() + g.planned_bytes() + state);

  // The same run under a cap one byte short of its need is refused before training.
  dl::rt::TrainConfig tight = config;
  tight.max_memory_bytes = used - 1;
  CHECK_THROWS_AS(std::make_unique<dl::rt::Trainer>(model, tight, demo_data(), dl::rt::Dataset{}), dl::ResourceError);
  tight.max_memory_bytes = used;
  CHECK_NOTHROW(std::make_unique<dl::rt::Trainer>(model, tight, demo_data(), dl::rt::Dataset{}));
  // Without the optimizer's state the graphs alone would fit: the state is what is refused.
  tight.max_memory_bytes = used - state;
  CHECK_THROWS_WITH_AS(std::make_unique<dl::rt::Trainer>(model, tight, demo_data(), dl::rt::Dataset{}),
                       doctest::Contains("the adam optimizer's state needs"), dl::ResourceError);
}

TEST_CASE("trainer: the graphs of every batch size share one model and one set of weights") {
  auto model = demo_model();
  dl::rt::Trainer trainer(model, demo_config(*model), demo_data(), dl::rt::Dataset{});
  GraphWatch watch;
  trainer.add_listener(&watch);
  trainer.run();
  REQUIRE(watch.rows.size() == 2);  // 150 rows: batches of 64 and a last one of 22
  CHECK(trainer.graph_count() == 2);
  CHECK(watch.models.size() == 1);
  CHECK(*watch.models.begin() == model.get());  // the caller's model, not a copy
  CHECK(watch.first_params.size() == 1);        // one tensor per parameter for both graphs
  CHECK(model.use_count() == 4);                // the test, the trainer and its two graphs
}

// A recurrent op keeps every time step's gates and states for backpropagation through
// time; these buffers are its own (not graph values) and must be charged at plan time.
TEST_CASE("graph plan: an LSTM's per-time-step buffers are charged to the budget") {
  auto model = std::make_shared<const dl::ir::Model>(dl::conv::import_model(
      std::string(DL_SOURCE_DIR) + "/tests/fixtures/parity/lstm_classifier_scce_sgd.onnx"));
  auto planned = [&](int64_t batch) {
    dl::rt::GraphOptions o;
    o.batch_size = batch;
    o.budget = std::make_shared<dl::rt::MemoryBudget>(int64_t(1) << 30);
    dl::rt::ExecutionGraph g(model, o);
    CHECK(o.budget->used() == g.planned_bytes());
    return g.planned_bytes();
  };
  // Sequence 5, hidden 6, 4 gates: per row 3 * 5 * 24 gate values and (5 + 1) * 6 + 3 * 6
  // state values, far more than the graph's own values per row.
  const int64_t per_row = (3 * 5 * 24 + 6 * 6 + 3 * 6) * int64_t(sizeof(float));
  CHECK(planned(64) - planned(8) >= 56 * per_row);

  // A budget too small for those buffers is refused at plan time, naming the node.
  dl::rt::GraphOptions o;
  o.batch_size = 4096;
  o.max_memory_bytes = planned(8) + 4096 * per_row / 2;
  CHECK_THROWS_AS(dl::rt::ExecutionGraph(model, o), dl::ResourceError);
}
