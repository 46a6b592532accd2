// See parallel.h. Eigen's own parallel product runs an OpenMP region per call; on this
// project's 2-core machines libgomp's default spin-waiting made the idle thread burn a
// core between products, and on a loaded machine a descheduled OpenMP thread stalled
// every product at its barrier (a 64x784x256 product ran 40x slower on two threads than
// on one). Here helpers join when they can and the caller never waits for work nobody
// has started.
#include "runtime/parallel.h"

#include <fcntl.h>
#include <unistd.h>

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace dl::rt {

using Clock = std::chrono::steady_clock;

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now().time_since_epoch()).count();
}

class Pool {
 public:
  static Pool& instance() {
    static Pool pool;
    return pool;
  }

  // Helpers only pay when they get a core of their own. Two signs that they do not,
  // after which everything runs on the caller alone for a second: the calling thread
  // spent more than a quarter of the last 200 ms waiting for a core (its run-queue delay
  // in /proc/thread-self/schedstat, which counts other processes, cgroups and
  // priorities as the scheduler does), or a helper kept the caller waiting more than
  // 300 us for work it had begun.
  static constexpr int64_t kStallUs = 300, kBackoffUs = 1000000, kSampleUs = 200000;
  bool congested() {
    const int64_t now = now_us();
    if (now < congested_until_.load(std::memory_order_relaxed)) return true;
    if (now - last_sample_.load(std::memory_order_relaxed) < kSampleUs) return false;
    last_sample_.store(now, std::memory_order_relaxed);
    int64_t run = 0, delay = 0;
    if (!schedstat(run, delay)) return false;
    const int64_t d_run = run - last_run_, d_delay = delay - last_delay_;
    last_run_ = run, last_delay_ = delay;
    if (d_run <= 0 || d_delay < 0 || d_delay * 3 < d_run) return false;  // waited < 25% of the time
    congested_until_.store(now + kBackoffUs, std::memory_order_relaxed);
    return true;
  }
  // Nanoseconds the calling thread ran and waited on a run queue (no allocation).
  static bool schedstat(int64_t& run, int64_t& delay) {
    const int fd = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char buf[128];
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) return false;
    buf[n] = 0;
    char* end = nullptr;
    run = std::strtoll(buf, &end, 10);
    if (end == buf) return false;
    char* end2 = nullptr;
    delay = std::strtoll(end, &end2, 10);
    return end2 != end;
  }
  void note_wait(Clock::time_point since) {
    if (Clock::now() - since > std::chrono::microseconds(kStallUs))
      congested_until_.store(now_us() + kBackoffUs, std::memory_order_relaxed);
  }
  // Runnable tasks on the machine (the 4th field of /proc/loadavg, "R/total"), -1 if
  // unknown.
  static int runnable_tasks() {
    std::FILE* f = std::fopen("/proc/loadavg", "r");
    if (!f) return -1;
    double a, b, c;
    int running = -1, total = 0;
    if (std::fscanf(f, "%lf %lf %lf %d/%d", &a, &b, &c, &running, &total) != 5) running = -1;
    std::fclose(f);
    return running;
  }

  void ensure_workers(int n) {
    if (n <= workers_count_.load(std::memory_order_acquire)) return;
    std::lock_guard<std::mutex> lk(workers_mutex_);
    while (int(workers_.size()) < n) {
      const int index = int(workers_.size());
      workers_.emplace_back([this, index] { loop(index); });
    }
    workers_count_.store(int(workers_.size()), std::memory_order_release);
  }

  // A job is published by bumping `job_`; its blocks are claimed from `claim_` (job id
  // in the high 32 bits, block count in bits 16-31, next block in the low 16), so a
  // helper that wakes up late can never take a block of a later job, and never reads a
  // job's function before it has claimed one of its blocks (which keeps the job alive).
  void run_blocks(int64_t blocks, int threads, void (*fn)(const void*, int64_t), const void* ctx) {
    ensure_workers(threads - 1);
    std::lock_guard<std::mutex> one_job(job_mutex_);  // loops from several threads queue up
    const uint64_t id = (job_.load() + 1) & 0xffffffffu;
    fn_.store(fn, std::memory_order_relaxed);
    ctx_.store(ctx, std::memory_order_relaxed);
    helpers_.store(threads - 1, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    claim_.store(id << 32 | uint64_t(blocks) << 16);
    job_.store(id);  // seq_cst: pairs with the sleepers_ check
    wake_helpers();
    work(id);
    const auto t0 = Clock::now();
    while (done_.load(std::memory_order_acquire) < uint64_t(blocks)) {
      if (Clock::now() - t0 < std::chrono::microseconds(50)) continue;
      std::unique_lock<std::mutex> lk(mutex_);
      finished_.wait_for(lk, std::chrono::microseconds(200),
                         [&] { return done_.load(std::memory_order_acquire) >= uint64_t(blocks); });
    }
    note_wait(t0);
  }

  // Queues a task; false when the ring is full (the caller then runs it).
  bool submit(TaskGroup* g, void (*fn)(void*, int64_t), void* ctx, int64_t arg) {
    {
      std::lock_guard<std::mutex> lk(tasks_mutex_);
      if (head_ - tail_ >= kRing) return false;
      ring_[head_ % kRing] = Task{fn, ctx, arg, g};
      g->submitted_.fetch_add(1, std::memory_order_relaxed);
      ++head_;
      pending_.store(head_ - tail_);  // seq_cst: pairs with the sleepers_ check
    }
    wake_helpers();
    return true;
  }

  void wait(TaskGroup* g) {
    while (run_one_task()) {
    }
    // Only tasks a helper has begun are left.
    const auto t0 = Clock::now();
    while (g->finished_.load(std::memory_order_acquire) < g->submitted_.load(std::memory_order_acquire)) {
      if (run_one_task()) continue;
      if (Clock::now() - t0 < std::chrono::microseconds(50)) continue;
      std::unique_lock<std::mutex> lk(mutex_);
      finished_.wait_for(lk, std::chrono::microseconds(200), [&] {
        return g->finished_.load(std::memory_order_acquire) >= g->submitted_.load(std::memory_order_acquire);
      });
    }
    note_wait(t0);
  }

  ~Pool() {
    {
      std::lock_guard<std::mutex> lk(mutex_);
      stop_ = true;
      stop_flag_.store(true);
      wake_.notify_all();
    }
    for (std::thread& t : workers_) t.join();
  }

 private:
  struct Task {
    void (*fn)(void*, int64_t);
    void* ctx;
    int64_t arg;
    TaskGroup* group;
  };
  static constexpr uint64_t kRing = 1024;
  static constexpr int64_t kSpinUs = 30;  // idle helpers spin this long before sleeping

  Pool() = default;

  void wake_helpers() {
    if (sleepers_.load() > 0) {
      std::lock_guard<std::mutex> lk(mutex_);
      wake_.notify_all();
    }
  }

  void work(uint64_t id) {
    for (;;) {
      uint64_t c = claim_.load();
      const uint64_t next = c & 0xffffu, blocks = (c >> 16) & 0xffffu;
      if ((c >> 32) != id || next >= blocks) return;
      if (!claim_.compare_exchange_weak(c, c + 1)) continue;
      fn_.load(std::memory_order_relaxed)(ctx_.load(std::memory_order_relaxed), int64_t(next));
      if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == blocks) notify_finished();
    }
  }

  bool run_one_task() {
    Task t;
    {
      std::lock_guard<std::mutex> lk(tasks_mutex_);
      if (tail_ == head_) return false;
      t = ring_[tail_ % kRing];
      ++tail_;
      pending_.store(head_ - tail_);
    }
    t.fn(t.ctx, t.arg);
    t.group->finished_.fetch_add(1, std::memory_order_acq_rel);
    notify_finished();
    return true;
  }

  void notify_finished() {
    std::lock_guard<std::mutex> lk(mutex_);
    finished_.notify_all();
  }

  bool job_for(int index, uint64_t seen) const {
    return job_.load() != seen && index < helpers_.load(std::memory_order_relaxed);
  }

  void loop(int index) {
    uint64_t seen = job_.load();
    for (;;) {
      // Blocks of a new job first, then queued tasks; spin a little when idle (the next
      // product of a training step usually follows within microseconds), then sleep.
      const auto t0 = Clock::now();
      bool idle = true;
      while (!stop_flag_.load(std::memory_order_relaxed)) {
        if (job_.load() != seen) {
          seen = job_.load();
          if (index < helpers_.load(std::memory_order_relaxed)) work(seen & 0xffffffffu);
          idle = false;
          break;
        }
        if (pending_.load() > 0 && run_one_task()) {
          idle = false;
          break;
        }
        if (Clock::now() - t0 > std::chrono::microseconds(kSpinUs)) break;
      }
      if (stop_flag_.load()) return;
      if (!idle) continue;
      std::unique_lock<std::mutex> lk(mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lk, [&] { return stop_ || job_.load() != seen || pending_.load() > 0; });
      sleepers_.fetch_sub(1);
      if (stop_) return;
    }
  }

  std::mutex job_mutex_, workers_mutex_, mutex_, tasks_mutex_;
  std::condition_variable wake_, finished_;
  std::vector<std::thread> workers_;
  std::atomic<int> workers_count_{0};
  // Block-parallel job.
  std::atomic<uint64_t> job_{0}, claim_{0}, done_{0};
  std::atomic<void (*)(const void*, int64_t)> fn_{nullptr};
  std::atomic<const void*> ctx_{nullptr};
  std::atomic<int> helpers_{0}, sleepers_{0};
  // Tasks: [tail_, head_) are queued (under tasks_mutex_); pending_ mirrors the count.
  Task ring_[kRing];
  uint64_t head_ = 0, tail_ = 0;
  std::atomic<uint64_t> pending_{0};
  std::atomic<bool> stop_flag_{false};
  std::atomic<int64_t> congested_until_{0}, last_sample_{0};
  int64_t last_run_ = 0, last_delay_ = 0;
  bool stop_ = false;
};

