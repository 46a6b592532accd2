// Typed errors shared by every library. Library code throws these and never exits;
// cli/ maps each kind to the contract's exit code in one place.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace dl {

enum class ErrorKind {
  kModel,     // unreadable or invalid model, unsupported operator   -> exit 2
  kShape,     // shapes that do not fit together                     -> exit 2
  kData,      // malformed data file                                 -> exit 2
  kConfig,    // bad option or training configuration                -> exit 2
  kResource,  // a limit (memory) would be exceeded                  -> exit 2
  kInternal,  // a bug in deeplocalize                               -> exit 3
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

struct ModelError : Error {
  explicit ModelError(const std::string& m) : Error(ErrorKind::kModel, m) {}
};
struct ShapeError : Error {
  explicit ShapeError(const std::string& m) : Error(ErrorKind::kShape, m) {}
};
struct DataError : Error {
  explicit DataError(const std::string& m) : Error(ErrorKind::kData, m) {}
};
// An index (e.g. a token id into an embedding table) outside what the op can address:
// carries the value, so the trainer can name the data cell that holds it.
struct IndexRangeError : DataError {
  IndexRangeError(const std::string& m, int64_t v) : DataError(m), value(v) {}
  int64_t value;
};
struct ConfigError : Error {
  explicit ConfigError(const std::string& m) : Error(ErrorKind::kConfig, m) {}
};
struct ResourceError : Error {
  explicit ResourceError(const std::string& m) : Error(ErrorKind::kResource, m) {}
};
struct InternalError : Error {
  explicit InternalError(const std::string& m) : Error(ErrorKind::kInternal, m) {}
};

// Exit code of the contract for an error kind.
inline int exit_code_for(ErrorKind kind) { return kind == ErrorKind::kInternal ? 3 : 2; }

}  // namespace dl
