// See parallel.h. Eigen's own parallel product runs an OpenMP region per call; on this
// project's 2-core machines libgomp's default spin-waiting made the idle thread burn a
// core between products, and on a loaded machine a descheduled OpenMP thread stalled
// every product at its barrier (a 64x784x256 product ran 40x slower on two threads than
// on one). Here helpers join when they can and the caller never waits for work nobody
// has started.
#include "runtime/parallel.h"

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <pthread.h>
#include <time.h>
#include <thread>
#include <vector>

namespace dl::rt {

using Clock = std::chrono::steady_clock;

namespace {
// Set while this thread runs a block of a parallel loop: a loop inside a block (a GEMM
// inside a Conv image part) runs on that thread alone, never on the pool it is part of.
thread_local bool in_block = false;
struct InBlock {
  bool was = in_block;
  InBlock() { in_block = true; }
  ~InBlock() { in_block = was; }
};
}  // namespace

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now().time_since_epoch()).count();
}

class Pool {
 public:
  static Pool& instance() {
    static Pool pool;
    return pool;
  }

  // Helpers only pay when they get a core of their own. The sign that one does not: the
  // caller, done with its own blocks, waited for a block the helper had begun longer than
  // its own share took (plus 300 us of slack): a stall. One stall is not enough (a
  // virtual machine's core can be held up once in a while with the machine otherwise
  // quiet, and seconds on one thread would halve the throughput of a short run): only
  // stalls in quick succession (StallScore) make everything run on the caller alone for
  // a while (BackOffPeriod) before a helper is tried again. A busy machine stalls most
  // loops and backs off within a few.
  static constexpr int64_t kStallUs = 300;
  std::atomic<HelperPolicy> policy{HelperPolicy::kAuto};
  bool congested() const {
    if (policy != HelperPolicy::kAuto) return policy == HelperPolicy::kNever;
    return now_us() < congested_until_.load(std::memory_order_relaxed);
  }
  // On the caller, under job_mutex_. A long wait counts as a stall only when no helper
  // was running for at least half of it (read from the helpers' CPU clocks from
  // `watched` on, when the caller began to wait in earnest): a helper that runs but
  // slowly (a first touch of fresh buffers: page faults, about 11 us a page on a virtual
  // machine, on the helper's CPU clock) has a core; one that waits for a core does not.
  // (With several helpers, one that runs clears the wait even if the late block is
  // another's: the judgement is exact for the 2-core machines it was made for.)
  void note_wait(Clock::time_point start, Clock::time_point own_done, Clock::time_point watched, int helpers) {
    if (policy != HelperPolicy::kAuto) return;
    const auto end = Clock::now();
    const auto own = own_done - start, waited = end - own_done;
    bool stalled = waited > own + std::chrono::microseconds(kStallUs);
    if (stalled && watched != Clock::time_point{}) {
      const int64_t window_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(end - watched).count();
      read_cpu(helpers, cpu_now_);
      for (int h = 0; h < helpers && stalled; ++h)
        if (cpu_at_[size_t(h)] >= 0 && cpu_now_[size_t(h)] >= 0 && 2 * (cpu_now_[size_t(h)] - cpu_at_[size_t(h)]) >= window_ns)
          stalled = false;
    }
    if (stalls_.back_off(stalled)) {
      const int64_t now = now_us();
      congested_until_.store(now + backoff_.next(now), std::memory_order_relaxed);
    }
  }

