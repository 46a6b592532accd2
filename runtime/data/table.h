// Readers for training data files: CSV (the contract's format), NumPy .npy and .npz.
// Every reader returns a plain numeric Table; runtime/data/dataset.h turns tables into
// the features and targets a model trains on.
//
// Errors: malformed files throw dl::DataError whose message starts with the location,
// "file:line:column: message" (1-based line and character column of the offending CSV
// field) or "file: message" for whole-file problems. A ReadOptions::max_bytes cap that
// would be exceeded throws dl::ResourceError naming the memory needed.
// NaN and Inf values are accepted: they are not input errors but faults that the
// analysis reports (contract, "CSV data").
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dl::rt {

// A numeric table read from a data file: rows x cols float32 values, row-major.
struct Table {
  std::string source;  // file path or label (for messages)
  int64_t rows = 0, cols = 0;
  std::vector<float> values;        // rows * cols
  std::vector<std::string> header;  // column names when the CSV had a header row
  // Where each row came from: the 1-based source line (CSV) or the 0-based row index
  // of the array (npy/npz), as numpy counts. csv_lines tells which.
  std::vector<int64_t> line_of_row;
  bool csv_lines = false;
};

struct ReadOptions {
  // 0 = no cap; else refuse inputs whose parsed data (float32 values plus row
  // bookkeeping, and for npz the decompressed entries) would exceed this many bytes,
  // and streams (pipes, FIFOs, devices) that do not end within it.
  int64_t max_bytes = 0;
};

// The cap the CLI puts on loading data when --max-memory does not set one: a file that
// would need more is refused with the memory it needs, not left to the OOM killer.
constexpr int64_t kDefaultMaxDataBytes = int64_t(8) << 30;

// "data.csv:17" for a CSV line, "data.npy row 16" for an array row; used in findings.
std::string row_location(const std::string& source, bool csv_lines, int64_t line_or_row);

// CSV (contract): comma-separated, UTF-8 (a BOM is skipped), LF, CRLF or (with no LF in
// the file) CR line endings; a NUL byte is an error (binary data, not text);
// optional header row (a first row with any non-numeric field), spaces around fields,
// "quoted" numbers, nan/inf values, blank lines at the end ignored.
Table read_csv(const std::string& path, const ReadOptions& options = {});
// The same parser on text in memory; label stands for the file name in messages.
Table read_csv_text(const std::string& text, const std::string& label, const ReadOptions& options = {});

// .npy (format versions 1-3): dtypes <f4 <f8 <f2 <i1..<i8 <u1..<u8 |b1, converted to
// float32. 1-D arrays are n x 1, N-D arrays are shape[0] x prod(rest). Fortran-order
// arrays are transposed to row-major. Big-endian, structured and object arrays are
// rejected with a message saying how to convert them.
Table read_npy(const std::string& path, const ReadOptions& options = {});
Table read_npy_bytes(const std::string& bytes, const std::string& label, const ReadOptions& options = {});

// .npz (numpy.savez: stored entries; numpy.savez_compressed: deflate, decoded by zlib): the tables of entries x.npy and y.npy (features, targets). A
// missing entry is an error naming it and listing the entries present.
std::pair<Table, Table> read_npz_xy(const std::string& path, const ReadOptions& options = {});
std::pair<Table, Table> read_npz_xy_bytes(const std::string& bytes, const std::string& label,
                                          const ReadOptions& options = {});

// What a data file holds, from its first bytes (NumPy magic, ZIP magic) or else CSV;
// load_dataset reads a file once and parses it as what it holds.
enum class DataFormat { kCsv, kNpy, kNpz };

// Writes a CSV of rows x cols random values with a header row (benchmarks, tests), like
// the MNIST CSVs: cols - 1 pixel columns (about 80% zeros, else integers 1..255) and a
// class id 0..9 last. Throws DataError when the file cannot be written.
void write_synthetic_csv(const std::string& path, int64_t rows = 60000, int64_t cols = 785, uint64_t seed = 1);

}  // namespace dl::rt
