// A packing buffer of the GEMM kernel (gemm_kernel.cpp): 64-byte aligned floats that
// only grow, to the largest product the owning thread has run.
//
// Exception safety: reserve() throws std::bad_alloc when a larger block cannot be had
// and then leaves the buffer exactly as it was (the old block stays valid and owned), so
// a failed product neither leaves a dangling pointer for the next one nor a double free
// for the destructor. Not thread-safe: one per thread.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace dl::rt {

class ScratchBuffer {
 public:
  // `alloc` returns a block of `bytes` aligned to `align`, or null; std::aligned_alloc by
  // default (tests pass one that fails).
  using AllocFn = void* (*)(size_t align, size_t bytes);
  explicit ScratchBuffer(AllocFn alloc = &std::aligned_alloc) : alloc_(alloc) {}
  ~ScratchBuffer() { std::free(p_); }
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;

  // A buffer of at least `need` floats (capacity rounded up to 1024 floats).
  float* reserve(size_t need) {
    if (need <= have_ && p_) return p_;
    constexpr size_t kRound = 1024, kMax = SIZE_MAX / sizeof(float) - kRound;
    if (need > kMax) throw std::bad_alloc();  // the byte count would overflow
    const size_t have = (std::max<size_t>(need, 1) + kRound - 1) & ~(kRound - 1);
    float* p = static_cast<float*>(alloc_(64, have * sizeof(float)));
    if (!p) throw std::bad_alloc();
    std::free(p_);  // only once the new block is ours
    p_ = p;
    have_ = have;
    return p_;
  }
  float* data() const { return p_; }
  size_t capacity() const { return have_; }

 private:
  AllocFn alloc_;
  float* p_ = nullptr;
  size_t have_ = 0;
};

}  // namespace dl::rt
