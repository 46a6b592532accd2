#include "runtime/data/io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "converter/errors.h"
#include "converter/input_file.h"

namespace dl::rt::data {

FileBytes::FileBytes(const std::string& path, int64_t max_bytes) {
  auto fail = [&](input::ReadStep step, int err) {
    const bool opening = step == input::ReadStep::kOpen || err == EISDIR;
    throw DataError(path + (opening ? ": cannot open: " : ": cannot read: ") + std::strerror(err));
  };
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(input::ReadStep::kOpen, errno);
    struct stat now {};
    void* map = MAP_FAILED;
    if (::fstat(fd, &now) == 0 && S_ISREG(now.st_mode) && now.st_size > 0)
      map = ::mmap(nullptr, static_cast<size_t>(now.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (map != MAP_FAILED) {
      ::madvise(map, static_cast<size_t>(now.st_size), MADV_SEQUENTIAL);
      map_ = map;
      data_ = static_cast<const char*>(map);
      size_ = static_cast<size_t>(now.st_size);
      return;
    }
  }
  // Streams, and file systems without mmap: read once, under the cap.
  copy_ = input::read_whole_file(path, max_bytes, "the limit of " + human_bytes(double(max_bytes)), fail,
                                 [&](const std::string& start) {
                                   if (sniff_format(start.data(), start.size()) == DataFormat::kCsv)
                                     check_no_nul(start.data(), start.size(), path);
                                 });
  data_ = copy_.data();
  size_ = copy_.size();
  if (size_ == 0) throw DataError(path + ": file is empty");
}

FileBytes::~FileBytes() {
  if (map_) ::munmap(map_, size_);
}

std::string human_bytes(double bytes) { return input::byte_text(bytes); }

void check_budget(const std::string& source, double needed, const std::string& what, const ReadOptions& options) {
  if (options.max_bytes <= 0 || needed <= double(options.max_bytes)) return;
  throw ResourceError(source + ": loading needs about " + human_bytes(needed) + " of memory (" + what +
                      "), over the limit of " + human_bytes(double(options.max_bytes)));
}

std::string quote_text(const char* begin, const char* end) { return input::escape_bytes(begin, end, 40); }

DataFormat sniff_format(const char* data, size_t size) {
  if (size >= 6 && std::memcmp(data, "\x93NUMPY", 6) == 0) return DataFormat::kNpy;
  if (size >= 4 && std::memcmp(data, "PK\x03\x04", 4) == 0) return DataFormat::kNpz;
  if (size >= 4 && std::memcmp(data, "PK\x05\x06", 4) == 0) return DataFormat::kNpz;  // empty ZIP
  return DataFormat::kCsv;
}

void check_no_nul(const char* data, size_t size, const std::string& label) {
  const char* nul = static_cast<const char*>(std::memchr(data, '\0', size));
  if (!nul) return;
  // Excel's "Unicode text" is UTF-16: every other byte of ASCII is NUL.
  if (size >= 2 && (std::memcmp(data, "\xff\xfe", 2) == 0 || std::memcmp(data, "\xfe\xff", 2) == 0))
    throw DataError(label + ": UTF-16 text (it starts with a UTF-16 byte-order mark); save the file as UTF-8");
  int64_t line = 1;
  const char* line_start = data;
  for (const char* p = data; p < nul; ++p) {
    if (*p == '\n' || (*p == '\r' && (p + 1 == nul || p[1] != '\n'))) {
      ++line;
      line_start = p + 1;
    }
  }
  int64_t column = 1;
  for (const char* q = line_start; q < nul; ++q) column += (static_cast<unsigned char>(*q) & 0xC0) != 0x80;
  throw DataError(label + ":" + std::to_string(line) + ":" + std::to_string(column) +
                  ": a NUL byte: this is binary data, not CSV text");
}

}  // namespace dl::rt::data
