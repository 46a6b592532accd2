// Datasets (runtime/data/dataset.cpp, batch.cpp): targets, encodings, label and value
// issues, the Keras validation split and Keras batching.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "converter/errors.h"
#include "data_test_util.h"
#include "runtime/data/dataset.h"

using dl::rt::Dataset;
using Enc = dl::rt::DatasetSpec::Encoding;
using namespace dl::test::data;

namespace {

// n rows of 2 features (r, -r) and a class id r % 3.
Dataset classes(int64_t n) {
  std::vector<float> v;
  for (int64_t r = 0; r < n; ++r) v.insert(v.end(), {float(r), float(-r), float(r % 3)});
  return make_dataset(table(3, v), spec({2}, 3, Enc::kOneHot));
}

}  // namespace

TEST_CASE("dataset: trailing target columns are split off; features take the input shape") {
  const Dataset d = make_dataset(table(4, {1, 2, 3, 4, 5, 6, 7, 8}), spec({1, 2}, 2, Enc::kAsIs, 2));
  CHECK(d.n == 2);
  CHECK(d.x_shape == dl::rt::Shape{1, 2});
  CHECK(d.x_size == 2);
  CHECK(d.y_size == 2);
  CHECK(d.x == std::vector<float>{1, 2, 5, 6});
  CHECK(d.y == std::vector<float>{3, 4, 7, 8});
  CHECK(d.where(1) == "d.csv:3");
}

TEST_CASE("dataset: feature and target counts that do not fit the model are input errors") {
  CHECK(error_of([] {
          make_dataset(table(11, std::vector<float>(22)), spec({1, 28, 28}));
        }) ==
        "d.csv has 10 feature columns but the model input 'input' takes [1, 28, 28] = 784 values per sample "
        "(the last column is the target; --targets sets how many)");
  CHECK(error_of([] { make_dataset(table(2, std::vector<float>(4)), spec({1}, 1, Enc::kAsIs, 2)); }) ==
        "d.csv has 2 columns and the last 2 are targets: no feature columns are left "
        "(--targets sets how many trailing columns are targets)");
  CHECK(error_of([] { make_dataset(table(3, std::vector<float>(6)), spec({2}, 10)); }) ==
        "d.csv has 1 target column but the model output 'output' has 10 values per sample");
  CHECK(error_of([] { make_dataset(table(4, std::vector<float>(8)), spec({2}, 3, Enc::kSparse, 2)); }) ==
        "d.csv has 2 target columns but a sparse categorical loss needs one column of class ids");
}

TEST_CASE("dataset: one-hot and sparse encodings of class ids") {
  const Dataset d = classes(4);
  CHECK(d.y_size == 3);
  CHECK(d.num_classes == 3);
  CHECK(d.y == std::vector<float>{1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0});
  CHECK(d.raw_labels == std::vector<float>{0, 1, 2, 0});
  CHECK(d.label_issue_count == 0);
  const Dataset s = make_dataset(table(2, {5, 2, 6, 0}), spec({1}, 3, Enc::kSparse));
  CHECK(s.y_size == 1);
  CHECK(s.y == std::vector<float>{2, 0});
  // Targets already one-hot (C columns) are used as they are.
  const Dataset h = make_dataset(table(4, {9, 0, 1, 0, 8, 1, 0, 0}), spec({1}, 3, Enc::kOneHot, 3));
  CHECK(h.y == std::vector<float>{0, 1, 0, 1, 0, 0});
  CHECK(h.num_classes == 0);
}

