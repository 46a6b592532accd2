// One thread's memset and memcpy rates by buffer size (`dl_mem_bw`): how fast this host
// moves the data of memory-bound steps (copies, im2col, the optimizer's update) once a
// working set leaves the caches. bench/README.md, run 61.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

int main() {
  for (size_t kb : {256, 1024, 1536, 4096, 16384, 65536}) {
    const size_t n = kb * 1024;
    std::vector<char> a(n, 1), b(n, 2);
    const int reps = int(std::max<size_t>(4, (size_t(256) << 20) / n));
    double set_s = 1e9, copy_s = 1e9;  // the best of 5 timings, seconds per call
    for (int r = 0; r < 5; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < reps; ++i) {
        std::memset(a.data(), i, n);
        asm volatile("" : : "r"(a.data()) : "memory");
      }
      const auto t1 = std::chrono::steady_clock::now();
      for (int i = 0; i < reps; ++i) {
        std::memcpy(b.data(), a.data(), n);
        asm volatile("" : : "r"(b.data()) : "memory");
      }
      const auto t2 = std::chrono::steady_clock::now();
      set_s = std::min(set_s, std::chrono::duration<double>(t1 - t0).count() / reps);
      copy_s = std::min(copy_s, std::chrono::duration<double>(t2 - t1).count() / reps);
    }
    std::printf("MEMBW kb=%zu memset_gbs=%.1f memcpy_gbs=%.1f\n", kb, double(n) / set_s / 1e9, double(n) / copy_s / 1e9);
  }
  return 0;
}
