// Internal helpers of the data readers: file access and size messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/data/table.h"

namespace dl::rt::data {

// The bytes of a file, memory-mapped when possible (no copy: a 1 GB CSV costs address
// space, not heap), else read into memory. Throws DataError "path: cannot open: ..." and
// "path: file is empty".
class FileBytes {
 public:
  explicit FileBytes(const std::string& path);
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

// Text for a message: at most 40 characters, non-printable bytes as \xNN, "..." when cut.
std::string quote_text(const char* begin, const char* end);

}  // namespace dl::rt::data
