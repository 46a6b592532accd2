// Data repairs (runtime/data/preprocess.h): fitting, applying, the metadata record, the
// sentences and the NumPy code. Reference values from NumPy / scikit-learn 1.2
// (StandardScaler, MinMaxScaler: population std, zero spread -> scale 1), computed with
// /usr/bin/python3 and pasted next to each check.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "converter/errors.h"
#include "data_test_util.h"
#include "runtime/data/preprocess.h"

using dl::rt::Dataset;
using dl::rt::Preprocessing;
using Enc = dl::rt::DatasetSpec::Encoding;
using Features = dl::rt::Preprocessing::Features;

namespace {

// Features in the first cols - 1 columns, one target column.
Dataset dataset(int64_t cols, std::vector<float> values, int64_t width = 1, Enc enc = Enc::kAsIs) {
  return make_dataset(dl::test::data::table(cols, std::move(values)), dl::test::data::spec({cols - 1}, width, enc));
}

// The 5 x 3 features (third one constant) with a regression target.
Dataset small() {
  return dataset(4, {1, 10, 5, 151, 2, 20, 5, 75, 3, 30, 5, 141, 4, 45, 5, 206, 10, -5, 5, 135});
}

// Two features and class ids 1, 2, 3, 1, 2, 3 for C = 3.
Dataset one_based(Enc enc) {
  return dataset(3, {0, 1, 1, 2, 3, 2, 4, 5, 3, 6, 7, 1, 8, 9, 2, 10, 11, 3}, 3, enc);
}

std::string model_error(const std::string& json) {
  try {
    Preprocessing::from_json(json, "m.onnx: metadata deeplocalize.preprocessing");
  } catch (const dl::ModelError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("preprocess: standardize matches StandardScaler (population std, constant value scale 1)") {
  Dataset d = small();
  Preprocessing p;
  p.fit_features(d, Features::kStandardize);
  // mean [4, 20, 5], std [3.16227766, 17.02938637, 0 -> 1]
  REQUIRE(p.feature_offset.size() == 3);
  CHECK(p.feature_offset == std::vector<float>{4, 20, 5});
  CHECK(p.feature_scale[0] == doctest::Approx(1 / 3.16227766).epsilon(1e-7));
  CHECK(p.feature_scale[1] == doctest::Approx(1 / 17.02938637).epsilon(1e-7));
  CHECK(p.feature_scale[2] == 1.0f);
  CHECK(p.fit_rows == 5);
  p.apply(d);
  const std::vector<double> expect = {-0.9486833, -0.58722022, 0, -0.63245553, 0, 0, -0.31622777, 0.58722022, 0,
                                      0,          1.46805055,  0, 1.8973666,   -1.46805055, 0};
  for (size_t i = 0; i < expect.size(); ++i) CHECK(d.x[i] == doctest::Approx(expect[i]).epsilon(1e-6));
  CHECK(d.y[0] == 151.0f);  // features only
}

TEST_CASE("preprocess: min-max matches MinMaxScaler") {
  Dataset d = small();
  Preprocessing p;
  p.fit_features(d, Features::kMinMax);
  CHECK(p.feature_offset == std::vector<float>{1, -5, 5});
  CHECK(p.feature_scale == std::vector<float>{1.0f / 9, 1.0f / 50, 1.0f});
  p.apply(d);
  const std::vector<double> expect = {0, 0.3, 0, 0.11111111, 0.5, 0, 0.22222222, 0.7, 0, 0.33333333, 1, 0, 1, 0, 0};
  for (size_t i = 0; i < expect.size(); ++i) CHECK(d.x[i] == doctest::Approx(expect[i]).epsilon(1e-6));
}

TEST_CASE("preprocess: NaN and Inf are ignored by the statistics and stay as they are") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  Dataset d = dataset(2, {1.5f, 0, nan, 0, 2.5f, 0, inf, 0, 4.0f, 0, -inf, 0});
  REQUIRE(d.value_issue_count == 3);
  Preprocessing p;
  p.fit_features(d, Features::kStandardize);
  // finite values 1.5, 2.5, 4: mean 2.6666666666666665, std 1.0274023338281628
  CHECK(p.feature_offset[0] == doctest::Approx(2.6666666666666665).epsilon(1e-7));
  CHECK(p.feature_scale[0] == doctest::Approx(1 / 1.0274023338281628).epsilon(1e-7));
  p.apply(d);
  CHECK(std::isnan(d.x[1]));
  CHECK(d.x[3] == inf);
  CHECK(d.x[5] == -inf);
  Preprocessing m;
  m.fit_features(dataset(2, {nan, 0, inf, 0}), Features::kMinMax);  // no finite value at all
  CHECK(m.feature_offset[0] == 0.0f);
  CHECK(m.feature_scale[0] == 1.0f);
}

TEST_CASE("preprocess: the validation split is scaled with the training statistics") {
  std::vector<float> v;
  for (int r = 0; r < 10; ++r) v.insert(v.end(), {float(r), float(r * r), 0});
  auto [train, val] = split_validation(dataset(3, v), 0.2);
  Preprocessing p;
  p.fit_features(train, Features::kStandardize);
  // StandardScaler().fit(X[:8]): mean [3.5, 17.5], scale [2.29128785, 16.68082732]
  CHECK(p.feature_scale[1] == doctest::Approx(1 / 16.68082732).epsilon(1e-7));
  CHECK(p.fit_rows == 8);
  p.apply(val);
  const std::vector<double> expect = {1.96396101, 2.78763152, 2.40039679, 3.80676562};
  for (size_t i = 0; i < expect.size(); ++i) CHECK(val.x[i] == doctest::Approx(expect[i]).epsilon(1e-6));
}

TEST_CASE("preprocess: class ids 1..3 are remapped to 0..2 and the label issues clear (sparse and one-hot)") {
  for (Enc enc : {Enc::kSparse, Enc::kOneHot}) {
    CAPTURE(int(enc));
    Dataset d = one_based(enc);
    REQUIRE(d.label_issue_count == 2);  // the two 3s
    Preprocessing p;
    REQUIRE(p.fit_labels(d));
    CHECK(p.label_map == std::vector<std::pair<float, int64_t>>{{1.0f, 0}, {2.0f, 1}, {3.0f, 2}});
    p.apply(d);
    CHECK(d.raw_labels == std::vector<float>{0, 1, 2, 0, 1, 2});
    CHECK(d.label_issue_count == 0);
    CHECK(d.label_issues.empty());
    if (enc == Enc::kSparse) {
      CHECK(d.y == std::vector<float>{0, 1, 2, 0, 1, 2});
    } else {
      CHECK(d.y == std::vector<float>{1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1});
    }
  }
}

TEST_CASE("preprocess: ids absent from the map stay as they are and are reported like make_dataset does") {
  Preprocessing p;
  REQUIRE(p.fit_labels(one_based(Enc::kOneHot)));
  Dataset other = dataset(3, {0, 1, 7, 2, 3, 3}, 3, Enc::kOneHot);
  p.apply(other);
  CHECK(other.raw_labels == std::vector<float>{7, 2});
  CHECK(other.y == std::vector<float>{0, 0, 0, 0, 0, 1});
  REQUIRE(other.label_issue_count == 1);
  const Dataset fresh = dataset(3, {0, 1, 7, 2, 3, 2}, 3, Enc::kOneHot);
  CHECK(other.label_issues[0].problem == fresh.label_issues[0].problem);
  CHECK(other.label_issues[0].line == fresh.label_issues[0].line);
}

TEST_CASE("preprocess: fit_labels declines data that needs no map or cannot be mapped") {
  Preprocessing p;
  CHECK_FALSE(p.fit_labels(dataset(2, {0, 0, 1, 1, 2, 2}, 3, Enc::kSparse)));        // already 0..k-1
  CHECK_FALSE(p.fit_labels(dataset(2, {0, 1, 1, 2, 2, 3, 3, 4}, 3, Enc::kSparse)));  // 4 ids, 3 classes
  CHECK_FALSE(p.fit_labels(small()));                                                // regression
  CHECK(p.label_map.empty());
  CHECK(p.empty());
}

TEST_CASE("preprocess: target scaling and losses back in the original units") {
  Dataset d = small();
  Preprocessing p;
  p.fit_targets(d);
  // y = 151, 75, 141, 206, 135: mean 141.6, std 41.749730538052575
  CHECK(p.target_offset == doctest::Approx(141.6).epsilon(1e-7));
  CHECK(p.target_scale == doctest::Approx(1 / 41.749730538052575).epsilon(1e-7));
  const std::vector<float> original = d.y, predicted = {140, 80, 150, 190, 120};
  p.apply(d);
  double mse = 0, mae = 0, mse_scaled = 0, mae_scaled = 0;
  for (size_t i = 0; i < original.size(); ++i) {
    const double e = predicted[i] - original[i];
    const double es = (predicted[i] - p.target_offset) * p.target_scale - d.y[i];
    mse += e * e / 5, mae += std::fabs(e) / 5, mse_scaled += es * es / 5, mae_scaled += std::fabs(es) / 5;
  }
  CHECK(p.unscale("mse", mse_scaled) == doctest::Approx(mse).epsilon(1e-5));
  CHECK(p.unscale("mean_squared_error", mse_scaled) == doctest::Approx(mse).epsilon(1e-5));
  CHECK(p.unscale("mae", mae_scaled) == doctest::Approx(mae).epsilon(1e-5));
  CHECK(p.unscale("mean_absolute_error", mae_scaled) == doctest::Approx(mae).epsilon(1e-5));
  CHECK(std::isnan(p.unscale("accuracy", 0.5)));
  CHECK(Preprocessing{}.unscale("accuracy", 0.5) == 0.5);
  CHECK_THROWS_AS(p.fit_targets(one_based(Enc::kSparse)), dl::DataError);
}

TEST_CASE("preprocess: apply rejects data the record does not fit") {
  Preprocessing f;
  f.fit_features(small(), Features::kStandardize);
  Dataset classes = one_based(Enc::kSparse);
  CHECK_THROWS_AS(f.apply(classes), dl::DataError);  // 2 features, fitted for 3
  Preprocessing t;
  t.fit_targets(small());
  CHECK_THROWS_AS(t.apply(classes), dl::DataError);  // class ids are never scaled
  Preprocessing l;
  REQUIRE(l.fit_labels(classes));
  Dataset regression = small();
  CHECK_THROWS_AS(l.apply(regression), dl::DataError);  // no class ids to remap
}

TEST_CASE("preprocess: the JSON record round-trips exactly") {
  Preprocessing p;
  p.features = Features::kMinMax;
  p.feature_offset = {0.1f, 1.0f / 3, -1e-30f, 123456.789f};
  p.feature_scale = {3.0f / 7, 1e30f, 1.0f, std::nextafter(1.0f, 2.0f)};
  p.targets = true;
  p.target_offset = 152.13348f;
  p.target_scale = 1.0f / 77.00591f;
  p.label_map = {{1.0f, 0}, {2.5f, 1}, {-3.0f, 2}};
  p.fit_rows = 455;
  const Preprocessing q = Preprocessing::from_json(p.to_json(), "m.onnx");
  CHECK(q.features == p.features);
  CHECK(q.feature_offset == p.feature_offset);
  CHECK(q.feature_scale == p.feature_scale);
  CHECK(q.targets);
  CHECK(q.target_offset == p.target_offset);
  CHECK(q.target_scale == p.target_scale);
  CHECK(q.label_map == p.label_map);
  CHECK(q.fit_rows == 455);
  CHECK(q.to_json() == p.to_json());
  CHECK(Preprocessing{}.to_json() == "{}");
  CHECK(Preprocessing::from_json("{}", "m.onnx").empty());
}

TEST_CASE("preprocess: malformed records are model errors naming where and the field") {
  CHECK(model_error("{").find("m.onnx: metadata deeplocalize.preprocessing: not valid JSON") == 0);
  CHECK(model_error("[1]").find("must be a JSON object") != std::string::npos);
  CHECK(model_error(R"({"scale": 1})").find("field 'scale' is unknown") != std::string::npos);
  CHECK(model_error(R"({"features": "zscore", "feature_offset": [0], "feature_scale": [1]})").find("field 'features'") !=
        std::string::npos);
  CHECK(model_error(R"({"features": "minmax", "feature_offset": [0]})").find("'feature_scale' is missing") !=
        std::string::npos);
  CHECK(model_error(R"({"features": "minmax", "feature_offset": [0, 1], "feature_scale": [1]})")
            .find("field 'feature_scale' has 1 values but feature_offset has 2") != std::string::npos);
  CHECK(model_error(R"({"features": "minmax", "feature_offset": [0, "a"], "feature_scale": [1, 1]})")
            .find("field 'feature_offset[1]' must be a number") != std::string::npos);
  CHECK(model_error(R"({"features": "minmax", "feature_offset": [0], "feature_scale": [0]})")
            .find("field 'feature_scale[0]' must not be 0") != std::string::npos);
  CHECK(model_error(R"({"features": "minmax", "feature_offset": [1e300], "feature_scale": [1]})")
            .find("field 'feature_offset[0]' must be a finite float") != std::string::npos);
  CHECK(model_error(R"({"feature_scale": [1]})").find("field 'feature_scale' needs a 'features' method") !=
        std::string::npos);
  CHECK(model_error(R"({"target_offset": 1})").find("field 'target_scale' is missing") != std::string::npos);
  CHECK(model_error(R"({"target_offset": 1, "target_scale": 0})").find("field 'target_scale' must not be 0") !=
        std::string::npos);
  CHECK(model_error(R"({"target_offset": "1", "target_scale": 2})").find("field 'target_offset' must be a number") !=
        std::string::npos);
  CHECK(model_error(R"({"label_map": {"1": 0}})").find("field 'label_map' must be an array") != std::string::npos);
  CHECK(model_error(R"({"label_map": [[1, 0, 2]]})").find("field 'label_map[0]' must be a [from, to] pair") !=
        std::string::npos);
  CHECK(model_error(R"({"label_map": [[1, 0], [1, 1]]})").find("maps class id 1 a second time") != std::string::npos);
  CHECK(model_error(R"({"label_map": [[1, -1]]})").find("field 'label_map[0][1]' must be in 0..") !=
        std::string::npos);
  CHECK(model_error(R"({"label_map": [[1, 0.5]]})").find("field 'label_map[0][1]' must be an integer") !=
        std::string::npos);
  CHECK(model_error(R"({"fit_rows": -3})").find("field 'fit_rows'") != std::string::npos);
}

TEST_CASE("preprocess: from_metadata is empty without the key and names the model otherwise") {
  CHECK(Preprocessing::from_metadata({{"deeplocalize.loss", "mse"}}, "m.onnx").empty());
  const auto p = Preprocessing::from_metadata(
      {{dl::rt::kPreprocessingKey, R"({"target_offset": 2, "target_scale": 0.5})"}}, "m.onnx");
  CHECK(p.targets);
  CHECK(p.target_scale == 0.5f);
  try {
    Preprocessing::from_metadata({{dl::rt::kPreprocessingKey, "{\"features\": 1}"}}, "m.onnx");
    FAIL("no error");
  } catch (const dl::ModelError& e) {
    CHECK(std::string(e.what()).find("m.onnx: metadata deeplocalize.preprocessing: field 'features'") == 0);
  }
}

TEST_CASE("preprocess: describe and python_code say what was done") {
  Dataset d = small();
  Preprocessing p;
  p.fit_features(d, Features::kStandardize);
  p.fit_targets(d);
  Preprocessing l;
  l.fit_labels(one_based(Enc::kSparse));
  p.label_map = l.label_map;
  const auto lines = p.describe();
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "standardise the 3 input features (mean and std of the 5 training rows)");
  CHECK(lines[1] == "scale the regression targets (mean 141.6, std 41.7)");
  CHECK(lines[2] == "map class ids 1, 2, 3 to 0, 1, 2");
  const std::string code = p.python_code();
  CHECK(code.find("mean = x_train.mean(axis=0); std = x_train.std(axis=0); std[std == 0] = 1\n") !=
        std::string::npos);
  CHECK(code.find("x_val = (x_val - mean) / std\n") != std::string::npos);
  CHECK(code.find("x_test = (x_test - mean) / std\n") != std::string::npos);
  CHECK(code.find("y_train = (y_train - y_mean) / y_std\n") != std::string::npos);
  CHECK(code.find("label_map = {1: 0, 2: 1, 3: 2}\n") != std::string::npos);
  Preprocessing m;
  m.fit_features(d, Features::kMinMax);
  CHECK(m.describe()[0] == "min-max scale the 3 input features to [0, 1] (min and max of the 5 training rows)");
  CHECK(m.python_code().find("x_train = (x_train - lo) / span\n") != std::string::npos);
  Preprocessing big;
  for (int i = 0; i < 12; ++i) big.label_map.emplace_back(float(i + 1), i);
  CHECK(big.describe()[0] == "map class ids 1, 2, 3, ..., 12 to 0, 1, 2, ..., 11");
  CHECK(big.python_code().find("pos = np.searchsorted(ids, y)") != std::string::npos);
}

TEST_CASE("preprocess: standardizing 60000 x 784 values in place") {
  Dataset d;
  d.source = "mnist.npz";
  d.n = 60000;
  d.x_size = 784;
  d.x_shape = {1, 28, 28};
  d.y_size = 1;
  d.x.resize(size_t(d.n * d.x_size));
  for (size_t i = 0; i < d.x.size(); ++i) d.x[i] = float((i * 2654435761u) % 256);  // deterministic pixels
  d.y.assign(size_t(d.n), 0.0f);
  Preprocessing p;
  p.fit_features(d, Features::kStandardize);
  const float x0 = d.x[0], x_last = d.x.back();
  p.apply(d);
  CHECK(d.x[0] == (x0 - p.feature_offset[0]) * p.feature_scale[0]);
  CHECK(d.x.back() == (x_last - p.feature_offset.back()) * p.feature_scale.back());
}
