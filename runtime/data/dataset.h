// Training data ready for a model: features reshaped to the model's input, targets
// encoded for its loss, a Keras-style validation split and Keras-style batching.
//
// Malformed data (wrong feature count, wrong target count) throws dl::DataError.
// Well-formed data that cannot be right for the model is not an input error (contract,
// "CSV data"): invalid class ids and NaN/Inf values are recorded in the Dataset for the
// analysis to report as findings.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "runtime/data/table.h"
#include "runtime/tensor.h"

namespace dl::rt {

struct DatasetSpec {
  int64_t targets = 1;                 // trailing CSV (or single .npy) columns that are targets; ignored for .npz
  Shape sample_shape;                  // model input shape without the batch dimension
  std::string input_name = "input";    // for messages
  int64_t output_width = 1;            // model output units per sample (last dim)
  std::string output_name = "output";  // for messages
  // Decided by the caller from the loss and output width:
  //  kAsIs   targets used as they are; there must be output_width of them.
  //  kOneHot categorical: one target column of class ids 0..C-1 (C = output_width) is
  //          one-hot encoded; targets already one-hot (C columns) are used as they are.
  //  kSparse sparse categorical: one target column of class ids, kept as one value.
  enum class Encoding { kAsIs, kOneHot, kSparse } encoding = Encoding::kAsIs;
};

// An invalid class id (one-hot or sparse encodings).
struct LabelIssue {
  int64_t row = 0;   // dataset row
  int64_t line = 0;  // source line (CSV) or array row (npy/npz), see Dataset::csv_lines
  float value = 0;
  std::string problem;  // "class id 3 is outside 0..2", "class id 1.5 is not an integer"
};

// A NaN or Inf value in the data.
struct ValueIssue {
  int64_t row = 0, line = 0;
  int64_t column = 0;  // 0-based column of the source table (features, then targets)
  bool target = false;
  float value = 0;
};

struct Dataset {
  static constexpr size_t kMaxIssues = 20;  // issues kept in the lists; the counts are complete

  std::string source;
  int64_t n = 0;
  Shape x_shape;                   // per sample (the model input without the batch dim)
  int64_t x_size = 0, y_size = 0;  // values per sample
  std::vector<float> x, y;         // n * x_size, n * y_size
  std::vector<int64_t> line_of_row;
  bool csv_lines = false;           // line_of_row holds CSV lines (else array rows)
  std::vector<std::string> header;  // CSV column names, when the file had a header

  // How y was made from the targets: kAsIs when y holds the target columns as given
  // (regression, or targets that already were one-hot; num_classes is 0), else kOneHot or
  // kSparse from the class ids in raw_labels (see encode_class_targets).
  DatasetSpec::Encoding encoding = DatasetSpec::Encoding::kAsIs;
  // Class encodings: the original target column, and the number of classes (0 = kAsIs).
  // One-hot rows of invalid ids are all zero; sparse targets of invalid ids are -1, so a
  // loss only needs to skip ids outside 0..C-1.
  std::vector<float> raw_labels;
  int64_t num_classes = 0;
  std::vector<LabelIssue> label_issues;  // the first kMaxIssues
  int64_t label_issue_count = 0;
  std::vector<ValueIssue> value_issues;  // the first kMaxIssues NaN/Inf values
  int64_t value_issue_count = 0;

