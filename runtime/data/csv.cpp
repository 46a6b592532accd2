// CSV reader (contract, "CSV data"). Parses straight from the file's bytes (mapped, not
// copied) with fast_float; no per-line or per-field allocation on the data path.
#include <fast_float/fast_float.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <string>

#include "converter/errors.h"
#include "runtime/data/io.h"
#include "runtime/data/npy_internal.h"
#include "runtime/data/table.h"

namespace dl::rt {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t'; }

const char* skip_blanks(const char* p, const char* end) {
  while (p < end && is_blank(*p)) ++p;
  return p;
}

// The first c in [p, end), or end.
const char* find(const char* p, const char* end, char c) {
  if (p >= end) return end;
  const void* at = std::memchr(p, c, static_cast<size_t>(end - p));
  return at ? static_cast<const char*>(at) : end;
}

const char* trim_back(const char* begin, const char* end) {
  while (end > begin && is_blank(end[-1])) --end;
  return end;
}

// Parses all of [p, end) as one number (a leading '+' allowed, nan/inf accepted).
bool parse_number(const char* p, const char* end, float& value) {
  if (p < end && *p == '+' && end - p > 1 && p[1] != '-') ++p;
  const auto r = fast_float::from_chars(p, end, value);
  return r.ec == std::errc() && r.ptr == end;
}

class CsvParser {
 public:
  CsvParser(const char* data, size_t size, std::string label, const ReadOptions& options)
      : begin_(data), end_(data + size), options_(options) {
    table_.source = std::move(label);
    table_.csv_lines = true;
  }

  Table parse() {
    const char* p = begin_;
    if (end_ - p >= 3 && std::memcmp(p, "\xEF\xBB\xBF", 3) == 0) p += 3;
    if (p == end_) throw DataError(table_.source + ": file is empty");
    data::check_no_nul(p, size_t(end_ - p), table_.source);
    // Old Mac files end lines with a lone CR: with no LF anywhere, CR ends a line.
    if (!std::memchr(p, '\n', size_t(end_ - p)) && std::memchr(p, '\r', size_t(end_ - p))) eol_ = '\r';
    // Blank lines (and blanks) at the end are ignored: trim them off once.
    const char* end = end_;
    while (end > p && (is_blank(end[-1]) || end[-1] == '\n' || end[-1] == '\r')) --end;
    if (end == p) throw DataError(table_.source + ": no data rows");
    end_ = end;
    const int64_t max_rows = std::count(p, end_, eol_) + 1;

    const char* next = nullptr;
    const bool header = scan_first_row(p, &next);
    // Budget first, then allocate: a 1 GB line must be refused before it costs memory.
    const double header_bytes =
        header ? double(next ? next - p : end_ - p) + double(table_.cols) * sizeof(std::string) : 0;
    data::check_budget(
        table_.source,
        double(max_rows) * double(table_.cols) * sizeof(float) + double(max_rows) * sizeof(int64_t) + header_bytes,
        std::to_string(max_rows) + (max_rows == 1 ? " row x " : " rows x ") + std::to_string(table_.cols) +
            " float32 values",
        options_);
    try {
      table_.values.reserve(static_cast<size_t>(max_rows * table_.cols));
      table_.line_of_row.reserve(static_cast<size_t>(max_rows));
      if (header) read_header(p);
    } catch (const std::bad_alloc&) {
      throw ResourceError(table_.source + ": not enough memory for " + std::to_string(max_rows) + " rows x " +
                          std::to_string(table_.cols) + " float32 values");
    }
    int64_t line = header ? 2 : 1;
    for (p = header ? next : p; p != nullptr; ++line) p = data_row(p, line);
    if (table_.rows == 0) throw DataError(table_.source + ": no data rows (the file has only a header row)");
    return std::move(table_);
  }

 private:
  // The end of the line starting at p, without its '\r'; sets *next to the following
  // line (nullptr at the end of the input).
  const char* line_end(const char* p, const char** next) const {
    const char* nl = static_cast<const char*>(std::memchr(p, eol_, static_cast<size_t>(end_ - p)));
    *next = nl ? nl + 1 : nullptr;
    const char* le = nl ? nl : end_;
    if (le > p && le[-1] == '\r') --le;  // CRLF
    return le;
  }

