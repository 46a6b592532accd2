// The check every command runs on its output paths before it starts work (fail fast,
// exit 2): no output may destroy something.
//
// check_outputs() refuses (ConfigError naming the option and the paths):
//  - an output path where a symlink, directory, device, FIFO or socket exists: such a
//    target is never replaced nor written through, --force or not (give the real path);
//  - an output whose directory does not exist or is not writable;
//  - an output that is the same file as an input (same device and inode: hard links and
//    other spellings of one path count, and symlinked inputs are followed) or as another
//    output (existing: device and inode; not yet existing: the same name in the same
//    directory), unless `force` (--force: the user means to overwrite it);
//  - a stream spelling ("-", "/dev/stdout", "/dev/stderr") for an output that cannot go
//    to a stream (binary files: traces, models), or given to two outputs.
// Text outputs may name a stream; those are written to stdout or stderr directly.
#pragma once

#include <string>
#include <vector>

namespace dl::cli {

struct InputPath {
  std::string what;  // "the model", "the data", "--trace-in", a case name...
  std::string path;
};

struct OutputPath {
  std::string option;  // "--report", "convert -o", "--reports DIR (case 'x')"
  std::string path;    // empty: not asked for, skipped
  bool stream_ok = false;
};

// "-" and "/dev/stdout" (1), "/dev/stderr" (2): the descriptor a text output naming a
// stream goes to; -1 for a file name.
int stream_target_fd(const std::string& path);

void check_outputs(const std::vector<InputPath>& inputs, const std::vector<OutputPath>& outputs, bool force);

}  // namespace dl::cli
