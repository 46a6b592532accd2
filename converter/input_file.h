// Reading a whole input file (model, data, trace, manifest) under a memory cap, and
// quoting bytes from such a file in a message. Header-only because every library reads
// input files and analysis/ links no other library; errors.h is shared the same way.
//
// Why a cap: a pipe, a FIFO or /dev/zero has no size, so "read until the end" is
// "read until memory runs out" for a stream that never ends; and a regular file's size
// is checked before anything is allocated. Buffers grow only as bytes arrive.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <string>

#include "converter/errors.h"

namespace dl::input {

// Caps of the readers when the user sets none (--max-memory sets the model's and data's).
constexpr int64_t kDefaultMaxTraceBytes = int64_t(8) << 30;
constexpr int64_t kDefaultMaxJsonBytes = int64_t(256) << 20;  // parsed JSON costs ~10x its text

// Bytes for a message: "512 bytes", "1.5 MB", "8.0 GB" (powers of 1024, as memory is counted).
inline std::string byte_text(double bytes) {
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

// The length of the valid UTF-8 character at p (1-4), or 0 when p starts no valid one
// (stray continuation byte, overlong form, surrogate, past U+10FFFF, cut off at end).
inline int utf8_length(const unsigned char* p, const unsigned char* end) {
  const unsigned c = p[0];
  if (c < 0x80) return 1;
  int n = 0;
  unsigned lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (end - p < n || p[1] < lo || p[1] > hi) return 0;
  for (int k = 2; k < n; ++k)
    if ((p[k] & 0xC0) != 0x80) return 0;
  return n;
}

// Text from an input file made safe to print: control characters and bytes that are not
// valid UTF-8 become \xNN, so a message never carries raw binary or terminal escapes.
// At most max_chars characters, then "..." when cut (0: no limit).
inline std::string escape_bytes(const char* begin, const char* end, size_t max_chars = 0) {
  std::string out;
  const auto* p = reinterpret_cast<const unsigned char*>(begin);
  const auto* e = reinterpret_cast<const unsigned char*>(end);
  for (size_t chars = 0; p < e; ++chars) {
    if (max_chars > 0 && chars == max_chars) {
      out += "...";
      break;
    }
    const int n = utf8_length(p, e);
    if (n == 0 || *p < 0x20 || *p == 0x7f || (n == 2 && p[0] == 0xC2 && p[1] < 0xA0)) {  // C0, DEL, C1
      const int bytes = n == 0 ? 1 : n;
      for (int k = 0; k < bytes; ++k) {
        char esc[8];
        std::snprintf(esc, sizeof esc, "\\x%02x", p[k]);
        out += esc;
      }
      p += bytes;
      continue;
    }
    out.append(reinterpret_cast<const char*>(p), size_t(n));
    p += n;
  }
  return out;
}
inline std::string escape_bytes(const std::string& s, size_t max_chars = 0) {
  return escape_bytes(s.data(), s.data() + s.size(), max_chars);
}

enum class ReadStep { kOpen, kRead };

// Reads the file at path whole: a regular file, or a stream (pipe, FIFO, /dev/stdin,
// process substitution, character device) read once to its end. A file or stream of
// more than max_bytes throws ResourceError "PATH: ... larger than LIMIT" (limit_text,
// e.g. "the limit of 4.0 GB"), having allocated at most about max_bytes.
// fail(step, errno) reports an open or read error (a directory is kRead, EISDIR) and
// must throw. first(bytes) sees the first 64 KiB (or the whole file, if shorter) of a
// stream before the rest is read, so that it can refuse a stream of the wrong kind
// (binary data where text belongs) at once; it may throw.
template <class Fail, class First>
std::string read_whole_file(const std::string& path, int64_t max_bytes, const std::string& limit_text, Fail&& fail,
                            First&& first) {
  auto failed = [&](ReadStep step, int err) {
    fail(step, err);
    throw InternalError(path + ": the read error handler did not throw");
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) failed(ReadStep::kOpen, errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) failed(ReadStep::kOpen, errno);
  if (S_ISDIR(st.st_mode)) failed(ReadStep::kRead, EISDIR);
  const bool regular = S_ISREG(st.st_mode);
  if (regular && max_bytes > 0 && st.st_size > max_bytes)
    throw ResourceError(path + ": the file is " + byte_text(double(st.st_size)) + ", over " + limit_text);
  // A regular file's size is known (one byte more shows that it ended there); a stream's
  // buffer starts at 64 KiB and at most doubles, never past the cap.
  const size_t chunk = size_t(1) << 16;
  const size_t cap = max_bytes > 0 ? size_t(max_bytes) : SIZE_MAX - 1;
  std::string bytes;
  bytes.resize(std::min(regular ? size_t(st.st_size) + 1 : chunk, cap + 1));
  size_t done = 0;
  bool first_seen = regular;
  for (;;) {
    if (done == bytes.size()) {
      if (done > cap)
        throw ResourceError(path + ": stopped reading after " + byte_text(double(cap)) + ": the input " +
                            (regular ? "grew past " : "does not end within ") + limit_text);
      bytes.resize(std::min(bytes.size() * 2, cap + 1));
    }
    const ssize_t n = ::read(fd, &bytes[done], bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) failed(ReadStep::kRead, errno);
    if (n == 0) break;
    done += size_t(n);
    if (!first_seen && done >= chunk) {
      first_seen = true;
      first(std::string(bytes.data(), chunk));
    }
  }
  bytes.resize(done);
  if (!first_seen) first(bytes);
  return bytes;
}

template <class Fail>
std::string read_whole_file(const std::string& path, int64_t max_bytes, const std::string& limit_text, Fail&& fail) {
  return read_whole_file(path, max_bytes, limit_text, fail, [](const std::string&) {});
}

}  // namespace dl::input
