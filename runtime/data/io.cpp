#include "runtime/data/io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "converter/errors.h"

namespace dl::rt::data {

FileBytes::FileBytes(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw DataError(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    const int err = S_ISDIR(st.st_mode) ? EISDIR : errno;
    ::close(fd);
    throw DataError(path + ": cannot open: " + std::strerror(err));
  }
  if (S_ISREG(st.st_mode) && st.st_size > 0) {
    void* map = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (map != MAP_FAILED) {
      ::madvise(map, static_cast<size_t>(st.st_size), MADV_SEQUENTIAL);
      map_ = map;
      data_ = static_cast<const char*>(map);
      size_ = static_cast<size_t>(st.st_size);
      ::close(fd);
      return;
    }
  }
  // Pipes, /dev/stdin, and file systems without mmap: read it all.
  char buf[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const int err = errno;
      ::close(fd);
      throw DataError(path + ": cannot read: " + std::strerror(err));
    }
    if (got == 0) break;
    copy_.append(buf, static_cast<size_t>(got));
  }
  ::close(fd);
  data_ = copy_.data();
  size_ = copy_.size();
  if (size_ == 0) throw DataError(path + ": file is empty");
}

FileBytes::~FileBytes() {
  if (map_) ::munmap(map_, size_);
}

std::string human_bytes(double bytes) {
  const char* units[] = {"bytes", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char out[32];
  std::snprintf(out, sizeof out, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return out;
}

void check_budget(const std::string& source, double needed, const std::string& what, const ReadOptions& options) {
  if (options.max_bytes <= 0 || needed <= double(options.max_bytes)) return;
  throw ResourceError(source + ": loading needs about " + human_bytes(needed) + " of memory (" + what +
                      "), over the limit of " + human_bytes(double(options.max_bytes)));
}

std::string quote_text(const char* begin, const char* end) {
  std::string out;
  const char* p = begin;
  for (int chars = 0; p < end; ++p) {
    const unsigned char c = static_cast<unsigned char>(*p);
    const bool continuation = (c & 0xC0) == 0x80;  // inside a UTF-8 character
    if (!continuation && chars++ == 40) break;
    if (c < 0x20 || c == 0x7f) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\x%02x", c);
      out += esc;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (p < end) out += "...";
  return out;
}

}  // namespace dl::rt::data
