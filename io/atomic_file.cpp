#include "io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "converter/errors.h"

namespace dl::io {
namespace {

// A name longer than this is cut in the temporary name, which must fit NAME_MAX (255).
constexpr size_t kMaxStemInTemp = 200;
constexpr int kNameAttempts = 32;

std::string kind_of(mode_t m) {
  if (S_ISLNK(m)) return "a symlink";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

void split(const std::string& path, std::string& dir, std::string& name) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) {
    dir = ".";
    name = path;
  } else {
    dir = slash == 0 ? "/" : path.substr(0, slash);
    name = path.substr(slash + 1);
  }
}

// Unique among processes (pid), threads and calls (counter), and unguessable (random):
// an attacker cannot plant the name in advance, and O_EXCL refuses it if they do.
std::string temp_name(const std::string& dir, const std::string& name) {
  static std::atomic<unsigned> counter{0};
  thread_local std::mt19937_64 rng{std::random_device{}() ^ (uint64_t(::getpid()) << 32)};
  char suffix[64];
  std::snprintf(suffix, sizeof suffix, ".%d-%u-%012llx.tmp", int(::getpid()), counter.fetch_add(1),
                static_cast<unsigned long long>(rng() & 0xffffffffffffULL));
  return (dir == "/" ? "" : dir) + "/" + name.substr(0, kMaxStemInTemp) + suffix;
}

}  // namespace

void refuse_non_regular_target(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    throw ConfigError(path + ": cannot write (" + std::strerror(errno) + ")");
  }
  if (!S_ISREG(st.st_mode)) throw ConfigError(path + ": cannot write: it is " + kind_of(st.st_mode) +
                                              ", not a regular file (refusing to replace it)");
}

AtomicFile::AtomicFile(const std::string& path) : path_(path) {
  if (path.empty()) throw ConfigError("cannot write a file with an empty name");
  std::string dir, name;
  split(path, dir, name);
  if (name.empty() || name == "." || name == "..") throw ConfigError(path + ": cannot write: it is a directory");
  refuse_non_regular_target(path);
  for (int attempt = 0; attempt < kNameAttempts; ++attempt) {
    tmp_ = temp_name(dir, name);
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd_ >= 0) return;
    if (errno != EEXIST) break;
  }
  const int err = errno;
  tmp_.clear();
  throw ConfigError(path + ": cannot write (" + std::strerror(err) + ")");
}

AtomicFile::~AtomicFile() {
  if (!committed_) discard();
}

void AtomicFile::discard() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  tmp_.clear();
}

void AtomicFile::fail(const std::string& reason) {
  discard();
  throw ConfigError(path_ + ": cannot write (" + reason + ")");
}

void AtomicFile::write(const char* data, size_t size) {
  if (fd_ < 0) throw ConfigError(path_ + ": cannot write (the file was already closed)");
  while (size > 0) {
    const ssize_t n = ::write(fd_, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(n < 0 ? std::strerror(errno) : "the system wrote nothing");
    data += n;
    size -= static_cast<size_t>(n);
  }
}

void AtomicFile::commit() {
  if (fd_ < 0) throw ConfigError(path_ + ": cannot write (the file was already closed)");
  if (::fsync(fd_) != 0) fail(std::strerror(errno));
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail(std::strerror(errno));  // NFS reports write errors here
  // Again just before the rename: something may have appeared at the target meanwhile
  // (a long training run), and rename() would replace a device or FIFO as readily as a file.
  try {
    refuse_non_regular_target(path_);
  } catch (...) {
    discard();
    throw;
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) fail(std::strerror(errno));
  committed_ = true;
  // Make the rename durable. Some file systems cannot fsync a directory (EINVAL); the
  // file is in place either way, so that is not an error.
  std::string dir, name;
  split(path_, dir, name);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  AtomicFile f(path);
  f.write(bytes);
  f.commit();
}

}  // namespace dl::io
