#include <algorithm>
#include <cmath>
#include <sstream>
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

void portable_shuffle(std::vector<int64_t>& v, std::mt19937_64& rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[uniform_below(rng, i)]);
}

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
  portable_shuffle(order_, rng);
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

void BatchIterator::fill(int64_t b, Tensor& x_out, float* y_out) const {
  if (x_out.dtype() == DType::kFloat32) return fill(b, x_out.f(), y_out);
  if (x_out.numel() != batch_rows(b) * data_.x_size)
    throw InternalError("batch " + std::to_string(b) + ": input tensor " + shape_str(x_out.shape()) + " does not hold " +
                        std::to_string(batch_rows(b)) + " rows of " + std::to_string(data_.x_size) + " values");
  const int64_t rows = batch_rows(b), xs = data_.x_size;
  int64_t* x = x_out.i();
  for (int64_t i = 0; i < rows; ++i) {
    const float* src = data_.x.data() + order_[static_cast<size_t>(b * batch_size_ + i)] * xs;
    for (int64_t k = 0; k < xs; ++k) x[i * xs + k] = static_cast<int64_t>(src[k]);
  }
  if (y_out) {
    const size_t ys = static_cast<size_t>(data_.y_size);
    for (int64_t i = 0; i < rows; ++i)
      std::memcpy(y_out + i * ys, data_.y.data() + order_[static_cast<size_t>(b * batch_size_ + i)] * ys,
                  ys * sizeof(float));
  }
}

void check_integer_features(const Dataset& d, const std::string& input_name) {
  constexpr float kExact = 16777216.0f;  // 2^24: larger floats skip integers
  for (int64_t r = 0; r < d.n; ++r)
    for (int64_t c = 0; c < d.x_size; ++c) {
      const float v = d.x[static_cast<size_t>(r * d.x_size + c)];
      if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) <= kExact) continue;
      const std::string at = d.where(r) + (d.csv_lines ? ":" + std::to_string(c + 1) : " column " + std::to_string(c));
      std::ostringstream value;
      value << v;
      throw DataError(at + ": value " + value.str() + " is not " +
                      (std::isfinite(v) && v == std::floor(v) ? "an integer float32 holds exactly (|id| <= 2^24)"
                                                              : "an integer") +
                      ", but the model input '" + input_name + "' is int64 (ids or indices)");
    }
}

}  // namespace dl::rt
