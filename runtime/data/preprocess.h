// Data repairs (verified fixes, issue 9) and their record in the model: feature scaling,
// regression-target scaling and class-id remapping, fitted on the training rows and
// applied to any split. A repaired model carries its preprocessing in the metadata key
// `deeplocalize.preprocessing` (JSON, see to_json), which `train` applies to the data it
// loads, so an exported model retrains exactly as it was verified.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "runtime/data/dataset.h"

namespace dl::rt {

inline constexpr const char* kPreprocessingKey = "deeplocalize.preprocessing";

struct Preprocessing {
  enum class Features { kNone, kStandardize, kMinMax };
  Features features = Features::kNone;
  // x' = (x - feature_offset[j]) * feature_scale[j] for every value j of a sample (x_size
  // values). Standardize: offset = mean, scale = 1 / population std (1 when the std is 0);
  // min-max: offset = min, scale = 1 / (max - min) (1 when max == min).
  std::vector<float> feature_offset, feature_scale;

  // Regression targets: y' = (y - target_offset) * target_scale, one offset and scale for
  // all target values (mean and 1 / population std of all of them), so losses convert back
  // to the original units exactly (see unscale).
  bool targets = false;
  float target_offset = 0, target_scale = 1;

  // Class ids: original id -> new id in 0..C-1 (ids absent from the map are left as they
  // are). Applied to Dataset::raw_labels, then the targets are re-encoded with
  // encode_class_targets (as Dataset::encoding says) and the label issues recomputed.
  std::vector<std::pair<float, int64_t>> label_map;

  // Training rows the statistics were computed from, for describe() (0 = not known).
  int64_t fit_rows = 0;

  bool empty() const { return features == Features::kNone && !targets && label_map.empty(); }

  // Fitting on the training split, in double precision; NaN/Inf values are ignored by the
  // statistics (a value with no finite entries gets offset 0, scale 1). A constant value
  // (min == max) gets scale 1, so it is only shifted. fit_targets throws DataError when
  // the targets are class ids (num_classes > 0): those are remapped, never scaled.
  void fit_features(const Dataset& train, Features method);
  void fit_targets(const Dataset& train);
  // The sorted distinct class ids of train.raw_labels mapped to 0..k-1. False (and no
  // map) when the data has no class ids, when the ids already are 0..k-1 with k <=
  // num_classes, or when there are more distinct ids than classes (k > num_classes).
  bool fit_labels(const Dataset& train);

  // Applies everything set above to `data` in place (any split), in one pass over x.
  // Throws DataError when feature_offset/feature_scale do not have data.x_size values,
  // when targets are to be scaled but are class ids, or when class ids are to be
  // remapped but the data has none (the loss takes its targets as they are).
  void apply(Dataset& data) const;

  // A loss or metric value computed on scaled targets, in the original target units:
  // mse / mean_squared_error -> v / scale^2; mae / mean_absolute_error -> v / scale;
  // anything else -> NaN (not convertible). Without target scaling: v.
  double unscale(const std::string& loss_or_metric, double v) const;

  // The metadata record: {"features": "standardize"|"minmax", "feature_offset": [...],
  // "feature_scale": [...], "target_offset": x, "target_scale": x, "label_map": [[from, to], ...],
  // "fit_rows": n} (only what is set). Floats are written as the double of the float, so
  // they read back exactly. from_json throws ModelError naming `where` (e.g. "model.onnx:
  // metadata deeplocalize.preprocessing") and the field for malformed records: wrong
  // types, unknown fields (an ignored step would retrain differently), offset and scale
  // arrays of different lengths, non-finite values, zero scales, duplicate class ids.
  std::string to_json() const;
  static Preprocessing from_json(const std::string& json, const std::string& where);
  // From model metadata: empty when the key is absent.
  static Preprocessing from_metadata(const std::map<std::string, std::string>& metadata, const std::string& model_path);

  // One line per change, e.g. "standardise the 30 input features (mean and std of the 455
  // training rows)", "scale the regression targets (mean 152.1, std 77.0)".
  std::vector<std::string> describe() const;
  // The exact NumPy code a user adds to their own pipeline to apply the same change,
  // computing the statistics the same way from the training rows (x_train, y_train), and
  // applying them to x_train, x_val and x_test. Statistics over axis 0 are per value for
  // any sample shape and layout, so the lines work on flat and on image arrays alike.
  std::string python_code() const;
};

}  // namespace dl::rt
