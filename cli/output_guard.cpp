#include "cli/output_guard.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>

#include "converter/errors.h"

namespace dl::cli {
namespace {

// What a path refers to: an existing file (device and inode), or a name not yet present
// in an existing directory (the directory's device and inode, and the name).
struct Identity {
  dev_t dev = 0;
  ino_t ino = 0;
  std::string name;
  bool operator==(const Identity& o) const { return dev == o.dev && ino == o.ino && name == o.name; }
};

std::string kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

std::string dir_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

[[noreturn]] void refuse(const OutputPath& o, const std::string& why) {
  throw ConfigError(o.option + " " + o.path + ": " + why);
}

// Checks that `o` may be written and returns what it names.
Identity output_identity(const OutputPath& o) {
  struct stat st;
  if (::lstat(o.path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      char target[PATH_MAX];
      const ssize_t n = ::readlink(o.path.c_str(), target, sizeof target - 1);
      const std::string to = n > 0 ? std::string(target, static_cast<size_t>(n)) : "?";
      refuse(o, "it is a symlink (to " + to + "); outputs never write through or replace a symlink "
                "(give the path of the file itself)");
    }
    if (!S_ISREG(st.st_mode))
      refuse(o, "it is " + kind_of(st.st_mode) + "; outputs only ever replace regular files" +
                    (o.stream_ok ? " (write to standard output with -)" : ""));
    return {st.st_dev, st.st_ino, ""};
  }
  if (errno != ENOENT) refuse(o, std::string("cannot use this path (") + std::strerror(errno) + ")");
  const std::string dir = dir_of(o.path);
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    refuse(o, "the directory " + dir + " does not exist");
  if (::access(dir.c_str(), W_OK | X_OK) != 0) refuse(o, "the directory " + dir + " is not writable");
  return {st.st_dev, st.st_ino, base_of(o.path)};
}

std::optional<Identity> input_identity(const std::string& path) {
  struct stat st;
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return std::nullopt;  // reading it reports the problem
  return Identity{st.st_dev, st.st_ino, ""};
}

}  // namespace

int stream_target_fd(const std::string& path) {
  if (path == "-" || path == "/dev/stdout") return 1;
  if (path == "/dev/stderr") return 2;
  return -1;
}

void check_outputs(const std::vector<InputPath>& inputs, const std::vector<OutputPath>& outputs, bool force) {
  std::vector<std::pair<const InputPath*, Identity>> in;
  for (const InputPath& i : inputs)
    if (auto id = input_identity(i.path)) in.emplace_back(&i, *id);
  std::vector<std::pair<const OutputPath*, Identity>> seen;
  for (const OutputPath& o : outputs) {
    if (o.path.empty()) continue;
    Identity id;
    if (const int fd = stream_target_fd(o.path); fd >= 0) {
      if (!o.stream_ok)
        refuse(o, "this output is a binary file and cannot be written to a stream; give a file name");
      id.name = fd == 1 ? "<stdout>" : "<stderr>";
    } else {
      id = output_identity(o);
    }
    if (force) continue;
    for (const auto& [input, other] : in)
      if (other == id)
        refuse(o, "it is the same file as " + input->what + " " + input->path +
                      "; refusing to overwrite an input (give another path, or --force to overwrite it)");
    for (const auto& [output, other] : seen)
      if (other == id)
        throw ConfigError(output->option + " " + output->path + " and " + o.option + " " + o.path +
                          " are the same file; one would overwrite the other (give different paths, or --force)");
    seen.emplace_back(&o, id);
  }
}

}  // namespace dl::cli
