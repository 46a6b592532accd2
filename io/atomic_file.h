// Writing an output file so that no reader, no concurrent writer and no crash ever sees
// a torn file, and so that nothing but a regular file at the target is ever replaced.
// The one implementation behind --report, --trace, --save, --export-fixed, convert -o
// and the batch summaries.
//
// Contract of AtomicFile(path):
//  - The target must be absent or a regular file. A symlink, directory, device, FIFO or
//    socket at `path` is refused (ConfigError "PATH: cannot write: it is a symlink"...),
//    both when the file is opened and again just before the rename.
//  - The bytes go to a new temporary file in the target's directory with a unique name,
//    "NAME.<pid>-<random>.tmp", created with O_CREAT|O_EXCL|O_NOFOLLOW (a planted file
//    or symlink with that name is never opened, let alone truncated) and mode 0666
//    minus the umask. commit() fsyncs it, renames it over `path` and fsyncs the
//    directory, so after commit() the new file survives a crash.
//  - A temporary file is removed on every error path and by the destructor when commit()
//    was not reached (an exception, or the caller gave up). Only SIGKILL or a crash can
//    leave a stray "*.tmp" behind; the target itself is then the old file or absent.
//  - Concurrent writers of one path each write their own temporary file; the last rename
//    wins and the file is always one writer's complete output.
//  - Every failure throws dl::ConfigError "PATH: cannot write (REASON)" naming the path
//    and the system's reason (e.g. "No space left on device").
#pragma once

#include <cstddef>
#include <string>

namespace dl::io {

class AtomicFile {
 public:
  explicit AtomicFile(const std::string& path);  // creates the temporary file
  ~AtomicFile();                                  // removes it unless committed
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const char* data, size_t size);
  void write(const std::string& s) { write(s.data(), s.size()); }
  // The temporary file's descriptor, for serializers that write to one (protobuf).
  // Call fail_if(...) with their result so errors name the path.
  int fd() const { return fd_; }
  [[noreturn]] void fail(const std::string& reason);
  void commit();  // fsync, rename over the target, fsync the directory

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return tmp_; }

 private:
  void discard() noexcept;
  std::string path_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

// The usual case: the whole text at once.
void write_file_atomically(const std::string& path, const std::string& bytes);

// Throws ConfigError "PATH: cannot write: it is a ..." when something other than a
// regular file exists at `path` (lstat: a symlink is refused, not followed).
void refuse_non_regular_target(const std::string& path);

}  // namespace dl::io