  [[noreturn]] __attribute__((cold, noinline)) void fail(int64_t line, const char* line_start, const char* at,
                                                         const std::string& msg) const {
    // Character column: UTF-8 continuation bytes do not start a character.
    int64_t column = 1;
    for (const char* q = line_start; q < at; ++q) column += (static_cast<unsigned char>(*q) & 0xC0) != 0x80;
    throw DataError(table_.source + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + msg);
  }

  std::string field_name(int64_t field) const {
    std::string s = "field " + std::to_string(field + 1);
    if (static_cast<size_t>(field) < table_.header.size() && !table_.header[field].empty())
      s += ", '" +
           data::quote_text(table_.header[field].data(), table_.header[field].data() + table_.header[field].size()) +
           "'";
    return s;
  }

  // The end of the field starting at p (blanks skipped): the comma after it or the line end.
  // Sets *unterminated when a quoted field has no closing quote.
  static const char* field_end(const char* p, const char* le, bool* unterminated) {
    *unterminated = false;
    if (p < le && *p == '"') {
      for (const char* q = p + 1; q < le; ++q) {
        if (*q != '"') continue;
        if (q + 1 < le && q[1] == '"') {
          ++q;
          continue;
        }  // "" escapes a quote
        return find(q, le, ',');
      }
      *unterminated = true;
      return le;
    }
    return find(p, le, ',');
  }

  static int64_t count_fields(const char* p, const char* le) {
    int64_t n = 1;
    bool unterminated = false;
    for (;;) {
      p = field_end(skip_blanks(p, le), le, &unterminated);
      if (p >= le) return n;
      ++p;
      ++n;
    }
  }

  // The first row: sets cols and returns whether it is a header (any non-numeric field).
  // Only scans: nothing is allocated, however long the line.
  bool scan_first_row(const char* p, const char** next) {
    const char* le = line_end(p, next);
    if (skip_blanks(p, le) == le) fail(1, p, p, "empty row");
    bool header = false;
    for (const char* q = p;; q = q + 1) {
      const char* f = skip_blanks(q, le);
      const char* inner_begin = f;
      q = field_extent(f, le, 1, p, table_.cols, &inner_begin);
      const char* inner_end = trim_back(inner_begin, f < le && *f == '"' ? q_close_ : q);
      float v;
      if (inner_begin != inner_end && !parse_number(inner_begin, inner_end, v)) header = true;
      ++table_.cols;
      if (q >= le) break;
    }
    return header;
  }

  // The header row's names: quotes and surrounding blanks removed, "" unescaped.
  void read_header(const char* p) {
    const char* next = nullptr;
    const char* le = line_end(p, &next);
    for (const char* q = p;; q = q + 1) {
      const char* f = skip_blanks(q, le);
      const char* inner_begin = f;
      q = field_extent(f, le, 1, p, 0, &inner_begin);
      std::string name;
      if (f < le && *f == '"') {
        for (const char* c = f + 1; c < q_close_; ++c) {
          name += *c;
          if (*c == '"') ++c;  // "" -> "
        }
      } else {
        name.assign(f, trim_back(f, q));
      }
      table_.header.push_back(std::move(name));
      if (q >= le) break;
    }
  }

  // The end (comma or line end) of the field starting at f, checking its quotes. For a
  // quoted field, sets q_close_ to its closing quote and *inner to the text after the
  // opening quote and blanks.
  const char* field_extent(const char* f, const char* le, int64_t line, const char* p, int64_t field,
                           const char** inner) {
    bool unterminated = false;
    const char* fe = field_end(f, le, &unterminated);
    if (unterminated) fail(line, p, f, "unterminated quoted field");
    if (f < le && *f == '"') {
      const char* close = trim_back(f, fe) - 1;
      if (close <= f || *close != '"')
        fail(line, p, close, "text after a quoted field (field " + std::to_string(field + 1) + ")");
      q_close_ = close;
      *inner = skip_blanks(f + 1, close);
    }
    return fe;
  }

