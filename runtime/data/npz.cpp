// NumPy .npz reader: a ZIP archive of .npy entries (numpy.savez stores them,
// numpy.savez_compressed deflates them). Reads the central directory, including the
// ZIP64 records numpy writes for large arrays.
#include <cstring>
#include <string>
#include <vector>

#include "converter/errors.h"
#include "runtime/data/io.h"
#include "runtime/data/npy_internal.h"
#include "runtime/data/table.h"

namespace dl::rt {
namespace {

struct Entry {
  std::string name;
  uint16_t flags = 0, method = 0;
  uint32_t crc = 0;
  uint64_t csize = 0, usize = 0, offset = 0;
};

class Zip {
 public:
  Zip(const char* data, size_t size, std::string label)
      : p_(reinterpret_cast<const unsigned char*>(data)), size_(size), label_(std::move(label)) {}

  std::vector<Entry> entries() const {
    if (size_ == 0) throw DataError(label_ + ": file is empty");
    if (size_ < 22 || std::memcmp(p_, "PK", 2) != 0)
      throw DataError(
          label_ +
          ": not a .npz file (not a ZIP archive); save the arrays with numpy.savez(path, x=features, y=targets)");
    // The end-of-central-directory record is last, followed by a comment of up to 64 KiB.
    size_t eocd = size_ - 22;
    for (;; --eocd) {
      if (u32(eocd) == 0x06054b50) break;
      if (eocd == 0 || size_ - eocd > 22 + 65535) bad("no end of central directory");
    }
    uint64_t count = u16(eocd + 10), cd = u32(eocd + 16);
    if ((count == 0xffff || cd == 0xffffffff) && eocd >= 20 && u32(eocd - 20) == 0x07064b50) {
      const uint64_t z = u64(eocd - 20 + 8);  // the ZIP64 end-of-central-directory record
      if (u32(z) != 0x06064b50) bad("bad ZIP64 record");
      count = u64(z + 32);
      cd = u64(z + 48);
    }
    std::vector<Entry> out;
    for (uint64_t k = 0, at = cd; k < count; ++k) {
      if (u32(at) != 0x02014b50) bad("bad central directory entry");
      Entry e;
      e.flags = u16(at + 8);
      e.method = u16(at + 10);
      e.crc = u32(at + 16);
      e.csize = u32(at + 20);
      e.usize = u32(at + 24);
      const size_t name_len = u16(at + 28), extra_len = u16(at + 30), comment_len = u16(at + 32);
      e.offset = u32(at + 42);
      need(at + 46, name_len + extra_len);
      e.name.assign(reinterpret_cast<const char*>(p_ + at + 46), name_len);
      // ZIP64 extra field: the 64-bit values of the fields saturated at 0xffffffff.
      for (size_t x = at + 46 + name_len, xend = x + extra_len; x + 4 <= xend;) {
        const uint16_t id = u16(x), len = u16(x + 2);
        size_t v = x + 4;
        if (id == 0x0001) {
          if (e.usize == 0xffffffff) e.usize = u64(v), v += 8;
          if (e.csize == 0xffffffff) e.csize = u64(v), v += 8;
          if (e.offset == 0xffffffff) e.offset = u64(v);
        }
        x += 4 + size_t(len);
      }
      out.push_back(std::move(e));
      at += 46 + name_len + extra_len + comment_len;
    }
    return out;
  }

