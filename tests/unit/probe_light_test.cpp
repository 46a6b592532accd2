// The probes' light iterations (runtime/probes.h): statistics between full ones, the
// schedule and its triggers, the fused paths (training unchanged, bit for bit), and a
// small model's records staying full where the trace decimates.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "runtime/probe_stats.h"
#include "runtime/probes.h"
#include "tests/unit/small_cnn.h"

using dl::rt::Tensor;
using dl::test::check_same_stats;
using dl::test::cnn_setup;
using dl::test::small_cnn;

namespace {

// Light iterations (runtime/probes.h): each step probe's fresh fields against a separate
// reduction of the tensor, its carried fields against its last full record. After the
// update of iteration `scale_after` the Gemm weights W grow 10x (the Gemm output's norm
// and every gradient's jump), after that of `scale_k_after` the conv weights K (the conv
// output's norm, a plain probe's, and every later tensor's); after that of `nan_after` a
// weight of the first conv turns NaN.
struct LightChecker : dl::rt::TrainListener {
  const dl::an::Trace* trace = nullptr;
  int64_t scale_after = -1, scale_k_after = -1, nan_after = -1;
  std::map<size_t, dl::an::TensorStats> last_full;  // per probe
  std::map<int64_t, std::string> pattern;           // per iteration: F (full) or L (light) per step probe
  int light_checked = 0;
  void after_update(const dl::rt::ExecutionGraph& g, const dl::rt::IterationInfo& info) override {
    dl::test::for_each_step_probe(*trace, g, [&](size_t k, const dl::an::Probe& p, const Tensor&,
                                                 const dl::an::TensorStats& want) {
      const bool fwd = p.kind == dl::an::ProbeKind::kForward;
      const dl::an::TensorStats& got = trace->at(trace->size() - 1, k);
      INFO("iteration " << info.iteration << ", " << p.node << (fwd ? " forward" : " gradient"));
      CHECK(got.nan == want.nan);
      CHECK(got.inf == want.inf);
      // P: a plain probe (no bands, not of the output layer): moments and extremes at
      // every iteration, no fractions to carry.
      pattern[info.iteration] += got.fractions_carried() ? 'L' : got.magnitudes_taken() ? 'F' : 'P';
      if (!got.magnitudes_taken()) {
        CHECK(got.flags == dl::an::TensorStats::kNoMagnitudes);
        CHECK(got.std == doctest::Approx(want.std).epsilon(1e-4));
        check_same_stats(got, want);
        return;
      }
      if (!got.fractions_carried()) {
        check_same_stats(got, want);
        last_full[k] = got;
        return;
      }
      REQUIRE(last_full.count(k));
      const dl::an::TensorStats& last = last_full[k];
      CHECK(got.flags == dl::an::TensorStats::kFractionsCarried);
      CHECK(got.count == want.count);
      CHECK(got.min == want.min);
      CHECK(got.max == want.max);
      CHECK(got.mean == doctest::Approx(want.mean).epsilon(1e-5));
      CHECK(got.std == doctest::Approx(want.std).epsilon(1e-4));
      CHECK(got.l2 == doctest::Approx(want.l2).epsilon(1e-5));
      CHECK(got.mean_abs == last.mean_abs);
      CHECK(got.zero_frac == last.zero_frac);
      CHECK(got.dead_frac == last.dead_frac);
      CHECK(got.sat_frac == last.sat_frac);
      CHECK(got.dead_units == last.dead_units);
      ++light_checked;
    });
    for (dl::rt::Param& prm : const_cast<dl::rt::ExecutionGraph&>(g).params()) {
      if ((prm.name == "W" && info.iteration == scale_after) || (prm.name == "K" && info.iteration == scale_k_after))
        for (int64_t i = 0; i < prm.value->numel(); ++i) prm.value->f()[i] *= 10.0f;
      if (prm.name == "K" && info.iteration == nan_after) prm.value->f()[0] = std::numeric_limits<float>::quiet_NaN();
    }
  }
};

}  // namespace

TEST_CASE("probes: light iterations between full ones; a jump of norm or a NaN makes the rest of the iteration full") {
  // 24 iterations of one epoch; 262k step values per iteration (more than kAlwaysFull), so
  // step probes are full at iterations 0-7, every kStepFullEvery-th and the epoch's last,
  // light between.
  const dl::ir::Model model = small_cnn();
  const dl::test::CnnSetup setup = cnn_setup(model, 64, 24, 47);
  dl::rt::Trainer trainer(model, setup.config, setup.data, dl::rt::Dataset{});
  dl::an::Trace trace;
  dl::rt::ProbeRecorder probes(trainer.graph(), trace);
  REQUIRE(probes.step_values() > dl::rt::ProbeRecorder::kAlwaysFull);
  CHECK(probes.step_full_every() == dl::rt::ProbeRecorder::kStepFullEvery);
  trace.set_capacity_bytes(16 << 20);
  trace.reserve_iterations(24);
  trainer.set_observer(&probes);
  trainer.add_listener(&probes);
  LightChecker check;
  check.trace = &trace;
  check.scale_after = 12;    // iteration 13: a light one
  check.scale_k_after = 19;  // iteration 20: a light one
  check.nan_after = 20;      // iteration 21: a light one
  trainer.add_listener(&check);
  trainer.run();
  REQUIRE(trace.size() == 24);
  // Probes in program order, each step's output then its gradient: Conv, Relu, MaxPool,
  // Flatten, Gemm. Plain (P): every gradient and the outputs of Conv, MaxPool and Flatten;
  // the Relu output has a dead zone and the Gemm (the output layer) keeps its zeros.
  const std::string full = "PPFPPPPPFF", light = "PPLPPPPPLL";
  const int64_t every = dl::rt::ProbeRecorder::kStepFullEvery;
  REQUIRE(every >= 4);  // so that iterations 13, 20 and 21 are light ones
  for (int64_t it = 0; it < 24; ++it) {
    if (it == 13 || it == 20 || it == 21) continue;
    INFO("iteration " << it);
    // (From iteration 21 on every tensor holds NaN: full.)
    const bool on_schedule = it < dl::rt::ProbeRecorder::kFirstFull || it % every == 0 || it > 21;
    CHECK(check.pattern[it] == (on_schedule ? full : light));
  }
  // Iteration 13: the Relu output is light; the Gemm output, whose norm jumped, and
  // everything after it (the gradients) are full.
  CHECK(check.pattern[13] == "PPLPPPPPFF");
  // Iteration 20: the conv output's norm jumped (a plain probe's): everything after it is full.
  CHECK(check.pattern[20] == full);
  // Iteration 21: the NaN shows in the first tensor; everything is full, NaN counted.
  CHECK(check.pattern[21] == full);
  CHECK(trace.at(21, 0).nan > 0);
  CHECK(check.light_checked >= 8 * 3);  // the Relu output and the Gemm's probes, light
}

