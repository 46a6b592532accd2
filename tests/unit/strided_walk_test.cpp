// StridedWalk (runtime/ops/strided.h), the walk of Slice, Expand and Tile: it merges
// axes whose runs join and drops axes of size 1, and must still visit every element of
// the view in row-major output order with the input offset of the axes as given, and
// report each run's end (within a long run, every kChunk outputs) in increasing order up to
// the total (ChunkReporter relies on it).
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "runtime/ops/strided.h"

namespace {

using Visits = std::vector<std::pair<int64_t, int64_t>>;

// Every (output offset, input offset) of the view, by an odometer over the axes as given.
Visits reference(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, int64_t base) {
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  Visits out;
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t o = 0; o < total; ++o) {
    int64_t i = base;
    for (size_t k = 0; k < dims.size(); ++k) i += idx[k] * strides[k];
    out.push_back({o, i});
    for (size_t k = dims.size(); k-- > 0;) {
      if (++idx[k] < dims[k]) break;
      idx[k] = 0;
    }
  }
  return out;
}

void check(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, int64_t base) {
  dl::rt::StridedWalk w;
  w.set(dims, strides, base);
  Visits got;
  std::vector<int64_t> ends;
  w.walk([&](int64_t o, int64_t i) { got.push_back({o, i}); }, [&](int64_t end) { ends.push_back(end); });
  const Visits want = reference(dims, strides, base);
  REQUIRE(got == want);
  for (size_t k = 1; k < ends.size(); ++k) {
    CHECK(ends[k] > ends[k - 1]);
    CHECK(ends[k] - ends[k - 1] <= dl::rt::kChunk);  // a long run is reported in chunks
  }
  if (!want.empty()) {
    REQUIRE(!ends.empty());
    CHECK(ends.back() == int64_t(want.size()));
  }
}

}  // namespace

TEST_CASE("StridedWalk: merged and dropped axes visit the view as its axes give it, runs in order") {
  // A channel Slice of [2, 6, 3, 3] (channels 2..5): the inner three axes form one run.
  check({2, 4, 3, 3}, {54, 9, 3, 1}, 18);
  // A step-2 Slice along W, a reversed Slice (negative stride), a broadcast (stride 0)
  // and Tile's (repeat, size) split, axes of size 1 among them; a scalar and an empty view.
  check({2, 3, 2}, {12, 4, 2}, 1);
  check({3, 1, 4}, {-4, 7, -1}, 11);
  check({2, 3, 4}, {4, 0, 1}, 0);
  check({3, 2, 4}, {0, 0, 1}, 5);
  check({2, 3, 2, 4}, {4, 0, 0, 1}, 0);
  check({1, 1, 1}, {9, 9, 9}, 3);
  check({}, {}, 2);
  check({2, 0, 3}, {3, 3, 1}, 0);
  // Runs longer than a chunk once merged: a Slice along axis 0 and a broadcast row.
  check({3, 3000}, {3000, 1}, 6000);
  check({2, 5000}, {0, 1}, 0);
  // Random views: sizes 1 to 4, strides from a row-major layout, scaled, zero or negated.
  std::mt19937_64 rng(57);
  for (int t = 0; t < 400; ++t) {
    const size_t r = size_t(rng() % 6);
    std::vector<int64_t> dims(r), strides(r);
    int64_t s = 1;
    for (size_t k = r; k-- > 0;) {
      dims[k] = 1 + int64_t(rng() % 4);
      switch (rng() % 4) {
        case 0: strides[k] = 0; break;                          // broadcast
        case 1: strides[k] = -s; break;                          // reversed
        case 2: strides[k] = s * (1 + int64_t(rng() % 2)); break;  // contiguous or step 2
        default: strides[k] = s; break;
      }
      s *= dims[k] + int64_t(rng() % 2);  // the layout's axis may be longer than the view's
    }
    check(dims, strides, int64_t(rng() % 7));
  }
}