TEST_CASE("dataset: invalid class ids are recorded, not thrown") {
  const Dataset d = make_dataset(table(2, {1, 0, 2, 3, 3, 1.5f, 4, NAN, 5, -1, 6, 2}), spec({1}, 3, Enc::kOneHot));
  CHECK(d.label_issue_count == 4);
  REQUIRE(d.label_issues.size() == 4);
  CHECK(d.label_issues[0].row == 1);
  CHECK(d.label_issues[0].line == 3);
  CHECK(d.label_issues[0].value == 3);
  CHECK(d.label_issues[0].problem == "class id 3 is outside 0..2");
  CHECK(d.label_issues[1].problem == "class id 1.5 is not an integer");
  CHECK(d.label_issues[2].problem == "class id nan is not a number");
  CHECK(d.label_issues[3].problem == "class id -1 is outside 0..2");
  CHECK(d.y == std::vector<float>{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});  // invalid rows all zero
  const Dataset s = make_dataset(table(2, {1, 0, 2, 3}), spec({1}, 3, Enc::kSparse));
  CHECK(s.y == std::vector<float>{0, -1});
  CHECK(s.label_issue_count == 1);
  // Only the first kMaxIssues are kept; the count is complete.
  std::vector<float> v;
  for (int r = 0; r < 25; ++r) v.insert(v.end(), {0, 7});
  const Dataset many = make_dataset(table(2, v), spec({1}, 3, Enc::kOneHot));
  CHECK(many.label_issue_count == 25);
  CHECK(many.label_issues.size() == Dataset::kMaxIssues);
}

TEST_CASE("dataset: the encoding is recorded and encode_class_targets re-encodes changed ids") {
  CHECK(classes(4).encoding == Enc::kOneHot);
  CHECK(make_dataset(table(4, {9, 0, 1, 0}), spec({1}, 3, Enc::kOneHot, 3)).encoding == Enc::kAsIs);  // already one-hot
  CHECK(make_dataset(table(2, {1, 2}), spec({1})).encoding == Enc::kAsIs);
  for (Enc enc : {Enc::kOneHot, Enc::kSparse}) {
    CAPTURE(int(enc));
    Dataset d = make_dataset(table(2, {0, 1, 0, 3, 0, 2, 0, 3}), spec({1}, 3, enc));
    auto [train, val] = split_validation(d, 0.5);
    CHECK(val.encoding == enc);
    for (float& v : d.raw_labels) v = v == 3 ? 0 : v;
    d.label_issue_count = -1;  // recomputed, not kept
    encode_class_targets(d);
    const Dataset fresh = make_dataset(table(2, {0, 1, 0, 0, 0, 2, 0, 0}), spec({1}, 3, enc));
    CHECK(d.y == fresh.y);
    CHECK(d.y_size == fresh.y_size);
    CHECK(d.label_issue_count == 0);
    CHECK(d.label_issues.empty());
  }
  // One class: one-hot and sparse targets both have one value a row; the encoding decides.
  for (Enc enc : {Enc::kOneHot, Enc::kSparse}) {
    Dataset d = make_dataset(table(2, {0, 5, 0, 0}), spec({1}, 1, enc));
    REQUIRE(d.label_issue_count == 1);
    d.raw_labels = {0, 0};
    encode_class_targets(d);
    CHECK(d.y == std::vector<float>{enc == Enc::kOneHot ? 1.0f : 0.0f, enc == Enc::kOneHot ? 1.0f : 0.0f});
    CHECK(d.label_issue_count == 0);
  }
  Dataset regression = make_dataset(table(2, {1, 2}), spec({1}));
  CHECK_THROWS_AS(encode_class_targets(regression), dl::InternalError);
}

TEST_CASE("dataset: NaN and Inf values are accepted and recorded") {
  const Dataset d = make_dataset(table(3, {1, NAN, 0, 2, 3, INFINITY}), spec({2}));
  CHECK(d.n == 2);
  CHECK(d.value_issue_count == 2);
  REQUIRE(d.value_issues.size() == 2);
  CHECK(d.value_issues[0].line == 2);
  CHECK(d.value_issues[0].column == 1);
  CHECK_FALSE(d.value_issues[0].target);
  CHECK(d.value_issues[1].column == 2);
  CHECK(d.value_issues[1].target);
}

