#include "runtime/memory_budget.h"

#include <cstdio>

#include "converter/errors.h"

namespace dl::rt {

std::string human_bytes(int64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(b);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[64];
  snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

void MemoryBudget::charge(int64_t bytes, const std::string& what) {
  if (bytes < 0 || bytes > remaining()) {
    const std::string planned = used_ > 0 ? "; " + human_bytes(used_) + " already planned" : "";
    throw ResourceError(what + " needs " + human_bytes(bytes) + ", over the memory cap of " + human_bytes(cap_) +
                        planned + " (raise it with --max-memory)");
  }
  used_ += bytes;
}

}  // namespace dl::rt