  // "data.csv:17" or "data.npz[x.npy] row 16", for findings.
  std::string where(int64_t row) const { return row_location(source, csv_lines, line_of_row[row]); }
};

// Splits the trailing spec.targets columns off as targets (features first).
Dataset make_dataset(Table features_and_targets, const DatasetSpec& spec);
// Features and targets from separate tables with the same number of rows (.npz x, y).
Dataset make_dataset(Table x, Table y, const DatasetSpec& spec);
// Reads a data file (format from its first bytes: .npy, .npz, else CSV) and makes the
// dataset: CSV and .npy split trailing target columns, .npz uses its x and y entries.
Dataset load_dataset(const std::string& path, const DatasetSpec& spec, const ReadOptions& options = {});

// Rebuilds d.y from d.raw_labels as d.encoding says (one-hot: num_classes values a row,
// sparse: one), exactly as make_dataset encodes them, and recomputes label_issues and
// label_issue_count; value issues are kept. For class ids changed after make_dataset (a
// remap): the result is the dataset make_dataset would have built from the changed ids.
// Throws InternalError unless d has class ids (encoding kOneHot or kSparse, num_classes >
// 0 and n raw labels).
void encode_class_targets(Dataset& d);

// For a model input of integers (int64 token ids): data files hold numbers, so every
// feature value must be an integer that float32 holds exactly (|v| <= 2^24). Throws
// DataError naming the file, line (or array row), column, value and `input_name`.
void check_integer_features(const Dataset& d, const std::string& input_name);

// Like Keras' validation_split: validation = the last fraction of rows (before any
// shuffling), train = the first floor(n * (1 - fraction)) rows. Issues are re-derived
// for each part. Throws ConfigError unless 0 <= fraction < 1 and both parts are non-empty
// (a fraction of 0 gives an empty validation set).
std::pair<Dataset, Dataset> split_validation(const Dataset& data, double fraction);

// The rows of `data` at `rows`, in that order; issues re-derived.
Dataset subset_rows(const Dataset& data, const std::vector<int64_t>& rows);

// The class of each row when the targets are one class per row: the distinct class ids
// of a sparse or one-hot encoding numbered in ascending order (ids the model cannot take
// too: a repair may remap them), the position of the 1 in targets given one-hot, or 0/1
// for a single target column that holds only 0 and 1. Rows without a class (a NaN id)
// are -1. Empty when the targets are not classes (regression, multi-label rows).
std::vector<int64_t> row_classes(const Dataset& data);

// The share of the most frequent class among the rows with a class (classes >= 0); 0 for none.
double majority_share(const std::vector<int64_t>& classes);

// A stratified hold-out (the fix trials' check that a repair learned something that
// holds on rows it did not train on): of each class's rows (`classes`, row_classes),
// round(fraction x count) chosen with std::mt19937_64(seed) are held out; rows without a
// class stay in training. Both parts keep the original row order. {train, held out}.
std::pair<Dataset, Dataset> split_holdout(const Dataset& data, const std::vector<int64_t>& classes, double fraction,
                                          uint64_t seed);

// Shuffles v in place the same way with every standard library (std::shuffle is
// implementation-defined): Fisher-Yates on rejection-sampled raw generator output.
void portable_shuffle(std::vector<int64_t>& v, std::mt19937_64& rng);

// Keras-style batching: each epoch visits every row once in an order shuffled with
// std::mt19937_64(seed + epoch) (a portable Fisher-Yates, so the order is the same on
// every platform), in batches of batch_size; the last, partial batch is kept (smaller).
// Holds a reference to the dataset, which must outlive it.
class BatchIterator {
 public:
  BatchIterator(const Dataset& data, int64_t batch_size, uint64_t seed, bool shuffle = true);

  // Sets the row order for epoch e and returns it (the identity when not shuffling).
  const std::vector<int64_t>& epoch(int e);
  const std::vector<int64_t>& order() const { return order_; }
  int64_t batch_count() const;
  int64_t batch_rows(int64_t b) const;
  // Dataset row of the i-th sample of batch b (for messages).
  int64_t row(int64_t b, int64_t i) const { return order_[static_cast<size_t>(b * batch_size_ + i)]; }
  // Copies batch b's rows into caller buffers of batch_rows(b) * x_size and
  // batch_rows(b) * y_size floats (y_out may be null). No allocation.
  void fill(int64_t b, float* x_out, float* y_out) const;
  // The same into a model input tensor of batch_rows(b) * x_size values: float32 as is,
  // int64 (token ids) converted; the values must have passed check_integer_features.
  void fill(int64_t b, Tensor& x_out, float* y_out) const;

 private:
  const Dataset& data_;
  int64_t batch_size_;
  uint64_t seed_;
  bool shuffle_;
  std::vector<int64_t> order_;
};

}  // namespace dl::rt
