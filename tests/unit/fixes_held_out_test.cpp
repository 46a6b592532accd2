// The fix trials' hold-out (docs/fixes.md, "Held-out rows"): which rows are classes, the
// stratified split, the binomial test and the judgement of a trial that only memorised.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "analysis/fixes.h"
#include "fixes_test_util.h"
#include "runtime/data/dataset.h"

namespace {

using namespace dl;

// n rows of one feature (the row number) and the targets given.
rt::Dataset rows(int64_t n, int64_t y_size, const std::vector<float>& y) {
  rt::Dataset d;
  d.source = "t.csv";
  d.n = n;
  d.x_shape = {1};
  d.x_size = 1;
  d.y_size = y_size;
  for (int64_t r = 0; r < n; ++r) d.x.push_back(float(r)), d.line_of_row.push_back(r + 2);
  d.y = y;
  d.csv_lines = true;
  return d;
}

}  // namespace

TEST_CASE("fixes held-out: row_classes reads class ids, binary columns and one-hot rows, not regression") {
  rt::Dataset sparse = rows(4, 1, {0, 2, -1, 1});
  sparse.encoding = rt::DatasetSpec::Encoding::kSparse;
  sparse.num_classes = 3;
  sparse.raw_labels = {0, 2, 7, 1};  // 7 is no class of the model, but a class of the data
  CHECK(rt::row_classes(sparse) == std::vector<int64_t>{0, 2, 3, 1});
  sparse.raw_labels = {5, 6, 6, std::numeric_limits<float>::quiet_NaN()};
  CHECK(rt::row_classes(sparse) == std::vector<int64_t>{0, 1, 1, -1});
  CHECK(rt::row_classes(rows(3, 1, {0, 1, 1})) == std::vector<int64_t>{0, 1, 1});
  CHECK(rt::row_classes(rows(3, 1, {0, 1, 0.5f})).empty());                      // regression
  CHECK(rt::row_classes(rows(2, 2, {0, 1, 1, 0})) == std::vector<int64_t>{1, 0});  // one-hot given
  CHECK(rt::row_classes(rows(2, 2, {1, 1, 0, 1})).empty());                      // multi-label
  CHECK(rt::majority_share({0, 1, 1, -1, 1}) == doctest::Approx(0.75));
  CHECK(rt::majority_share({}) == 0.0);
}

TEST_CASE("fixes held-out: split_holdout takes a fifth of each class, seeded, rows in order") {
  std::vector<float> y;
  for (int r = 0; r < 150; ++r) y.push_back(r < 100 ? 0.0f : 1.0f);  // 100 of class 0, 50 of class 1
  const rt::Dataset d = rows(150, 1, y);
  const auto classes = rt::row_classes(d);
  auto [train, held] = rt::split_holdout(d, classes, 0.2, 7);
  CHECK(train.n == 120);
  CHECK(held.n == 30);
  int ones = 0;
  for (float v : held.y) ones += v == 1.0f;
  CHECK(ones == 10);  // stratified: 20 of class 0, 10 of class 1
  for (int64_t r = 1; r < held.n; ++r) CHECK(held.x[size_t(r)] > held.x[size_t(r - 1)]);
  CHECK(held.line_of_row[0] == int64_t(held.x[0]) + 2);  // rows keep their lines
  auto again = rt::split_holdout(d, classes, 0.2, 7);
  CHECK(again.second.x == held.x);
  auto other = rt::split_holdout(d, classes, 0.2, 8);
  CHECK(other.second.x != held.x);
  // Every row lands in exactly one part.
  std::vector<int> seen(150, 0);
  for (float v : train.x) ++seen[size_t(v)];
  for (float v : held.x) ++seen[size_t(v)];
  for (int s : seen) CHECK(s == 1);
}

TEST_CASE("fixes held-out: binomial_tail") {
  CHECK(an::binomial_tail(20, 12, 0.5) == doctest::Approx(0.2517223).epsilon(1e-6));
  CHECK(an::binomial_tail(10, 10, 0.5) == doctest::Approx(1.0 / 1024).epsilon(1e-9));
  CHECK(an::binomial_tail(10, 0, 0.3) == 1.0);
  CHECK(an::binomial_tail(10, 11, 0.3) == 0.0);
  CHECK(an::binomial_tail(30, 27, 1.0 / 3) < 1e-9);
  CHECK(an::binomial_tail(5000, 2600, 0.5) == doctest::Approx(0.0024418249).epsilon(1e-6));
}

TEST_CASE("fixes held-out: a trial that learned nothing that holds on held-out rows is no fix") {
  using an::RootCause;
  using namespace test::fixes;
  const an::Diagnosis original = faulty({finding("unlearnable_labels", RootCause::kLabels)});
  an::FixMetrics before, after;
  before.loss = 1.1, before.metric = 0.35;
  after.loss = 0.3, after.metric = 0.92;  // the training rows memorised
  an::HeldOutAccuracy held;
  held.rows = 30, held.chance = 0.34;
  held.accuracy = 0.40;  // 12 of 30 right, chance 0.34: p ~ 0.3
  const auto memorised = an::judge_trial(original, before, an::Diagnosis(), after, true, true, true, {},
                                         std::numeric_limits<double>::quiet_NaN(), held);
  CHECK_FALSE(memorised.verified);
  CHECK(memorised.status == an::TrialStatus::kNoImprovement);
  CHECK(memorised.reason.find("held-out rows") != std::string::npos);
  held.accuracy = 0.90;  // 27 of 30: it learned
  const auto learned = an::judge_trial(original, before, an::Diagnosis(), after, true, true, true, {},
                                       std::numeric_limits<double>::quiet_NaN(), held);
  CHECK(learned.verified);
  held.rows = 0;  // no hold-out: the training rows decide, as before
  held.accuracy = 0.40;
  CHECK(an::judge_trial(original, before, an::Diagnosis(), after, true, true, true, {},
                        std::numeric_limits<double>::quiet_NaN(), held)
            .verified);
}
