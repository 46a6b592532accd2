#include "runtime/data/dataset.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "converter/errors.h"
#include "runtime/data/io.h"
#include "runtime/data/npy_internal.h"

namespace dl::rt {
namespace {

std::string number(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", double(v));
  return buf;
}

std::string fraction_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string plural(int64_t n, const char* word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

// Why v is not a class id of 0..classes-1, or "" when it is one.
std::string label_problem(float v, int64_t classes) {
  if (std::isnan(v)) return "class id nan is not a number";
  if (std::isinf(v) || v != std::floor(v)) return "class id " + number(v) + " is not an integer";
  if (v < 0 || v >= float(classes)) return "class id " + number(v) + " is outside 0.." + std::to_string(classes - 1);
  return "";
}

// Source line (or array row) of row r, for issues; r itself when the dataset has none.
int64_t line_of(const Dataset& d, int64_t r) {
  return r < static_cast<int64_t>(d.line_of_row.size()) ? d.line_of_row[r] : r;
}

void scan_label_issues(Dataset& d) {
  d.label_issues.clear();
  d.label_issue_count = 0;
  if (d.num_classes <= 0) return;
  for (int64_t r = 0; r < d.n; ++r) {
    const float v = d.raw_labels[r];
    std::string problem = label_problem(v, d.num_classes);
    if (problem.empty()) continue;
    if (d.label_issues.size() < Dataset::kMaxIssues) d.label_issues.push_back({r, line_of(d, r), v, std::move(problem)});
    ++d.label_issue_count;
  }
}

// Re-derives the label and value issues of a dataset from its values. Class ids are
// checked as labels, so only targets taken as they are can hold NaN/Inf value issues.
void scan_issues(Dataset& d) {
  d.value_issues.clear();
  d.value_issue_count = 0;
  auto value = [&](int64_t r, int64_t col, bool target, float v) {
    if (std::isfinite(v)) return;
    if (d.value_issues.size() < Dataset::kMaxIssues) d.value_issues.push_back({r, line_of(d, r), col, target, v});
    ++d.value_issue_count;
  };
  for (int64_t r = 0; r < d.n; ++r) {
    const float* x = d.x.data() + r * d.x_size;
    for (int64_t k = 0; k < d.x_size; ++k)
      if (!std::isfinite(x[k])) value(r, k, false, x[k]);
    if (d.num_classes > 0) continue;
    for (int64_t k = 0; k < d.y_size; ++k) value(r, d.x_size + k, true, d.y[r * d.y_size + k]);
  }
  scan_label_issues(d);
}

// y from raw_labels: a one-hot row (all zero for an invalid id) or the id (-1 if invalid).
void fill_class_targets(Dataset& d) {
  const int64_t c = d.num_classes;
  const bool one_hot = d.encoding == DatasetSpec::Encoding::kOneHot;
  d.y_size = one_hot ? c : 1;
  d.y.assign(static_cast<size_t>(d.n * d.y_size), 0.0f);
  for (int64_t r = 0; r < d.n; ++r) {
    const float v = d.raw_labels[r];
    const bool valid = label_problem(v, c).empty();
    if (!one_hot) {
      d.y[r] = valid ? v : -1.0f;
    } else if (valid) {
      d.y[r * c + static_cast<int64_t>(v)] = 1.0f;
    }
  }
}

// Fills d.y (and raw_labels) from the targets, t values per row, as the spec encodes them.
void encode_targets(Dataset& d, std::vector<float> targets, int64_t t, const DatasetSpec& spec) {
  using Enc = DatasetSpec::Encoding;
  const int64_t c = spec.output_width;
  const std::string out = "the model output '" + spec.output_name + "' has " + plural(c, "value") + " per sample";
  if (spec.encoding == Enc::kAsIs || (spec.encoding == Enc::kOneHot && t == c && c > 1)) {
    if (t != c) throw DataError(d.source + " has " + plural(t, "target column") + " but " + out);
    d.y_size = t;
    d.y = std::move(targets);
    return;
  }
  if (t != 1) {
    throw DataError(d.source + " has " + plural(t, "target column") + " but " +
                    (spec.encoding == Enc::kOneHot ? "a categorical loss needs one column of class ids or " +
                                                         std::to_string(c) + " one-hot columns, as " + out
                                                   : "a sparse categorical loss needs one column of class ids"));
  }
  d.encoding = spec.encoding;
  d.num_classes = c;
  d.raw_labels = std::move(targets);
  fill_class_targets(d);
}

Dataset start(const Table& t, const std::string& source, const DatasetSpec& spec) {
  Dataset d;
  d.source = source;
  d.n = t.rows;
  d.x_shape = spec.sample_shape;
  d.x_size = shape_numel(spec.sample_shape);
  d.line_of_row = t.line_of_row;
  d.csv_lines = t.csv_lines;
  d.header = t.header;
  return d;
}

std::string model_input(const DatasetSpec& spec, int64_t size) {
  return "the model input '" + spec.input_name + "' takes " + shape_str(spec.sample_shape) + " = " +
         plural(size, "value") + " per sample";
}

}  // namespace

Dataset make_dataset(Table t, const DatasetSpec& spec) {
  if (spec.targets < 1)
    throw ConfigError("the number of target columns must be at least 1, got " + std::to_string(spec.targets));
  Dataset d = start(t, t.source, spec);
  const int64_t nt = spec.targets, features = t.cols - nt;
  if (features <= 0)
    throw DataError(t.source + " has " + plural(t.cols, "column") + " and the last " + std::to_string(nt) +
                    " are targets: no feature columns are left (--targets sets how many trailing columns are targets)");
  if (features != d.x_size)
    throw DataError(t.source + " has " + plural(features, "feature column") + " but " + model_input(spec, d.x_size) +
                    " (the last " +
                    (nt == 1 ? std::string("column is the target") : std::to_string(nt) + " columns are targets") +
                    "; --targets sets how many)");
  std::vector<float> targets(static_cast<size_t>(t.rows * nt));
  // Features stay in the table's storage, compacted in place (rows move towards the front).
  float* v = t.values.data();
  for (int64_t r = 0; r < t.rows; ++r) {
    std::memcpy(&targets[r * nt], v + r * t.cols + features, sizeof(float) * nt);
    std::memmove(v + r * features, v + r * t.cols, sizeof(float) * features);
  }
  t.values.resize(static_cast<size_t>(t.rows * features));
  t.values.shrink_to_fit();
  d.x = std::move(t.values);
  encode_targets(d, std::move(targets), nt, spec);
  scan_issues(d);
  return d;
}

Dataset make_dataset(Table x, Table y, const DatasetSpec& spec) {
  std::string source = x.source;
  if (source.size() > 7 && source.compare(source.size() - 7, 7, "[x.npy]") == 0) source.resize(source.size() - 7);
  Dataset d = start(x, source, spec);
  if (x.rows != y.rows)
    throw DataError(source + ": x has " + plural(x.rows, "row") + " but y has " + std::to_string(y.rows));
  if (x.cols != d.x_size)
    throw DataError(x.source + " has " + plural(x.cols, "value") + " per sample but " + model_input(spec, d.x_size));
  d.x = std::move(x.values);
  encode_targets(d, std::move(y.values), y.cols, spec);
  scan_issues(d);
  return d;
}

Dataset load_dataset(const std::string& path, const DatasetSpec& spec, const ReadOptions& options) {
  // Read once: sniffing the format must not consume a pipe's bytes.
  const data::FileBytes bytes(path, options.max_bytes);
  switch (data::sniff_format(bytes.data(), bytes.size())) {
    case DataFormat::kNpz: {
      auto xy = data::parse_npz_xy(bytes.data(), bytes.size(), path, options);
      return make_dataset(std::move(xy.first), std::move(xy.second), spec);
    }
    case DataFormat::kNpy:
      return make_dataset(data::parse_npy(bytes.data(), bytes.size(), path, options), spec);
    case DataFormat::kCsv:
      break;
  }
  return make_dataset(data::parse_csv(bytes.data(), bytes.size(), path, options), spec);
}

void encode_class_targets(Dataset& d) {
  if (d.encoding == DatasetSpec::Encoding::kAsIs || d.num_classes <= 0 ||
      static_cast<int64_t>(d.raw_labels.size()) != d.n)
    throw InternalError(d.source + ": the targets are not class ids (" + std::to_string(d.num_classes) +
                        " classes, " + std::to_string(d.raw_labels.size()) + " ids for " + plural(d.n, "row") + ")");
  fill_class_targets(d);
  scan_label_issues(d);
}

std::pair<Dataset, Dataset> split_validation(const Dataset& data, double fraction) {
  if (!(fraction >= 0 && fraction < 1))
    throw ConfigError("the validation split must be at least 0 and below 1, got " + fraction_text(fraction));
  const auto n_train = static_cast<int64_t>(std::floor(double(data.n) * (1.0 - fraction)));  // as Keras
  if (n_train == 0 || (fraction > 0 && n_train == data.n))
    throw ConfigError("a validation split of " + fraction_text(fraction) + " of " + plural(data.n, "row") + " leaves " +
                      (n_train == 0 ? "no training rows" : "no validation rows"));
  std::vector<int64_t> train(static_cast<size_t>(n_train)), validation(static_cast<size_t>(data.n - n_train));
  for (int64_t r = 0; r < data.n; ++r) (r < n_train ? train[size_t(r)] : validation[size_t(r - n_train)]) = r;
  return {subset_rows(data, train), subset_rows(data, validation)};
}

Dataset subset_rows(const Dataset& data, const std::vector<int64_t>& rows) {
  Dataset p;
  p.source = data.source;
  p.n = static_cast<int64_t>(rows.size());
  p.x_shape = data.x_shape;
  p.x_size = data.x_size;
  p.y_size = data.y_size;
  p.csv_lines = data.csv_lines;
  p.header = data.header;
  p.encoding = data.encoding;
  p.num_classes = data.num_classes;
  p.x.reserve(rows.size() * size_t(data.x_size));
  p.y.reserve(rows.size() * size_t(data.y_size));
  for (int64_t r : rows) {
    p.x.insert(p.x.end(), data.x.begin() + r * data.x_size, data.x.begin() + (r + 1) * data.x_size);
    p.y.insert(p.y.end(), data.y.begin() + r * data.y_size, data.y.begin() + (r + 1) * data.y_size);
    p.line_of_row.push_back(data.line_of_row[size_t(r)]);
    if (!data.raw_labels.empty()) p.raw_labels.push_back(data.raw_labels[size_t(r)]);
  }
  scan_issues(p);
  return p;
}

}  // namespace dl::rt