  // Parses one data row starting at p; returns the next line (nullptr at the end).
  const char* data_row(const char* p, int64_t line) {
    const char* next = nullptr;
    const char* le = line_end(p, &next);
    if (skip_blanks(p, le) == le) fail(line, p, p, "empty row");
    const char* q = p;
    for (int64_t field = 0;; ++field) {
      const char* f = skip_blanks(q, le);
      if (field == table_.cols) ragged(line, p, le, f);
      float v = 0;
      q = f < le && *f == '"' ? quoted_field(f, le, v, line, p, field) : plain_field(f, le, v, line, p, field);
      table_.values.push_back(v);
      if (q == le) {
        if (field + 1 < table_.cols) ragged(line, p, le, le);
        break;
      }
      ++q;  // past the comma
    }
    table_.line_of_row.push_back(line);
    ++table_.rows;
    return next;
  }

  // An unquoted number at f; returns the comma or line end after it.
  __attribute__((always_inline)) const char* plain_field(const char* f, const char* le, float& v, int64_t line,
                                                         const char* p, int64_t field) {
    if (f == le || *f == ',') fail(line, p, f, "empty field (" + field_name(field) + ")");
    // Fast path for small unsigned integers (pixel values, class ids): exact, since
    // converting a uint32 to float rounds just as parsing its decimal text does.
    uint32_t iv = 0;
    const char* d = f;
    while (d < le && d - f < 9 && static_cast<unsigned char>(*d - '0') < 10) iv = iv * 10 + uint32_t(*d++ - '0');
    if (d > f && (d == le || *d == ',')) {
      v = static_cast<float>(iv);
      return d;
    }
    const auto r = fast_float::from_chars(f + (*f == '+' && f + 1 < le && f[1] != '-'), le, v);
    const char* q = r.ec == std::errc() ? skip_blanks(r.ptr, le) : f;
    if (q == f || (q < le && *q != ',')) non_numeric(line, p, f, trim_back(f, find(f, le, ',')), field);
    return q;
  }

  [[noreturn]] void non_numeric(int64_t line, const char* p, const char* f, const char* fe, int64_t field) const {
    // Numbers separated by something else (np.savetxt's default is a space) get a hint.
    const bool other_separator = (static_cast<unsigned char>(*f - '0') < 10 || *f == '-' || *f == '.') &&
                                 std::find_if(f, fe, [](char c) { return c == ' ' || c == '\t' || c == ';'; }) != fe;
    fail(line, p, f,
         "non-numeric value \"" + data::quote_text(f, fe) + "\" (" + field_name(field) + ")" +
             (other_separator ? "; values must be separated by commas" : ""));
  }

  // A "quoted" number at f; returns the comma or line end after it.
  const char* quoted_field(const char* f, const char* le, float& v, int64_t line, const char* p, int64_t field) {
    const char* s = f + 1;
    const char* close = find(s, le, '"');
    if (close == le) fail(line, p, f, "unterminated quoted field");
    const char* a = skip_blanks(s, close);
    const char* b = trim_back(a, close);
    if (a == b) fail(line, p, f, "empty field (" + field_name(field) + ")");
    if (!parse_number(a, b, v))
      fail(line, p, f, "non-numeric value \"" + data::quote_text(a, b) + "\" (" + field_name(field) + ")");
    const char* q = skip_blanks(close + 1, le);
    if (q < le && *q != ',') fail(line, p, q, "text after a quoted field (" + field_name(field) + ")");
    return q;
  }

  [[noreturn]] void ragged(int64_t line, const char* p, const char* le, const char* at) const {
    const int64_t n = count_fields(p, le);
    fail(line, p, at,
         "row has " + std::to_string(n) + " field" + (n == 1 ? "" : "s") + ", expected " + std::to_string(table_.cols) +
             " (as in line 1)");
  }

  const char* begin_;
  const char* end_;
  ReadOptions options_;
  Table table_;
  const char* q_close_ = nullptr;  // closing quote of the last quoted field field_extent saw
  char eol_ = '\n';               // '\r' for a file with CR-only line endings
};

}  // namespace

Table data::parse_csv(const char* data, size_t size, const std::string& label, const ReadOptions& options) {
  if (size == 0) throw DataError(label + ": file is empty");
  return CsvParser(data, size, label, options).parse();
}

Table read_csv_text(const std::string& text, const std::string& label, const ReadOptions& options) {
  return data::parse_csv(text.data(), text.size(), label, options);
}

Table read_csv(const std::string& path, const ReadOptions& options) {
  data::FileBytes bytes(path, options.max_bytes);
  return data::parse_csv(bytes.data(), bytes.size(), path, options);
}

}  // namespace dl::rt
