// NumPy .npy reader (format versions 1.0, 2.0, 3.0; see numpy.lib.format).
#include <cstring>
#include <string>

#include "converter/errors.h"
#include "runtime/data/io.h"
#include "runtime/data/npy_internal.h"
#include "runtime/data/table.h"

namespace dl::rt {
namespace {

struct NpyHeader {
  std::string descr;
  bool fortran = false;
  std::vector<int64_t> shape;
  size_t data_offset = 0;
};

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// Finds 'key': in the header dict and returns the position of its value.
size_t value_of(const std::string& h, const char* key, const std::string& label) {
  for (const char q : {'\'', '"'}) {
    const std::string k = std::string(1, q) + key + q;
    size_t at = h.find(k);
    if (at == std::string::npos) continue;
    at = h.find_first_not_of(" \t", at + k.size());
    if (at == std::string::npos || h[at] != ':') break;
    at = h.find_first_not_of(" \t", at + 1);
    if (at != std::string::npos) return at;
  }
  throw DataError(label + ": not a valid .npy file: the header has no '" + key + "'");
}

uint32_t read_le(const char* p, int bytes) {
  uint32_t v = 0;
  for (int k = bytes - 1; k >= 0; --k) v = (v << 8) | static_cast<unsigned char>(p[k]);
  return v;
}

NpyHeader parse_header(const char* data, size_t size, const std::string& label) {
  if (size < 10 || std::memcmp(data, "\x93NUMPY", 6) != 0)
    throw DataError(label + ": not a .npy file (no \\x93NUMPY magic at the start)");
  const int major = static_cast<unsigned char>(data[6]);
  if (major < 1 || major > 3) throw DataError(label + ": unsupported .npy format version " + std::to_string(major));
  const size_t prefix = major == 1 ? 10 : 12;
  if (size < prefix) throw DataError(label + ": truncated .npy header");
  const size_t len = read_le(data + 8, major == 1 ? 2 : 4);
  if (len > size - prefix) throw DataError(label + ": truncated .npy header");
  const std::string h(data + prefix, len);
  NpyHeader out;
  out.data_offset = prefix + len;

  size_t at = value_of(h, "descr", label);
  if (h[at] != '\'' && h[at] != '"')
    throw DataError(label + ": structured arrays (record dtypes) are not supported; save a plain numeric array");
  const size_t close = h.find(h[at], at + 1);
  if (close == std::string::npos) throw DataError(label + ": not a valid .npy file: bad 'descr'");
  out.descr = h.substr(at + 1, close - at - 1);

  at = value_of(h, "fortran_order", label);
  out.fortran = h.compare(at, 4, "True") == 0;
  if (!out.fortran && h.compare(at, 5, "False") != 0)
    throw DataError(label + ": not a valid .npy file: bad 'fortran_order'");

  at = value_of(h, "shape", label);
  if (h[at] != '(') throw DataError(label + ": not a valid .npy file: bad 'shape'");
  for (++at;;) {
    at = h.find_first_not_of(" \t,", at);
    if (at == std::string::npos) throw DataError(label + ": not a valid .npy file: bad 'shape'");
    if (h[at] == ')') break;
    if (h[at] < '0' || h[at] > '9') throw DataError(label + ": not a valid .npy file: bad 'shape'");
    int64_t d = 0;
    for (; at < h.size() && h[at] >= '0' && h[at] <= '9'; ++at) {
      if (d > (int64_t(1) << 50)) throw DataError(label + ": array dimension too large");
      d = d * 10 + (h[at] - '0');
    }
    if (h[at] == 'L') ++at;  // Python 2 longs
    out.shape.push_back(d);
  }
  return out;
}

template <typename T>
void convert(const char* src, int64_t n, float* dst) {
  for (int64_t k = 0; k < n; ++k) {
    T v;
    std::memcpy(&v, src + k * int64_t(sizeof(T)), sizeof(T));
    dst[k] = static_cast<float>(v);
  }
}

float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  int exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      bits = sign | uint32_t(exp + 112) << 23 | ((mant & 0x3ff) << 13);
    }
  } else {
    bits = sign | uint32_t(exp + 112) << 23 | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Converts n elements of dtype descr to float32; throws for dtypes we do not read.
void convert_dtype(const std::string& raw_descr, const char* src, int64_t n, float* dst, const std::string& label) {
  const std::string descr = data::quote_text(raw_descr.data(), raw_descr.data() + raw_descr.size());
  const char order = descr.empty() ? '?' : descr[0];
  const std::string kind = descr.size() > 1 ? descr.substr(1) : "";
  if (order == '>' && kind != "u1" && kind != "i1" && kind != "b1")
    throw DataError(
        label + ": big-endian arrays ('" + descr +
        "') are not supported; save a little-endian copy, e.g. np.save(path, a.astype(a.dtype.newbyteorder('<')))");
  if (order != '<' && order != '|' && order != '=' && order != '>')
    throw DataError(label + ": unsupported dtype '" + descr + "'");
  if (kind == "f4") return convert<float>(src, n, dst);
  if (kind == "f8") return convert<double>(src, n, dst);
  if (kind == "i8") return convert<int64_t>(src, n, dst);
  if (kind == "i4") return convert<int32_t>(src, n, dst);
  if (kind == "i2") return convert<int16_t>(src, n, dst);
  if (kind == "i1") return convert<int8_t>(src, n, dst);
  if (kind == "u8") return convert<uint64_t>(src, n, dst);
  if (kind == "u4") return convert<uint32_t>(src, n, dst);
  if (kind == "u2") return convert<uint16_t>(src, n, dst);
  if (kind == "u1") return convert<uint8_t>(src, n, dst);
  if (kind == "b1") {
    for (int64_t k = 0; k < n; ++k) dst[k] = src[k] != 0 ? 1.0f : 0.0f;
    return;
  }
  if (kind == "f2") {
    for (int64_t k = 0; k < n; ++k) dst[k] = half_to_float(static_cast<uint16_t>(read_le(src + 2 * k, 2)));
    return;
  }
  std::string what = "unsupported dtype '" + descr + "'";
  if (!kind.empty() && kind[0] == 'O') what = "object arrays (pickled Python objects) are not supported";
  if (!kind.empty() && (kind[0] == 'U' || kind[0] == 'S')) what = "string arrays ('" + descr + "') are not supported";
  throw DataError(label + ": " + what + "; save a numeric array (float32, float64, int or bool)");
}

int64_t item_size(const std::string& descr) {
  int64_t s = 0;
  for (size_t k = 2; k < descr.size() && descr[k] >= '0' && descr[k] <= '9' && s < 1000; ++k)
    s = s * 10 + (descr[k] - '0');
  return s;
}

// Reorders a Fortran-order (column-major) array into row-major order.
void fortran_to_c(const std::vector<int64_t>& shape, const float* in, float* out) {
  const size_t rank = shape.size();
  std::vector<int64_t> stride(rank, 1), idx(rank, 0);  // Fortran strides
  for (size_t k = 1; k < rank; ++k) stride[k] = stride[k - 1] * shape[k - 1];
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  int64_t off = 0;
  for (int64_t c = 0; c < n; ++c) {
    out[c] = in[off];
    for (size_t k = rank; k-- > 0;) {  // row-major odometer, last index fastest
      if (++idx[k] < shape[k]) {
        off += stride[k];
        break;
      }
      off -= stride[k] * (shape[k] - 1);
      idx[k] = 0;
    }
  }
}

}  // namespace

