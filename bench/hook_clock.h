// A cheap clock for timing short calls (the probes' hooks, ~1,400 a shufflenet_v2
// iteration): the time-stamp counter on x86 (~20 ns a read on run 56's virtual
// machine, where steady_clock's vDSO call took 50 to 75), the steady clock elsewhere;
// converted to seconds by a rate measured once against the steady clock. Each timed call also
// counts the cost of reading the clock, measured once too (overhead()): subtract it per
// call for the call's own time.
#pragma once

#include <chrono>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace dl::bench {

class HookClock {
 public:
  static uint64_t ticks() {
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count());
#endif
  }
  // Seconds per tick (over a 5 ms busy wait, once per process).
  static double seconds_per_tick() {
    static const double s = [] {
      using C = std::chrono::steady_clock;
      const auto t0 = C::now();
      const uint64_t k0 = ticks();
      while (C::now() - t0 < std::chrono::milliseconds(5)) {
      }
      const uint64_t k1 = ticks();
      return std::chrono::duration<double>(C::now() - t0).count() / double(k1 > k0 ? k1 - k0 : 1);
    }();
    return s;
  }
  // Seconds a timed empty call reads (two reads of the clock), once per process.
  static double overhead() {
    static const double s = [] {
      constexpr int kReps = 100000;
      uint64_t sum = 0;
      for (int i = 0; i < kReps; ++i) {
        const uint64_t t0 = ticks();
        sum += ticks() - t0;
      }
      return double(sum) / kReps * seconds_per_tick();
    }();
    return s;
  }
};

}  // namespace dl::bench
