#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include "converter/errors.h"
#include "runtime/data/dataset.h"

namespace dl::rt {
namespace {

// A uniform integer in [0, range): rejection sampling on the generator's raw output,
// which the standard fixes, so the shuffle is the same with every standard library
// (std::shuffle and std::uniform_int_distribution are implementation-defined).
uint64_t uniform_below(std::mt19937_64& rng, uint64_t range) {
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  const uint64_t limit = max - max % range;
  uint64_t v;
  do v = rng();
  while (v >= limit);
  return v % range;
}

}  // namespace

BatchIterator::BatchIterator(const Dataset& data, int64_t batch_size, uint64_t seed, bool shuffle)
    : data_(data), batch_size_(batch_size), seed_(seed), shuffle_(shuffle) {
  if (batch_size < 1) throw ConfigError("the batch size must be at least 1, got " + std::to_string(batch_size));
  order_.resize(static_cast<size_t>(data.n));
  std::iota(order_.begin(), order_.end(), int64_t(0));
}

const std::vector<int64_t>& BatchIterator::epoch(int e) {
  std::iota(order_.begin(), order_.end(), int64_t(0));
  if (!shuffle_) return order_;
  std::mt19937_64 rng(seed_ + static_cast<uint64_t>(e));
  for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[uniform_below(rng, i)]);
  return order_;
}

int64_t BatchIterator::batch_count() const { return (data_.n + batch_size_ - 1) / batch_size_; }

int64_t BatchIterator::batch_rows(int64_t b) const { return std::min(batch_size_, data_.n - b * batch_size_); }

void BatchIterator::fill(int64_t b, float* x_out, float* y_out) const {
  const int64_t rows = batch_rows(b);
  const size_t xs = static_cast<size_t>(data_.x_size), ys = static_cast<size_t>(data_.y_size);
  for (int64_t i = 0; i < rows; ++i) {
    const size_t r = static_cast<size_t>(order_[static_cast<size_t>(b * batch_size_ + i)]);
    std::memcpy(x_out + i * xs, data_.x.data() + r * xs, xs * sizeof(float));
    if (y_out) std::memcpy(y_out + i * ys, data_.y.data() + r * ys, ys * sizeof(float));
  }
}

}  // namespace dl::rt
