// In-memory datasets for the data tests (data_*_test.cpp, preprocess_test.cpp): a table
// as a CSV file would give it, a dataset spec, and the message of a dl::Error.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "converter/errors.h"
#include "runtime/data/dataset.h"

namespace dl::test::data {

// A CSV-like table: rows of values, lines 2, 3, ... (after a header).
inline rt::Table table(int64_t cols, std::vector<float> values) {
  rt::Table t;
  t.source = "d.csv";
  t.cols = cols;
  t.rows = static_cast<int64_t>(values.size()) / cols;
  t.values = std::move(values);
  t.csv_lines = true;
  for (int64_t r = 0; r < t.rows; ++r) t.line_of_row.push_back(r + 2);
  return t;
}

inline rt::DatasetSpec spec(rt::Shape sample, int64_t width = 1,
                            rt::DatasetSpec::Encoding enc = rt::DatasetSpec::Encoding::kAsIs, int64_t targets = 1) {
  rt::DatasetSpec s;
  s.sample_shape = std::move(sample);
  s.output_width = width;
  s.encoding = enc;
  s.targets = targets;
  return s;
}

// The dl::Error message `f` throws; "(no error)" when it returns.
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const dl::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace dl::test::data