TEST_CASE("dataset: validation split takes the last rows, as Keras") {
  const Dataset d = classes(10);
  auto [train, val] = split_validation(d, 0.25);
  CHECK(train.n == 7);  // floor(10 * 0.75)
  CHECK(val.n == 3);
  CHECK(train.x[0] == 0);
  CHECK(val.x[0] == 7);
  CHECK(val.line_of_row == std::vector<int64_t>{9, 10, 11});
  CHECK(val.y.size() == 9);
  CHECK(val.raw_labels == std::vector<float>{1, 2, 0});
  auto [all, none] = split_validation(d, 0.0);
  CHECK(all.n == 10);
  CHECK(none.n == 0);
  CHECK(error_of([&] { split_validation(d, 1.0); }) == "the validation split must be at least 0 and below 1, got 1");
  CHECK(error_of([&] { split_validation(d, 1e-20); }) ==
        "a validation split of 1e-20 of 10 rows leaves no validation rows");
  // Issues are re-derived for each part.
  const Dataset bad = make_dataset(table(2, {0, 0, 0, 9, 0, 1, 0, 9}), spec({1}, 3, Enc::kOneHot));
  auto [t2, v2] = split_validation(bad, 0.5);
  CHECK(t2.label_issue_count == 1);
  CHECK(v2.label_issue_count == 1);
  CHECK(v2.label_issues[0].row == 1);
  CHECK(v2.label_issues[0].line == 5);
}

TEST_CASE("batches: deterministic shuffling per epoch, last partial batch kept") {
  const Dataset d = classes(10);
  dl::rt::BatchIterator a(d, 4, 42), b(d, 4, 42), c(d, 4, 43);
  CHECK(a.batch_count() == 3);
  CHECK(a.batch_rows(0) == 4);
  CHECK(a.batch_rows(2) == 2);
  const std::vector<int64_t> e0 = a.epoch(0);
  CHECK(b.epoch(0) == e0);
  CHECK(a.epoch(1) != e0);
  CHECK(c.epoch(0) != e0);
  std::vector<int64_t> sorted = e0;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  // The order is fixed by the algorithm (portable), not by the standard library.
  CHECK(e0 == std::vector<int64_t>{1, 7, 9, 0, 3, 8, 4, 2, 5, 6});
  a.epoch(0);
  std::vector<float> x(8), y(12);
  a.fill(2, x.data(), y.data());  // the partial batch: rows e0[8], e0[9]
  CHECK(x[0] == float(e0[8]));
  CHECK(x[2] == float(e0[9]));
  CHECK(x[3] == -float(e0[9]));
  CHECK(y[3 + e0[9] % 3] == 1);
  CHECK(a.row(2, 1) == e0[9]);
  dl::rt::BatchIterator plain(d, 32, 1, false);
  CHECK(plain.batch_count() == 1);
  CHECK(plain.batch_rows(0) == 10);
  CHECK(plain.epoch(3)[9] == 9);
  CHECK(error_of([&] { dl::rt::BatchIterator(d, 0, 1); }) == "the batch size must be at least 1, got 0");
}

TEST_CASE("load_dataset: CSV, .npy and .npz by their contents") {
  const auto path = (std::filesystem::temp_directory_path() / "dl_data_test_load.csv").string();
  std::ofstream(path) << "a,b,label\n1,2,1\n3,4,0\n";
  const Dataset c = load_dataset(path, spec({2}, 2, Enc::kOneHot));
  CHECK(c.y == std::vector<float>{0, 1, 1, 0});
  CHECK(c.header.size() == 3);
  const std::string dir = std::string(DL_SOURCE_DIR) + "/tests/fixtures/data/";
  const Dataset z = load_dataset(dir + "xy_compressed.npz", spec({3}, 3, Enc::kSparse));
  CHECK(z.n == 4);
  CHECK(z.y == std::vector<float>{0, 1, 2, 1});
  CHECK(z.where(2) == dir + "xy_compressed.npz row 2");
  const Dataset n = load_dataset(dir + "f4_2d.npy", spec({3}));
  CHECK(n.y == std::vector<float>{1.5f, 3.5f, 5.5f});
}
