// Helper threads of the numeric kernels: block-parallel loops (the GEMM kernel) on one
// small pool of plain threads.
//
// The budget is Eigen::nbThreads() (set_compute_threads() in runtime/threads.h lowers it,
// e.g. to 1 per case in a parallel batch): budget - 1 helpers. Helpers spin briefly
// after their last piece of work, then sleep, so an idle pool does not burn the cores of
// a busy machine. The caller always works too and takes what a late helper has not
// started, so a descheduled helper cannot stall a small loop (only a block it has
// already begun is waited for, and when that wait is long the pool backs off to the
// caller alone for a while). Nothing here allocates after the first use.
#pragma once

#include <cstdint>

namespace dl::rt {

// Threads the kernels may use, the caller included (>= 1): Eigen::nbThreads().
int compute_threads();

// True for a while (BackOffPeriod: 0.25 s, doubling up to 5 s while it recurs) after
// helpers kept the caller waiting, for blocks they had begun, longer than the caller's
// own share took, without running for half of that wait (their CPU clocks: a helper
// slowed by page faults runs), in several loops in quick succession (a single stall is
// forgiven): a helper without a core of its own (a busy machine) then costs small loops
// more than it gives. Large loops, cut finely, still gain from a slow helper. With
// HelperPolicy kNever always true, kAlways never.
bool helpers_congested();

// Threads for a loop of `work` units that pays for helpers from `min_work` units on:
// 1 below it, while helpers are congested, or with a budget of 1; else compute_threads().
int loop_threads(int64_t work, int64_t min_work);

// Elementwise loops: values from which a loop is split across threads, the chunk a part
// works through at a time (L1-sized, a multiple of the probes' 4096-value blocks), and
// the fixed parts of n values (from n alone, at most kMaxElementwiseParts, about
// kParallelValues / 2 or more each, chunk-aligned, the last one shorter): the same parts
// for any thread count.
constexpr int64_t kParallelValues = int64_t{1} << 16, kChunk = 4096, kMaxElementwiseParts = 8;
inline int64_t elementwise_parts(int64_t n) {
  const int64_t p = n / (kParallelValues / 2);
  return p < 1 ? 1 : p > kMaxElementwiseParts ? kMaxElementwiseParts : p;
}
// Items [lo, hi) of part `part` when n items (images, planes) go in `parts` parts of
// sizes differing by at most one.
inline void even_range(int64_t n, int64_t parts, int64_t part, int64_t& lo, int64_t& hi) {
  lo = n * part / parts;
  hi = n * (part + 1) / parts;
}
inline void part_range(int64_t n, int64_t parts, int64_t part, int64_t& lo, int64_t& hi) {
  const int64_t per = ((n + parts - 1) / parts + kChunk - 1) / kChunk * kChunk;
  lo = part * per < n ? part * per : n;
  hi = lo + per < n ? lo + per : n;
}

// The pool's judgement of stalls (see helpers_congested()): each parallel loop decays the
// score by 2%, a stalled one adds 1, and at 2.5 (three stalls in a row, or about one
// loop in 20 stalling) the pool backs off and the score starts again from 0. A stall
// now and then (one loop in 100) never adds up; a busy machine stalls most loops.
class StallScore {
 public:
  static constexpr double kDecay = 0.98, kBackOffAt = 2.5;
  bool back_off(bool stalled);  // true: back off now

 private:
  double score_ = 0;
};

// How long the pool backs off from helpers once StallScore says so: kFirstUs, doubled
// (up to kMaxUs) when the previous back-off ended under kResetUs ago. A busy machine
// keeps stalling, and soon backs off for 5 s at a time, paying a few stalled loops per
// retry. A quiet one that stalls once in a while (a virtual core held up by its host) is
// back to two threads after a quarter of a second, where a fixed 5 s had held short runs
// (the harness's rounds) on one thread throughout (bench/README.md, runs 47 and 48; the
// stalls there were a helper's page faults on fresh buffers, which its CPU clock now
// tells apart: see helpers_congested()).
class BackOffPeriod {
 public:
  static constexpr int64_t kFirstUs = 250000, kMaxUs = 5000000, kResetUs = 10000000;
  // The period of a back-off beginning at now_us (microseconds, any monotonic origin).
  int64_t next(int64_t now_us);

 private:
  int64_t period_ = 0;  // of the last back-off (0: none yet)
  int64_t until_ = 0;   // when it ended
};

// When helpers are used: kAuto (default) backs off from helpers for small loops while
// the machine is busy (see helpers_congested()); kAlways and kNever are for benchmarks
// and tests.
enum class HelperPolicy { kAuto, kAlways, kNever };
void set_helper_policy(HelperPolicy policy);

// Runs fn(ctx, b) for every b in [0, blocks) on up to `threads` threads, the caller
// included, and returns when all are done. Blocks are claimed dynamically, so which
// thread runs a block varies: fn must give the same result on any thread. A loop started
// inside a block (nested) runs its blocks serially on that thread.
void parallel_blocks(int64_t blocks, int threads, void (*fn)(const void* ctx, int64_t block), const void* ctx);

// f(lo, hi) for each of `blocks` even ranges of [0, n) (even_range), through
// parallel_blocks: few blocks of many items where a block per item would have the
// threads claim more often than they work (BatchNormalization's channels).
template <class F>
void parallel_ranges(int64_t n, int64_t blocks, int threads, const F& f) {
  struct Ranges {
    const F* f;
    int64_t n, blocks;
  } r{&f, n, blocks};
  parallel_blocks(blocks, threads, [](const void* p, int64_t b) {
    const Ranges& r = *static_cast<const Ranges*>(p);
    int64_t lo, hi;
    even_range(r.n, r.blocks, b, lo, hi);
    (*r.f)(lo, hi);
  }, &r);
}

}  // namespace dl::rt