int compute_threads() {
  const int budget = std::max(1, Eigen::nbThreads());
  return budget > 1 && Pool::instance().congested() ? 1 : budget;
}

void parallel_blocks(int64_t blocks, int threads, void (*fn)(const void*, int64_t), const void* ctx) {
  if (blocks <= 0) return;
  if (threads <= 1 || blocks == 1) {
    for (int64_t b = 0; b < blocks; ++b) fn(ctx, b);
    return;
  }
  for (int64_t first = 0; first < blocks; first += 0xffff) {  // the claim word holds 16 bits
    const int64_t n = std::min<int64_t>(0xffff, blocks - first);
    struct Shifted {
      void (*fn)(const void*, int64_t);
      const void* ctx;
      int64_t first;
    } s{fn, ctx, first};
    if (first == 0 && n == blocks) {
      Pool::instance().run_blocks(n, threads, fn, ctx);
    } else {
      Pool::instance().run_blocks(
          n, threads, [](const void* c, int64_t b) {
            const Shifted* s = static_cast<const Shifted*>(c);
            s->fn(s->ctx, s->first + b);
          },
          &s);
    }
  }
}

bool TaskGroup::background() {
  const int threads = compute_threads();
  if (threads <= 1) return false;
  Pool::instance().ensure_workers(threads - 1);
  return true;
}

void TaskGroup::submit(void (*fn)(void*, int64_t), void* ctx, int64_t arg) {
  const int threads = compute_threads();
  if (threads > 1) Pool::instance().ensure_workers(threads - 1);
  if (threads <= 1 || !Pool::instance().submit(this, fn, ctx, arg)) fn(ctx, arg);
}

void TaskGroup::wait() {
  if (finished_.load(std::memory_order_acquire) < submitted_.load(std::memory_order_acquire))
    Pool::instance().wait(this);
}

}  // namespace dl::rt
