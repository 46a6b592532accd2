// What the compiler must get right on this machine's target (CMakeLists.txt's workarounds).
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

namespace {

// (Not inlined: the constant is stored to memory whole, as a 32- or 64-byte block.)
template <class T>
__attribute__((noinline)) std::vector<int64_t> widened(const std::vector<T>& v) {
  return std::vector<int64_t>(v.begin(), v.end());
}

}  // namespace

// GCC 12 with AVX-512 stored {1, 0, 1, 0, 0, 0, 0, 0} (int32) as 1, 0 repeated and {1, 1,
// 0, 0} (int64) as four 1s: a constant of one 64-bit word value and then zeros, loaded as a
// broadcast of that word (CMakeLists.txt turns the broadcast off).
TEST_CASE("toolchain: integer constants of one repeated word and then zeros are stored as written") {
  CHECK(widened(std::vector<int32_t>{1, 0, 1, 0, 0, 0, 0, 0}) == std::vector<int64_t>{1, 0, 1, 0, 0, 0, 0, 0});
  CHECK(widened(std::vector<int32_t>{7, 7, 7, 7, 0, 0, 0, 0}) == std::vector<int64_t>{7, 7, 7, 7, 0, 0, 0, 0});
  CHECK(widened(std::vector<int64_t>{1, 1, 0, 0}) == std::vector<int64_t>{1, 1, 0, 0});
  CHECK(widened(std::vector<int64_t>{2, 2, 2, 0}) == std::vector<int64_t>{2, 2, 2, 0});
  CHECK(widened(std::vector<int64_t>{3, 3, 3, 3, 3, 0, 0, 0}) == std::vector<int64_t>{3, 3, 3, 3, 3, 0, 0, 0});
  CHECK(widened(std::vector<int64_t>{5, 5, -1, -1}) == std::vector<int64_t>{5, 5, -1, -1});
  CHECK(widened(std::vector<int64_t>{1, 1, 1, 0}) == std::vector<int64_t>{1, 1, 1, 0});  // (AveragePool's pads)
}