Table data::parse_npy(const char* data, size_t size, const std::string& label, const ReadOptions& options) {
  if (size == 0) throw DataError(label + ": file is empty");
  const NpyHeader h = parse_header(data, size, label);
  int64_t n = 1;
  for (int64_t d : h.shape)
    if (__builtin_mul_overflow(n, d, &n))
      throw DataError(label + ": array shape " + shape_text(h.shape) + " is too large");
  convert_dtype(h.descr, data, 0, nullptr, label);  // rejects unsupported dtypes before any work
  const int64_t item = item_size(h.descr);
  const std::string descr_text = data::quote_text(h.descr.data(), h.descr.data() + h.descr.size());
  Table t;
  t.source = label;
  t.rows = h.shape.empty() ? 1 : h.shape[0];
  t.cols = t.rows > 0 ? n / t.rows : 0;
  if (n == 0) throw DataError(label + ": the array is empty (shape " + shape_text(h.shape) + ")");
  // The declared size is checked against the bytes present before anything is
  // allocated: a 128-byte file may declare gigabytes.
  // n * item may exceed int64 (a shape just under 2^63 elements of 2-byte items).
  int64_t need = 0;
  const bool need_overflows = __builtin_mul_overflow(n, item, &need);
  if (item > 0 && (need_overflows || uint64_t(size - h.data_offset) < uint64_t(need)))
    throw DataError(label + ": truncated: the header declares shape " + shape_text(h.shape) + " of '" + descr_text +
                    "' (" + (need_overflows ? std::string("more than 2^63") : std::to_string(need)) +
                    " bytes of data) but only " + std::to_string(size - h.data_offset) + " bytes follow");
  data::check_budget(label, double(n) * sizeof(float) * (h.fortran ? 2 : 1) + double(t.rows) * sizeof(int64_t),
                     std::to_string(n) + " float32 values", options);
  std::vector<float> values(static_cast<size_t>(n));
  convert_dtype(h.descr, data + h.data_offset, n, values.data(), label);
  if (h.fortran && h.shape.size() > 1) {
    std::vector<float> c_order(values.size());
    fortran_to_c(h.shape, values.data(), c_order.data());
    values.swap(c_order);
  }
  t.values = std::move(values);
  t.line_of_row.resize(static_cast<size_t>(t.rows));
  for (int64_t r = 0; r < t.rows; ++r) t.line_of_row[r] = r;
  return t;
}

Table read_npy_bytes(const std::string& bytes, const std::string& label, const ReadOptions& options) {
  return data::parse_npy(bytes.data(), bytes.size(), label, options);
}

Table read_npy(const std::string& path, const ReadOptions& options) {
  data::FileBytes bytes(path, options.max_bytes);
  return data::parse_npy(bytes.data(), bytes.size(), path, options);
}

}  // namespace dl::rt
