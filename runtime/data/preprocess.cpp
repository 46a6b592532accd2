// Fitting and applying the data repairs (preprocess.h). The record, its descriptions and
// its NumPy code are in preprocess_text.cpp.
#include "runtime/data/preprocess.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "converter/errors.h"

namespace dl::rt {
namespace {

// 1 / spread as a float, or 1 when there is no spread (constant or no finite values) or
// the reciprocal does not fit a float: such a value is only shifted, never blown up.
float inverse_spread(double spread) {
  if (!(spread > 0)) return 1.0f;
  const auto s = static_cast<float>(1.0 / spread);
  return std::isfinite(s) && s > 0 ? s : 1.0f;
}

// Per-value statistics of the finite entries of `rows` rows of `width` values.
struct ColumnStats {
  std::vector<double> mean, std, min, max;
};

ColumnStats column_stats(const float* v, int64_t rows, int64_t width, bool need_std) {
  const auto w = static_cast<size_t>(width);
  std::vector<double> sum(w, 0.0);
  std::vector<int64_t> count(w, 0);
  ColumnStats s;
  s.min.assign(w, std::numeric_limits<double>::infinity());
  s.max.assign(w, -std::numeric_limits<double>::infinity());
  // Row-major passes with one accumulator per value keep memory access sequential.
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = v + r * width;
    for (size_t j = 0; j < w; ++j) {
      const double x = row[j];
      if (!std::isfinite(x)) continue;
      sum[j] += x;
      ++count[j];
      s.min[j] = std::min(s.min[j], x);
      s.max[j] = std::max(s.max[j], x);
    }
  }
  s.mean.assign(w, 0.0);
  s.std.assign(w, 0.0);
  for (size_t j = 0; j < w; ++j) {
    if (count[j] == 0) s.min[j] = s.max[j] = 0.0;
    else s.mean[j] = sum[j] / double(count[j]);
  }
  if (!need_std) return s;
  // Two passes (sum of squared deviations from the mean) rather than sum of squares:
  // exact for constant values and stable for large offsets.
  std::vector<double> ss(w, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = v + r * width;
    for (size_t j = 0; j < w; ++j) {
      const double x = row[j];
      if (std::isfinite(x)) ss[j] += (x - s.mean[j]) * (x - s.mean[j]);
    }
  }
  for (size_t j = 0; j < w; ++j) {
    // A constant value has std 0 exactly, whatever the rounding of its mean.
    if (count[j] > 0 && s.min[j] < s.max[j]) s.std[j] = std::sqrt(ss[j] / double(count[j]));  // ddof 0
  }
  return s;
}

bool has_class_ids(const Dataset& d) {
  return d.encoding != DatasetSpec::Encoding::kAsIs && d.num_classes > 0 &&
         static_cast<int64_t>(d.raw_labels.size()) == d.n;
}

}  // namespace

void Preprocessing::fit_features(const Dataset& train, Features method) {
  features = method;
  feature_offset.clear();
  feature_scale.clear();
  if (method == Features::kNone) return;
  const ColumnStats s = column_stats(train.x.data(), train.n, train.x_size, method == Features::kStandardize);
  feature_offset.resize(static_cast<size_t>(train.x_size));
  feature_scale.resize(static_cast<size_t>(train.x_size));
  for (size_t j = 0; j < feature_offset.size(); ++j) {
    const bool standardize = method == Features::kStandardize;
    feature_offset[j] = static_cast<float>(standardize ? s.mean[j] : s.min[j]);
    feature_scale[j] = inverse_spread(standardize ? s.std[j] : s.max[j] - s.min[j]);
  }
  fit_rows = train.n;
}

void Preprocessing::fit_targets(const Dataset& train) {
  if (train.num_classes > 0)
    throw DataError(train.source + ": the targets are class ids of " + std::to_string(train.num_classes) +
                    " classes; only regression targets are scaled");
  // All target values as one column: one mean and one std over every value.
  const ColumnStats s = column_stats(train.y.data(), train.n * train.y_size, 1, true);
  targets = true;
  target_offset = static_cast<float>(s.mean[0]);
  target_scale = inverse_spread(s.std[0]);
  fit_rows = train.n;
}

bool Preprocessing::fit_labels(const Dataset& train) {
  label_map.clear();
  if (!has_class_ids(train)) return false;
  std::vector<float> ids;
  for (float v : train.raw_labels)
    if (std::isfinite(v)) ids.push_back(v);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  const auto k = static_cast<int64_t>(ids.size());
  if (k == 0 || k > train.num_classes) return false;
  bool already = true;
  for (int64_t i = 0; i < k; ++i) already = already && ids[i] == float(i);
  if (already) return false;
  for (int64_t i = 0; i < k; ++i) label_map.emplace_back(ids[i], i);
  fit_rows = train.n;
  return true;
}

void Preprocessing::apply(Dataset& data) const {
  if (features != Features::kNone) {
    if (int64_t(feature_offset.size()) != data.x_size || int64_t(feature_scale.size()) != data.x_size)
      throw DataError(data.source + " has " + std::to_string(data.x_size) +
                      " input values per sample but the preprocessing scales " +
                      std::to_string(feature_offset.size()) + " (fitted for another input)");
    const float* off = feature_offset.data();
    const float* sc = feature_scale.data();
    float* x = data.x.data();
    const int64_t w = data.x_size;
    for (int64_t r = 0; r < data.n; ++r, x += w)
      for (int64_t j = 0; j < w; ++j) x[j] = (x[j] - off[j]) * sc[j];
    // NaN and Inf stay NaN and the same Inf (scales are positive): value issues still hold.
  }
  if (targets) {
    if (data.num_classes > 0)
      throw DataError(data.source + ": the preprocessing scales regression targets but the loss takes class ids");
    for (float& v : data.y) v = (v - target_offset) * target_scale;
  }
  if (!label_map.empty()) {
    if (!has_class_ids(data))
      throw DataError(data.source +
                      ": the preprocessing remaps class ids but the loss takes the targets as they are (no class ids)");
    std::vector<std::pair<float, int64_t>> sorted = label_map;
    std::sort(sorted.begin(), sorted.end());
    for (float& v : data.raw_labels) {
      auto it = std::lower_bound(sorted.begin(), sorted.end(), v,
                                 [](const std::pair<float, int64_t>& e, float id) { return e.first < id; });
      if (it != sorted.end() && it->first == v) v = static_cast<float>(it->second);
    }
    encode_class_targets(data);  // as make_dataset would have encoded the remapped ids
  }
}

double Preprocessing::unscale(const std::string& loss_or_metric, double v) const {
  if (!targets) return v;
  const double s = target_scale;
  if (loss_or_metric == "mse" || loss_or_metric == "mean_squared_error") return v / (s * s);
  if (loss_or_metric == "mae" || loss_or_metric == "mean_absolute_error") return v / s;
  return std::numeric_limits<double>::quiet_NaN();
}

}  // namespace dl::rt