TEST_CASE("probes do not change training: the fused light paths give the same parameters, bit for bit") {
  // Relu's fused loops and Conv's fused dB + dY statistics must compute what the plain
  // loops do. 16 iterations: light ones from iteration 8 on.
  const dl::ir::Model model = small_cnn();
  const dl::test::CnnSetup setup = cnn_setup(model, 64, 16, 49);
  std::vector<std::vector<float>> params[2];
  for (int with_probes = 0; with_probes < 2; ++with_probes) {
    dl::rt::Trainer trainer(model, setup.config, setup.data, dl::rt::Dataset{});
    dl::an::Trace trace;
    dl::rt::ProbeRecorder probes(trainer.graph(), trace);
    trace.set_capacity_bytes(16 << 20);
    if (with_probes) {
      trainer.set_observer(&probes);
      trainer.add_listener(&probes);
    }
    trainer.run();
    if (with_probes) {
      REQUIRE(trace.size() == 16);
      size_t carried = 0;  // (the Relu output and the Gemm's probes)
      for (size_t k = 0; k < trace.header.probes.size(); ++k) carried += trace.at(9, k).fractions_carried();
      CHECK(carried >= 3);
    }
    for (dl::rt::Param& p : trainer.graph().params()) params[with_probes].emplace_back(p.value->f(), p.value->f() + p.value->numel());
  }
  REQUIRE(params[0].size() == params[1].size());
  for (size_t k = 0; k < params[0].size(); ++k) CHECK(params[0][k] == params[1][k]);
}

TEST_CASE("probes: a small model's records are all full, also where the trace decimates") {
  // small_cnn at batch 2: 41k step values and 13k parameter values per iteration, both
  // under kAlwaysFull. A capacity of 17 records decimates at an odd count, admitting an
  // iteration that is no multiple of the doubled stride.
  const dl::ir::Model model = small_cnn();
  const dl::test::CnnSetup setup = cnn_setup(model, 2, 64, 51);
  dl::rt::Trainer trainer(model, setup.config, setup.data, dl::rt::Dataset{});
  dl::an::Trace trace;
  dl::rt::ProbeRecorder probes(trainer.graph(), trace);
  REQUIRE(probes.step_values() <= dl::rt::ProbeRecorder::kAlwaysFull);
  CHECK(probes.step_full_every() == 1);
  CHECK(probes.full_every() == 1);
  const int64_t per_record = int64_t(sizeof(dl::an::IterationRecord)) +
                             int64_t(trace.header.probes.size()) * int64_t(sizeof(dl::an::TensorStats));
  trace.set_capacity_bytes(17 * per_record + per_record / 2);
  trainer.set_observer(&probes);
  trainer.add_listener(&probes);
  // Each record as it is written (a later decimation drops the odd ones).
  struct FlagChecker : dl::rt::TrainListener {
    const dl::an::Trace* trace = nullptr;
    bool odd_admitted = false;
    void after_update(const dl::rt::ExecutionGraph&, const dl::rt::IterationInfo& info) override {
      const size_t r = trace->size() - 1;
      if (trace->records[r].iteration != info.iteration) return;  // not recorded
      odd_admitted = odd_admitted || info.iteration % trace->stride() != 0;
      for (size_t k = 0; k < trace->header.probes.size(); ++k) {
        INFO("iteration " << info.iteration << ", probe " << k);
        // (kNoMagnitudes: a plain probe's; nothing carried; the output layer's Gemm takes
        // its magnitudes)
        const uint32_t flags = trace->at(r, k).flags;
        CHECK((flags & ~dl::an::TensorStats::kNoMagnitudes) == 0u);
        const dl::an::Probe& p = trace->header.probes[k];
        if (p.op_type == "Gemm" && (p.kind == dl::an::ProbeKind::kForward || p.kind == dl::an::ProbeKind::kGradient))
          CHECK(flags == 0u);
      }
    }
  } check;
  check.trace = &trace;
  trainer.add_listener(&check);
  trainer.run();
  CHECK(trace.stride() >= 4);
  CHECK(check.odd_admitted);  // the case this test is about happened
}
