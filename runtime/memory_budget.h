// The memory one training run may plan (--max-memory): the imported model, its
// parameter store, the forward and gradient buffers of every graph (one per batch size),
// the optimizer's state and the target buffers. Everything that plans a large buffer
// charges it here first, so a model that cannot fit is refused before anything large is
// allocated, naming what did not fit.
//
// Not thread-safe: one per run (a fix trial is a run of its own). Graphs hold it by
// shared_ptr and give back what they charged when they are destroyed.
#pragma once

#include <cstdint>
#include <string>

namespace dl::rt {

constexpr int64_t kDefaultMaxMemory = int64_t(4) << 30;  // 4 GiB

// "1.5 GiB"
std::string human_bytes(int64_t bytes);

class MemoryBudget {
 public:
  // cap_bytes <= 0: the default cap (kDefaultMaxMemory).
  explicit MemoryBudget(int64_t cap_bytes = 0) : cap_(cap_bytes > 0 ? cap_bytes : kDefaultMaxMemory) {}

  // Adds `bytes` to the planned total. Throws ResourceError "<what> needs N, over the
  // memory cap of C (… already planned; raise it with --max-memory)" when the total would
  // exceed the cap (the total is then unchanged).
  void charge(int64_t bytes, const std::string& what);
  void release(int64_t bytes) { used_ -= bytes < used_ ? bytes : used_; }

  int64_t cap() const { return cap_; }
  int64_t used() const { return used_; }
  int64_t remaining() const { return cap_ - used_; }

 private:
  int64_t cap_;
  int64_t used_ = 0;
};

}  // namespace dl::rt
