// Helper threads of the numeric kernels: block-parallel loops (the GEMM kernel) and
// background tasks (the probes' reductions), on one small pool of plain threads.
//
// The budget is Eigen::nbThreads() (set_compute_threads() in runtime/threads.h lowers it,
// e.g. to 1 per case in a parallel batch): budget - 1 helpers. Helpers spin briefly
// after their last piece of work, then sleep, so an idle pool does not burn the cores of
// a busy machine. The caller always works too and takes what a late helper has not
// started, so a descheduled helper cannot stall a small loop (only a block or task it
// has already begun is waited for, and when that wait is long the pool backs off to the
// caller alone for a while). Nothing here allocates after the first use.
#pragma once

#include <atomic>
#include <cstdint>

namespace dl::rt {

// Threads the kernels may use, the caller included (>= 1): the budget, or 1 while the
// machine is busy (the caller keeps waiting for a core, or a helper kept the caller
// waiting for work it had begun: a helper without a core of its own costs more than it
// gives). Results never depend on it.
int compute_threads();

// Runs fn(ctx, b) for every b in [0, blocks) on up to `threads` threads, the caller
// included, and returns when all are done. Blocks are claimed dynamically, so which
// thread runs a block varies: fn must give the same result on any thread.
void parallel_blocks(int64_t blocks, int threads, void (*fn)(const void* ctx, int64_t block), const void* ctx);

// Independent tasks run in the background on the helpers while the caller goes on, and
// finished by wait(). Without helpers (budget 1) submit() runs the task at once. Tasks
// must not touch anything the caller modifies before wait(), and must give the same
// result on any thread.
class TaskGroup {
 public:
  TaskGroup() = default;
  TaskGroup(const TaskGroup&) = delete;
  TaskGroup& operator=(const TaskGroup&) = delete;
  ~TaskGroup() { wait(); }

  // Whether submitted tasks run in the background (there are helpers).
  static bool background();
  void submit(void (*fn)(void* ctx, int64_t arg), void* ctx, int64_t arg);
  // Runs the group's tasks nobody has started, then waits for those in progress.
  void wait();

 private:
  friend class Pool;
  std::atomic<int64_t> submitted_{0}, finished_{0};
};

}  // namespace dl::rt
