// Internal helpers of the data readers: file access and size messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/data/table.h"

namespace dl::rt::data {

// The bytes of a file, memory-mapped when it is a regular file (no copy: a 1 GB CSV costs
// address space, not heap), else (a pipe, FIFO, /dev/stdin, a device) read once into
// memory, at most max_bytes (0: no cap) else ResourceError. A stream that starts with
// neither NumPy nor ZIP magic and holds a NUL byte is refused as binary after its first
// 64 KiB, not read on (/dev/zero, /dev/urandom). Throws DataError "path: cannot open:
// ..." and "path: file is empty".
class FileBytes {
 public:
  FileBytes(const std::string& path, int64_t max_bytes);
  ~FileBytes();
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;
  const char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const char* data_ = nullptr;
  size_t size_ = 0;
  void* map_ = nullptr;
  std::string copy_;
};

// "1.5 MB", "245.3 MB", "1.2 GB" (powers of 1024, as memory is counted).
std::string human_bytes(double bytes);

// Throws ResourceError "source: loading needs about N of memory (what), over the limit
// of M" when options.max_bytes is set and needed exceeds it.
void check_budget(const std::string& source, double needed, const std::string& what, const ReadOptions& options);

// Text for a message: at most 40 characters, control characters and bytes that are not
// valid UTF-8 as \xNN, "..." when cut.
std::string quote_text(const char* begin, const char* end);

// What a data file holds, from its first bytes (NumPy magic, ZIP magic) or else CSV.
DataFormat sniff_format(const char* data, size_t size);

// Throws DataError "label:LINE:COLUMN: a NUL byte: binary data, not CSV text" for the
// first NUL byte in [data, data + size); line and column count from data.
void check_no_nul(const char* data, size_t size, const std::string& label);

}  // namespace dl::rt::data