  void ensure_workers(int n) {
    if (n <= workers_count_.load(std::memory_order_acquire)) return;
    std::lock_guard<std::mutex> lk(workers_mutex_);
    cpu_clocks_.reserve(size_t(n));  // (no push_back below may fail after its thread started)
    while (int(workers_.size()) < n) {
      const int index = int(workers_.size());
      workers_.emplace_back([this, index] { loop(index); });
      clockid_t clock;
      cpu_clocks_.push_back(pthread_getcpuclockid(workers_.back().native_handle(), &clock) == 0 ? clock : kNoClock);
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
    failed_.store(false, std::memory_order_relaxed);
    error_ = nullptr;
    claim_.store(id << 32 | uint64_t(blocks) << 16);
    job_.store(id);  // seq_cst: pairs with the sleepers_ check
    wake_helpers();
    const auto start = Clock::now();
    work(id);
    const auto t0 = Clock::now();
    Clock::time_point watched{};  // when the helpers' CPU clocks were read (a long wait)
    while (done_.load(std::memory_order_acquire) < uint64_t(blocks)) {
      if (Clock::now() - t0 < std::chrono::microseconds(50)) continue;
      if (watched == Clock::time_point{}) {
        read_cpu(threads - 1, cpu_at_);
        watched = Clock::now();
      }
      std::unique_lock<std::mutex> lk(mutex_);
      finished_.wait_for(lk, std::chrono::microseconds(200),
                         [&] { return done_.load(std::memory_order_acquire) >= uint64_t(blocks); });
    }
    note_wait(start, t0, watched, threads - 1);
    // Every block is done (or skipped after a failure): no helper reads ctx or the
    // caller's stack any more, so the first exception may now unwind the caller.
    if (failed_.load(std::memory_order_acquire)) {
      std::exception_ptr e;
      {
        std::lock_guard<std::mutex> lk(error_mutex_);
        e = error_;
        error_ = nullptr;
      }
      std::rethrow_exception(e);
    }
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
      // A block that throws (bad_alloc in a kernel, on any thread) is caught here: on a
      // helper an escaping exception would terminate the process, on the caller it would
      // unwind the stack the helpers still read. The first one is kept for the caller;
      // the blocks not yet started are skipped (counted done, not run).
      if (!failed_.load(std::memory_order_acquire)) {
        try {
          fn_.load(std::memory_order_relaxed)(ctx_.load(std::memory_order_relaxed), int64_t(next));
        } catch (...) {
          std::lock_guard<std::mutex> lk(error_mutex_);
          if (!error_) error_ = std::current_exception();
          failed_.store(true, std::memory_order_release);
        }
      }
      if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == blocks) notify_finished();
    }
  }

  void notify_finished() {
    std::lock_guard<std::mutex> lk(mutex_);
    finished_.notify_all();
  }

  bool job_for(int index, uint64_t seen) const {
    return job_.load() != seen && index < helpers_.load(std::memory_order_relaxed);
  }

  void loop(int index) {
    in_block = true;  // a helper only ever runs blocks
    uint64_t seen = job_.load();
    for (;;) {
      // Spin a little when idle (the next product of a training step usually follows
      // within microseconds), then sleep.
      const auto t0 = Clock::now();
      bool idle = true;
      while (!stop_flag_.load(std::memory_order_relaxed)) {
        if (job_.load() != seen) {
          seen = job_.load();
          if (index < helpers_.load(std::memory_order_relaxed)) work(seen & 0xffffffffu);
          idle = false;
          break;
        }
        if (Clock::now() - t0 > std::chrono::microseconds(kSpinUs)) break;
      }
      if (stop_flag_.load()) return;
      if (!idle) continue;
      std::unique_lock<std::mutex> lk(mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lk, [&] { return stop_ || job_.load() != seen; });
      sleepers_.fetch_sub(1);
      if (stop_) return;
    }
  }

  std::mutex job_mutex_, workers_mutex_, mutex_, error_mutex_;
  std::condition_variable wake_, finished_;
  // CPU time (ns) of the first n helpers into out (-1 where unknown).
  void read_cpu(int n, std::vector<int64_t>& out) {
    std::lock_guard<std::mutex> lk(workers_mutex_);  // another thread's loop may add helpers
    out.assign(std::max(size_t(std::max(n, 0)), cpu_clocks_.size()), -1);
    for (int h = 0; h < n && size_t(h) < cpu_clocks_.size(); ++h) {
      timespec ts{};
      out[size_t(h)] = cpu_clocks_[size_t(h)] != kNoClock && clock_gettime(cpu_clocks_[size_t(h)], &ts) == 0
                           ? int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec
                           : -1;
    }
  }
  static constexpr clockid_t kNoClock = clockid_t(-1);
  std::vector<clockid_t> cpu_clocks_;       // per helper, its CPU-time clock (pthread_getcpuclockid), under workers_mutex_
  std::vector<int64_t> cpu_at_, cpu_now_;  // their readings (caller, under job_mutex_)
  std::vector<std::thread> workers_;
  std::atomic<int> workers_count_{0};
  // Block-parallel job.
  std::atomic<uint64_t> job_{0}, claim_{0}, done_{0};
  std::atomic<void (*)(const void*, int64_t)> fn_{nullptr};
  std::atomic<const void*> ctx_{nullptr};
  std::atomic<int> helpers_{0}, sleepers_{0};
  std::atomic<bool> stop_flag_{false};
  std::atomic<bool> failed_{false};  // a block of the current job threw
  std::exception_ptr error_;         // its exception, under error_mutex_
  std::atomic<int64_t> congested_until_{0};
  StallScore stalls_;  // see note_wait()
  BackOffPeriod backoff_;
  bool stop_ = false;
};

void set_helper_policy(HelperPolicy policy) { Pool::instance().policy = policy; }

int compute_threads() { return std::max(1, Eigen::nbThreads()); }

bool helpers_congested() { return Pool::instance().congested(); }

bool StallScore::back_off(bool stalled) {
  score_ *= kDecay;
  if (!stalled) return false;
  score_ += 1.0;
  if (score_ < kBackOffAt) return false;
  score_ = 0;
  return true;
}

int64_t BackOffPeriod::next(int64_t now_us) {
  period_ = period_ == 0 || now_us - until_ > kResetUs ? kFirstUs : std::min(2 * period_, kMaxUs);
  until_ = now_us + period_;
  return period_;
}

int loop_threads(int64_t work, int64_t min_work) {
  if (work < min_work) return 1;
  const int budget = compute_threads();
  return budget == 1 || helpers_congested() ? 1 : budget;
}

void parallel_blocks(int64_t blocks, int threads, void (*fn)(const void*, int64_t), const void* ctx) {
  if (blocks <= 0) return;
  if (threads <= 1 || blocks == 1 || in_block) {
    for (int64_t b = 0; b < blocks; ++b) fn(ctx, b);
    return;
  }
  const InBlock mark;
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

}  // namespace dl::rt
