// An allocator for the trace's records (an::Trace::stats): storage of several
// megabytes is aligned to 2 MB and advised for transparent huge pages (Linux:
// MADV_HUGEPAGE), so that the trace maps it ahead of its writes 2 MB at a time
// (Trace::populate_stats). The records are written once each, into fresh memory, at every
// recorded iteration: on the 2-core virtual machine of bench/README.md ("h13-pages") the first
// write to each fresh 4 KB page cost ~10 us even after MADV_POPULATE_WRITE, ~0.2 ms of an
// 8 ms shufflenet_v2 step (a 56 KB record), while 2 MB pages mapped ahead cost ~0.1 to 3 ms
// per 2 MB (37 such records) and nothing at the writes. Smaller storage comes from plain
// operator new. Elsewhere (no Linux, huge pages off) only the alignment differs.
#pragma once

#include <cstddef>
#include <new>

namespace dl::an {

// Advises [p, p + bytes) for huge pages; false where that is not available.
bool advise_huge_pages(void* p, size_t bytes);

template <class T>
struct LargePageAllocator {
  using value_type = T;
  static constexpr size_t kPage = size_t(2) << 20;
  static constexpr size_t kFrom = 2 * kPage;  // storage of this many bytes or more is aligned and advised

  LargePageAllocator() = default;
  template <class U>
  LargePageAllocator(const LargePageAllocator<U>&) noexcept {}

  T* allocate(size_t n) {
    if (n > size_t(-1) / 2 / sizeof(T)) throw std::bad_array_new_length();
    const size_t bytes = n * sizeof(T);
    if (bytes < kFrom) return static_cast<T*>(::operator new(bytes));
    const size_t rounded = (bytes + kPage - 1) / kPage * kPage;
    void* p = ::operator new(rounded, std::align_val_t(kPage));
    advise_huge_pages(p, rounded);
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept {
    if (n * sizeof(T) < kFrom) ::operator delete(p);
    else ::operator delete(p, std::align_val_t(kPage));
  }
  template <class U>
  bool operator==(const LargePageAllocator<U>&) const noexcept { return true; }
  template <class U>
  bool operator!=(const LargePageAllocator<U>&) const noexcept { return false; }
};

}  // namespace dl::an
