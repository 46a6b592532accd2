// Row classes and the stratified hold-out of the fix trials (runtime/data/dataset.h).
#include <algorithm>
#include <cmath>
#include <map>

#include "runtime/data/dataset.h"

namespace dl::rt {

std::vector<int64_t> row_classes(const Dataset& data) {
  std::vector<int64_t> classes(static_cast<size_t>(data.n), -1);
  if (data.encoding != DatasetSpec::Encoding::kAsIs && static_cast<int64_t>(data.raw_labels.size()) == data.n) {
    // Class ids: each distinct id is a class, valid for the model or not (a repair may
    // remap ids outside 0..C-1 onto it; the hold-out must keep their rows and shares).
    std::map<float, int64_t> index;
    for (float v : data.raw_labels)
      if (std::isfinite(v)) index.emplace(v, 0);
    int64_t k = 0;
    for (auto& kv : index) kv.second = k++;
    for (int64_t r = 0; r < data.n; ++r) {
      const float v = data.raw_labels[size_t(r)];
      if (std::isfinite(v)) classes[size_t(r)] = index[v];
    }
    return classes;
  }
  if (data.y_size == 1) {  // a binary target column: only 0 and 1
    for (int64_t r = 0; r < data.n; ++r) {
      const float v = data.y[size_t(r)];
      if (v != 0.0f && v != 1.0f) return {};
      classes[size_t(r)] = v == 1.0f ? 1 : 0;
    }
    return classes;
  }
  for (int64_t r = 0; r < data.n; ++r) {  // targets given one-hot: exactly one 1, the rest 0
    const float* y = &data.y[size_t(r * data.y_size)];
    int64_t ones = 0, at = -1;
    for (int64_t c = 0; c < data.y_size; ++c) {
      if (y[c] == 1.0f) ++ones, at = c;
      else if (y[c] != 0.0f) return {};
    }
    if (ones != 1) return {};
    classes[size_t(r)] = at;
  }
  return classes;
}

double majority_share(const std::vector<int64_t>& classes) {
  std::map<int64_t, int64_t> count;
  int64_t n = 0;
  for (int64_t c : classes)
    if (c >= 0) ++count[c], ++n;
  int64_t most = 0;
  for (const auto& kv : count) most = std::max(most, kv.second);
  return n > 0 ? double(most) / double(n) : 0.0;
}

std::pair<Dataset, Dataset> split_holdout(const Dataset& data, const std::vector<int64_t>& classes, double fraction,
                                          uint64_t seed) {
  std::map<int64_t, std::vector<int64_t>> rows_of;  // class -> its rows, in row order
  for (int64_t r = 0; r < data.n; ++r) {
    const int64_t c = r < static_cast<int64_t>(classes.size()) ? classes[size_t(r)] : -1;
    if (c >= 0) rows_of[c].push_back(r);
  }
  std::vector<char> held(static_cast<size_t>(data.n), 0);
  std::mt19937_64 rng(seed);
  for (auto& kv : rows_of) {  // classes in ascending order: the same draw on every platform
    std::vector<int64_t>& rows = kv.second;
    portable_shuffle(rows, rng);
    const auto k = static_cast<size_t>(std::llround(fraction * double(rows.size())));
    for (size_t i = 0; i < std::min(k, rows.size()); ++i) held[size_t(rows[i])] = 1;
  }
  std::vector<int64_t> train, out;
  for (int64_t r = 0; r < data.n; ++r) (held[size_t(r)] ? out : train).push_back(r);
  return {subset_rows(data, train), subset_rows(data, out)};
}

}  // namespace dl::rt
