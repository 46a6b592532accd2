// Training allocates nothing per step after the first: a counting global operator
// new, read by a listener between consecutive iterations of one epoch.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "analysis/trace.h"
#include "converter/import.h"
#include "runtime/probes.h"
#include "runtime/run_summary.h"
#include "runtime/trainer.h"

namespace {
std::atomic<long> g_allocations{0};
}

void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
// The nothrow forms too (std::stable_sort's temporary buffer uses them): left to the
// runtime, they would pair its allocator with the free() below, an alloc-dealloc
// mismatch under AddressSanitizer.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {

struct AllocationWatch : dl::rt::TrainListener {
  long at_previous = -1;
  int64_t previous_epoch = -1;
  std::vector<long> per_step;  // allocations between consecutive steps of one epoch
  AllocationWatch() { per_step.reserve(10000); }
  void after_update(const dl::rt::ExecutionGraph&, const dl::rt::IterationInfo& info) override {
    const long now = g_allocations.load();
    if (info.iteration >= 2 && info.epoch == previous_epoch && info.batch + 1 < info.batches)
      per_step.push_back(now - at_previous);
    at_previous = g_allocations.load();
    previous_epoch = info.epoch;
  }
};

}  // namespace

TEST_CASE("training allocates nothing per step after the first (probes on)") {
  dl::ir::Model model = dl::conv::import_model(std::string(DL_SOURCE_DIR) + "/models/demo/model.onnx");
  dl::rt::TrainConfig config = dl::rt::config_from_metadata(model.metadata);
  config.epochs = 3;
  config.batch_size = 16;
  dl::rt::DatasetSpec spec;
  spec.sample_shape = {4};
  spec.output_width = 3;
  spec.encoding = dl::rt::DatasetSpec::Encoding::kOneHot;
  dl::rt::Dataset data = dl::rt::load_dataset(std::string(DL_SOURCE_DIR) + "/models/demo/data.csv", spec);
  dl::rt::Trainer trainer(model, config, data, dl::rt::Dataset{});
  dl::an::Trace trace;
  dl::rt::describe_run(trainer.graph(), config, trainer.train_data(), "accuracy", true, trace.header);
  dl::rt::ProbeRecorder probes(trainer.graph(), trace);
  trace.set_capacity_bytes(64 << 20);
  trace.reserve_iterations(config.epochs * trace.header.batches_per_epoch);
  trainer.set_observer(&probes);
  trainer.add_listener(&probes);
  AllocationWatch watch;
  trainer.add_listener(&watch);
  dl::rt::TrainResult result = trainer.run();
  REQUIRE(result.iterations == 30);
  REQUIRE(watch.per_step.size() > 10);
  for (size_t k = 0; k < watch.per_step.size(); ++k) {
    INFO("step " << k);
    CHECK(watch.per_step[k] == 0);
  }
}
