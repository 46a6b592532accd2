// Defects a code review found in the runtime (issue 18): exceptions in the thread pool,
// the layer of a parameter no layer reads, and the trainer's main graph.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "converter/import.h"
#include "runtime/graph.h"
#include "runtime/parallel.h"
#include "runtime/threads.h"
#include "runtime/trainer.h"

namespace {

using Clock = std::chrono::steady_clock;

// Forces two threads with helpers on for one test, and restores the defaults.
struct TwoThreads {
  TwoThreads() {
    dl::rt::set_helper_policy(dl::rt::HelperPolicy::kAlways);
    dl::rt::set_compute_threads(2);
  }
  ~TwoThreads() {
    dl::rt::set_compute_threads(0);
    dl::rt::set_helper_policy(dl::rt::HelperPolicy::kAuto);
  }
};

struct PoolProbe {
  std::thread::id caller;
  std::atomic<bool> helper_started{false};
  std::atomic<int> helper_finished{0};
  bool caller_throws = false;
};

// The caller waits (bounded) until a helper has begun a block, so that the helper
// surely runs one. A helper throws at once, or, when the caller is the one to throw,
// sleeps first so it is still at work when the caller's block fails.
void probe_block(const void* ctx, int64_t) {
  PoolProbe& p = *static_cast<PoolProbe*>(const_cast<void*>(ctx));
  if (std::this_thread::get_id() == p.caller) {
    const auto t0 = Clock::now();
    while (!p.helper_started.load() && Clock::now() - t0 < std::chrono::seconds(10)) std::this_thread::yield();
    if (p.caller_throws) throw std::runtime_error("caller block failed");
    return;
  }
  p.helper_started.store(true);
  if (!p.caller_throws) throw std::runtime_error("helper block failed");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  p.helper_finished.fetch_add(1);
}

void sum_block(const void* ctx, int64_t b) {
  static_cast<std::atomic<int64_t>*>(const_cast<void*>(ctx))->fetch_add(b);
}

dl::ir::Model demo_model() { return dl::conv::import_model(std::string(DL_SOURCE_DIR) + "/models/demo/model.onnx"); }

dl::rt::Dataset demo_data() {
  dl::rt::DatasetSpec spec;
  spec.sample_shape = {4};
  spec.output_width = 3;
  spec.encoding = dl::rt::DatasetSpec::Encoding::kOneHot;
  return dl::rt::load_dataset(std::string(DL_SOURCE_DIR) + "/models/demo/data.csv", spec);
}

}  // namespace

TEST_CASE("thread pool: an exception thrown on a helper thread is rethrown on the caller") {
  TwoThreads two;
  PoolProbe p;
  p.caller = std::this_thread::get_id();
  CHECK_THROWS_WITH_AS(dl::rt::parallel_blocks(64, 2, &probe_block, &p), "helper block failed", std::runtime_error);
  CHECK(p.helper_started.load());
  // The pool still works after a failed loop.
  std::atomic<int64_t> sum{0};
  dl::rt::parallel_blocks(100, 2, &sum_block, &sum);
  CHECK(sum.load() == 99 * 100 / 2);
}

TEST_CASE("thread pool: the caller's exception waits for the helpers still using its loop") {
  TwoThreads two;
  PoolProbe p;
  p.caller = std::this_thread::get_id();
  p.caller_throws = true;
  CHECK_THROWS_WITH_AS(dl::rt::parallel_blocks(2, 2, &probe_block, &p), "caller block failed", std::runtime_error);
  REQUIRE(p.helper_started.load());
  CHECK(p.helper_finished.load() == 1);  // its block had ended before the caller unwound
}

TEST_CASE("layer_of_param: a parameter no layer reads has no layer (not the previous one's)") {
  std::vector<dl::rt::Layer> layers(2);
  layers[0].index = 0;
  layers[0].params = {"w0", "b0"};
  layers[1].index = 1;
  layers[1].params = {"w1", "shared"};
  CHECK(dl::rt::layer_of_param(layers, "b0") == 0);
  CHECK(dl::rt::layer_of_param(layers, "w1") == 1);
  CHECK(dl::rt::layer_of_param(layers, "orphan") == -1);
  layers[0].params.push_back("shared");  // tied weights: the first layer that reads them
  CHECK(dl::rt::layer_of_param(layers, "shared") == 0);
}

TEST_CASE("trainer: graph() is the full-batch graph, not the one with the fewest rows") {
  dl::ir::Model model = demo_model();
  dl::rt::TrainConfig config = dl::rt::config_from_metadata(model.metadata);
  config.epochs = 1;
  config.batch_size = 64;
  dl::rt::Dataset data = demo_data();
  REQUIRE(data.n % 64 != 0);  // a last, partial batch: a second, smaller graph
  dl::rt::Trainer trainer(model, config, data, dl::rt::Dataset{});
  trainer.run();
  CHECK(trainer.graph().input(0).shape()[0] == 64);
}
