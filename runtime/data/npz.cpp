// NumPy .npz reader: a ZIP archive of .npy entries (numpy.savez stores them,
// numpy.savez_compressed deflates them). Reads the central directory, including the
// ZIP64 records numpy writes for large arrays.
#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "converter/errors.h"
#include "converter/input_file.h"
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

// ZIP's CRC-32 (zlib's), over any size.
uint32_t crc32_of(const char* data, size_t size) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (size_t at = 0; at < size;) {
    const uInt n = static_cast<uInt>(std::min<size_t>(size - at, UINT_MAX));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data + at), n);
    at += n;
  }
  return static_cast<uint32_t>(crc);
}

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
      zip64_sizes(e, at + 46 + name_len, extra_len);
      out.push_back(std::move(e));
      at += 46 + name_len + extra_len + comment_len;
    }
    return out;
  }

  // Refuses an entry whose declared size its compressed bytes cannot hold, before
  // anything is allocated for it.
  void check_sizes(const Entry& e) const {
    const std::string name = input::escape_bytes(e.name, 80);
    if (e.method == 0 && e.csize != e.usize)
      bad("stored entry " + name + " declares " + std::to_string(e.usize) + " bytes uncompressed but " +
          std::to_string(e.csize) + " stored");
    if (e.method == 8 && e.usize / data::kMaxDeflateRatio > e.csize)
      bad("entry " + name + " declares " + std::to_string(e.usize) + " bytes uncompressed from " +
          std::to_string(e.csize) + " compressed, more than DEFLATE can expand (" +
          std::to_string(data::kMaxDeflateRatio) + ":1): a corrupt entry or a ZIP bomb");
    need(e.offset, 30);
    need(e.offset + 30 + u16(e.offset + 26) + u16(e.offset + 28), e.csize);
  }

  // The uncompressed bytes of an entry: a view for stored entries, else inflated into buf.
  std::pair<const char*, size_t> contents(const Entry& e, std::string& buf) const {
    const std::string where = label_ + "[" + input::escape_bytes(e.name, 80) + "]";
    if (e.flags & 1) throw DataError(where + ": encrypted ZIP entries are not supported");
    if (u32(e.offset) != 0x04034b50) bad("bad local header for " + input::escape_bytes(e.name, 80));
    const uint64_t data = e.offset + 30 + u16(e.offset + 26) + u16(e.offset + 28);
    need(data, e.csize);
    const unsigned char* src = p_ + data;
    const char* bytes;
    size_t n;
    check_sizes(e);
    if (e.method == 0) {
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
    if (crc32_of(bytes, n) != e.crc)
      throw DataError(where + ": CRC mismatch: the entry is corrupt");
    return {bytes, n};
  }

 private:
  // The ZIP64 extra field (id 1) of the central directory entry: the 64-bit values of
  // the fields saturated at 0xffffffff, in this order, as many as are saturated.
  void zip64_sizes(Entry& e, uint64_t x, uint64_t extra_len) const {
    const std::string name = input::escape_bytes(e.name, 80);
    bool found = false;
    for (const uint64_t xend = x + extra_len; x + 4 <= xend;) {
      const uint16_t id = u16(x), len = u16(x + 2);
      if (x + 4 + len > xend)
        bad("entry " + name + ": extra field " + std::to_string(id) + " declares " + std::to_string(len) +
            " bytes but only " + std::to_string(xend - x - 4) + " remain in the entry's extra data");
      if (id == 0x0001) {
        found = true;
        uint64_t v = x + 4;
        const uint64_t vend = v + len;
        for (uint64_t* field : {&e.usize, &e.csize, &e.offset}) {
          if (*field != 0xffffffff) continue;
          if (v + 8 > vend)
            bad("entry " + name + ": truncated ZIP64 extra field (" + std::to_string(len) +
                " bytes, too short for the 64-bit sizes and offset its entry defers to it)");
          *field = u64(v);
          v += 8;
        }
      }
      x += 4 + uint64_t(len);
    }
    if (!found && (e.usize == 0xffffffff || e.csize == 0xffffffff || e.offset == 0xffffffff))
      bad("entry " + name + " defers its sizes to a ZIP64 extra field but has none");
  }

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

}  // namespace

std::pair<Table, Table> data::parse_npz_xy(const char* data, size_t size, const std::string& label,
                                           const ReadOptions& options) {
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
    for (const Entry& e : entries) present += (present.empty() ? "" : ", ") + input::escape_bytes(e.name, 80);
    throw DataError(label + ": has no entry '" + names[k] + "' (entries: " + (present.empty() ? "none" : present) +
                    "); save the arrays with numpy.savez(path, x=features, y=targets)");
  }
  for (const Entry* e : found) zip.check_sizes(*e);
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

std::pair<Table, Table> read_npz_xy_bytes(const std::string& bytes, const std::string& label,
                                          const ReadOptions& options) {
  return data::parse_npz_xy(bytes.data(), bytes.size(), label, options);
}

std::pair<Table, Table> read_npz_xy(const std::string& path, const ReadOptions& options) {
  data::FileBytes bytes(path, options.max_bytes);
  return data::parse_npz_xy(bytes.data(), bytes.size(), path, options);
}

}  // namespace dl::rt