  // The uncompressed bytes of an entry: a view for stored entries, else inflated into buf.
  std::pair<const char*, size_t> contents(const Entry& e, std::string& buf) const {
    const std::string where = label_ + "[" + e.name + "]";
    if (e.flags & 1) throw DataError(where + ": encrypted ZIP entries are not supported");
    if (u32(e.offset) != 0x04034b50) bad("bad local header for " + e.name);
    const uint64_t data = e.offset + 30 + u16(e.offset + 26) + u16(e.offset + 28);
    need(data, e.csize);
    const unsigned char* src = p_ + data;
    const char* bytes;
    size_t n;
    if (e.method == 0) {
      if (e.csize != e.usize) bad("stored entry " + e.name + " has two sizes");
      bytes = reinterpret_cast<const char*>(src);
      n = e.csize;
    } else if (e.method == 8) {
      buf = data::inflate(src, e.csize, e.usize, where);
      bytes = buf.data();
      n = buf.size();
    } else {
      throw DataError(where + ": unsupported ZIP compression method " + std::to_string(e.method) +
                      "; save with numpy.savez or numpy.savez_compressed");
    }
    if (data::crc32(reinterpret_cast<const unsigned char*>(bytes), n) != e.crc)
      throw DataError(where + ": CRC mismatch: the entry is corrupt");
    return {bytes, n};
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    throw DataError(label_ + ": not a valid .npz (ZIP) file: " + what);
  }
  void need(uint64_t at, uint64_t n) const {
    if (at > size_ || n > size_ - at) bad("truncated");
  }
  uint64_t le(uint64_t at, int bytes) const {
    need(at, uint64_t(bytes));
    uint64_t v = 0;
    for (int k = bytes - 1; k >= 0; --k) v = (v << 8) | p_[at + uint64_t(k)];
    return v;
  }
  uint16_t u16(uint64_t at) const { return static_cast<uint16_t>(le(at, 2)); }
  uint32_t u32(uint64_t at) const { return static_cast<uint32_t>(le(at, 4)); }
  uint64_t u64(uint64_t at) const { return le(at, 8); }

  const unsigned char* p_;
  size_t size_;
  std::string label_;
};

std::pair<Table, Table> npz_xy(const char* data, size_t size, const std::string& label, const ReadOptions& options) {
  const Zip zip(data, size, label);
  const std::vector<Entry> entries = zip.entries();
  const Entry* found[2] = {nullptr, nullptr};
  const char* names[2] = {"x.npy", "y.npy"};
  for (const Entry& e : entries)
    for (int k = 0; k < 2; ++k)
      if (e.name == names[k]) found[k] = &e;
  for (int k = 0; k < 2; ++k) {
    if (found[k]) continue;
    std::string present;
    for (const Entry& e : entries) present += (present.empty() ? "" : ", ") + e.name;
    throw DataError(label + ": has no entry '" + names[k] + "' (entries: " + (present.empty() ? "none" : present) +
                    "); save the arrays with numpy.savez(path, x=features, y=targets)");
  }
  double inflated = 0;
  for (const Entry* e : found) inflated += e->method == 0 ? 0.0 : double(e->usize);
  data::check_budget(label, inflated, "decompressing x.npy and y.npy", options);
  std::string buf;
  auto xb = zip.contents(*found[0], buf);
  Table x = data::parse_npy(xb.first, xb.second, label + "[x.npy]", options);
  auto yb = zip.contents(*found[1], buf);
  Table y = data::parse_npy(yb.first, yb.second, label + "[y.npy]", options);
  return {std::move(x), std::move(y)};
}

}  // namespace

std::pair<Table, Table> read_npz_xy_bytes(const std::string& bytes, const std::string& label,
                                          const ReadOptions& options) {
  return npz_xy(bytes.data(), bytes.size(), label, options);
}

std::pair<Table, Table> read_npz_xy(const std::string& path, const ReadOptions& options) {
  data::FileBytes bytes(path);
  return npz_xy(bytes.data(), bytes.size(), path, options);
}

DataFormat sniff_data_format(const std::string& path) {
  data::FileBytes bytes(path);
  if (bytes.size() >= 6 && std::memcmp(bytes.data(), "\x93NUMPY", 6) == 0) return DataFormat::kNpy;
  if (bytes.size() >= 4 && std::memcmp(bytes.data(), "PK\x03\x04", 4) == 0) return DataFormat::kNpz;
  if (bytes.size() >= 4 && std::memcmp(bytes.data(), "PK\x05\x06", 4) == 0) return DataFormat::kNpz;  // empty ZIP
  return DataFormat::kCsv;
}

}  // namespace dl::rt
