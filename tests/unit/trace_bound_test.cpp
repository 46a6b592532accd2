// The in-memory trace stays within its documented bound (issue 7, item 5): a long run
// is decimated, not truncated, and Trace::bytes() never exceeds --trace-max-mb.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "analysis/trace.h"

using dl::an::IterationRecord;
using dl::an::TensorStats;
using dl::an::Trace;

namespace {

// Records `iterations` iterations the way ProbeRecorder and the trainer do; returns the
// largest bytes() seen.
int64_t record_run(Trace& t, int64_t iterations, int64_t probes) {
  int64_t peak = t.bytes();
  for (int64_t it = 0; it < iterations; ++it) {
    if (t.wants(it)) {
      IterationRecord r;
      r.iteration = it;
      r.epoch = it / 1000;
      r.loss = 1.0f / float(it + 1);
      TensorStats* s = t.begin_record(r);
      for (int64_t k = 0; k < probes; ++k) {
        s[k].mean = float(it);
        s[k].count = uint32_t(k);
      }
    }
    t.add_loss(it, 1.0f / float(it + 1), 0.5f);
    if (it % 997 == 0 && t.bytes() > peak) peak = t.bytes();
  }
  return t.bytes() > peak ? t.bytes() : peak;
}

}  // namespace

TEST_CASE("trace: 100,000 iterations of 40 probes stay under a 64 MB cap, early iterations kept decimated") {
  constexpr int64_t kIterations = 100000, kProbes = 40, kCap = int64_t(64) << 20;
  Trace t;
  t.header.probes.resize(kProbes);
  t.set_capacity_bytes(kCap);            // as `train --trace-max-mb 64` does,
  t.reserve_iterations(kIterations);     // then the loss history of the whole run
  const int64_t peak = record_run(t, kIterations, kProbes);
  CHECK(peak <= kCap);
  CHECK(t.bytes() <= kCap);
  // Uncapped, the run would need 100,000 x (40 x 52 + 32) bytes, about 200 MB: it was decimated.
  CHECK(t.stride() > 1);
  CHECK(t.loss.size() == size_t(kIterations));  // loss and metric of every iteration are kept
  CHECK(t.metric.size() == size_t(kIterations));
  REQUIRE(t.size() > 0);
  // The cap is used, not wasted: at least a quarter of it holds records.
  const int64_t per_record = int64_t(sizeof(IterationRecord)) + kProbes * int64_t(sizeof(TensorStats));
  CHECK(int64_t(t.size()) * per_record >= kCap / 4);
  // The early iterations are kept, decimated: iteration 0 first, then every stride-th
  // iteration in order, each with its own statistics, up to the end of the run.
  CHECK(t.records.front().iteration == 0);
  for (size_t r = 0; r < t.size(); ++r) {
    CHECK(t.records[r].iteration == int64_t(r) * t.stride());
    if (t.records[r].iteration != int64_t(r) * t.stride()) break;
    CHECK(t.at(r, 0).mean == float(t.records[r].iteration));
    CHECK(t.at(r, kProbes - 1).count == uint32_t(kProbes - 1));
  }
  CHECK(t.records.back().iteration > kIterations - 1 - t.stride());
}

TEST_CASE("trace: the history reservation of an absurdly long run is bounded") {
  Trace t;
  t.header.probes.resize(4);
  t.set_capacity_bytes(int64_t(1) << 20);
  t.reserve_iterations(int64_t(1) << 40);  // --epochs 1e9 x 1000 batches: must not reserve terabytes
  CHECK(t.bytes() <= int64_t(1) << 20);
  Trace unbounded;  // no cap (a baseline's history): still a bounded reservation
  unbounded.reserve_iterations(int64_t(1) << 40);
  CHECK(unbounded.bytes() <= int64_t(256) << 20);
  unbounded.add_loss(3, 1.0f, 0.5f);
  CHECK(unbounded.loss.size() == 4);
}

TEST_CASE("trace: a cap smaller than one record still keeps 16 records") {
  Trace t;
  t.header.probes.resize(40);
  t.set_capacity_bytes(1000);
  record_run(t, 1000, 40);
  CHECK(t.size() <= 16);
  CHECK(t.size() >= 8);
  CHECK(t.records.front().iteration == 0);
}

TEST_CASE("trace: records of a large capacity sit on 2 MB-aligned storage, mapped ahead, every value kept") {
  using Alloc = dl::an::LargePageAllocator<TensorStats>;
  // Small storage: plain operator new; large: aligned to a huge page (and advised).
  std::vector<TensorStats, Alloc> small(10), large(Alloc::kFrom / sizeof(TensorStats) + 1);
  CHECK(small.size() == 10);
  CHECK(reinterpret_cast<uintptr_t>(large.data()) % Alloc::kPage == 0);
  CHECK(large.back().count == 0);  // value-initialised like std::vector's
  // A 32 MB trace of 1000 probes (56 KB records): 300 records cross several 2 MB pages
  // mapped ahead of the writes; each keeps what was written.
  Trace t;
  t.header.probes.resize(1000);
  t.set_capacity_bytes(int64_t(32) << 20);
  record_run(t, 300, 1000);
  REQUIRE(t.size() == 300);
  CHECK(reinterpret_cast<uintptr_t>(t.stats.data()) % Alloc::kPage == 0);
  for (size_t r = 0; r < t.size(); r += 37) {
    CHECK(t.at(r, 0).mean == float(r));
    CHECK(t.at(r, 999).count == 999u);
  }
  CHECK(t.bytes() <= int64_t(32) << 20);
}
