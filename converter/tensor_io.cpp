// Reading and writing model files, reading tensor files, and converting TensorProto to the IR.
#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <type_traits>

#include "converter/errors.h"
#include "converter/import.h"
#include "converter/onnx_util.h"

namespace dl::conv {
namespace detail {
namespace {

// Protobuf cannot parse messages of 2 GB or more; ONNX keeps such weights in
// external data files, which deeplocalize rejects anyway.
constexpr int64_t kMaxProtoBytes = INT_MAX;

std::string dims_text(const std::vector<int64_t>& dims) {
  std::ostringstream s;
  s << '[';
  for (size_t i = 0; i < dims.size(); ++i) s << (i ? ", " : "") << dims[i];
  s << ']';
  return s.str();
}

template <class Message>
bool parse_message(const std::string& bytes, Message* message) {
  if (static_cast<int64_t>(bytes.size()) > kMaxProtoBytes) return false;
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  in.SetTotalBytesLimit(static_cast<int>(kMaxProtoBytes));
  return message->ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
}

// Copies `count` little-endian values of type Stored out of raw_data (sizes were
// checked by validate_tensor). ONNX raw_data is little-endian, as is every platform
// deeplocalize builds on.
template <class Stored, class Out>
void copy_raw(const std::string& raw, int64_t count, std::vector<Out>& out) {
  out.resize(static_cast<size_t>(count));
  if constexpr (std::is_same_v<Stored, Out>) {
    if (count > 0) std::memcpy(out.data(), raw.data(), static_cast<size_t>(count) * sizeof(Stored));
  } else {
    const char* p = raw.data();
    for (int64_t i = 0; i < count; ++i, p += sizeof(Stored)) {
      Stored v;
      std::memcpy(&v, p, sizeof(Stored));
      out[static_cast<size_t>(i)] = static_cast<Out>(v);
    }
  }
}

// Where a data type's values live: bytes per element in raw_data, or the typed field.
struct Storage {
  size_t raw_bytes;
  int typed_count;
  const char* typed_field;
};

Storage storage_of(const onnx::TensorProto& t, const std::string& what) {
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT: return {4, t.float_data_size(), "float_data"};
    case onnx::TensorProto::DOUBLE: return {8, t.double_data_size(), "double_data"};
    case onnx::TensorProto::INT64: return {8, t.int64_data_size(), "int64_data"};
    case onnx::TensorProto::INT32: return {4, t.int32_data_size(), "int32_data"};
    case onnx::TensorProto::BOOL:
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::INT8: return {1, t.int32_data_size(), "int32_data"};
    default:
      throw ModelError(what + " has data type " + onnx_dtype_name(t.data_type()) +
                       ", which deeplocalize does not support (supported: float, double, int64, "
                       "int32, int8, uint8, bool)");
  }
}

}  // namespace

std::string one_line(const std::string& message) {
  std::string out;
  out.reserve(message.size());
  bool pending_space = false;
  for (char c : message) {
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out += ' ';
    pending_space = false;
    out += c;
  }
  return out;
}

std::string read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw ModelError(path + ": cannot open (" + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int err = S_ISDIR(st.st_mode) ? EISDIR : errno;
    ::close(fd);
    throw ModelError(path + ": cannot read (" + std::strerror(err ? err : EINVAL) + ")");
  }
  if (st.st_size > kMaxProtoBytes) {
    ::close(fd);
    throw ModelError(path + ": file is " + std::to_string(st.st_size) +
                     " bytes; models of 2 GB or more need external data, which is not supported");
  }
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd, &bytes[done], bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw ModelError(path + ": cannot read (" + std::strerror(err) + ")");
    }
    if (n == 0) break;  // the file shrank while we read it
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  bytes.resize(done);
  return bytes;
}

void write_model_atomically(const onnx::ModelProto& model, const std::string& out_path) {
  const std::string tmp = out_path + ".tmp";
  {
    std::ofstream file(tmp, std::ios::binary | std::ios::trunc);
    if (!file) throw ConfigError(out_path + ": cannot write (" + std::strerror(errno) + ")");
    const bool ok = model.SerializeToOstream(&file);
    file.close();
    if (!ok || !file) {
      std::remove(tmp.c_str());
      throw ConfigError(out_path + ": cannot write the model (disk full, or larger than 2 GB)");
    }
  }
  if (std::rename(tmp.c_str(), out_path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw ConfigError(out_path + ": cannot write (" + std::strerror(err) + ")");
  }
}

onnx::ModelProto parse_model(const std::string& bytes, const std::string& label) {
  onnx::ModelProto model;
  const std::string prefix = label + ": not an ONNX model (";
  if (bytes.empty()) throw ModelError(prefix + "the file is empty)");
  if (!parse_message(bytes, &model)) {
    // Protobuf's parser refuses messages nested deeper than its recursion limit; say so
    // rather than calling a well-formed model of deeply nested subgraphs "another format".
    const int limit = google::protobuf::io::CodedInputStream::GetDefaultRecursionLimit();
    const std::optional<Nesting> n = model_nesting(bytes);
    if (n && n->message_depth > limit - 4)  // a node or tensor inside the deepest graph adds a few
      throw ModelError(label + ": the model nests subgraphs " + std::to_string(n->graph_depth - 1) + " levels deep" +
                       (n->outer_op.empty() ? "" : " (" + n->outer_op + " bodies)") + ", deeper than the " +
                       std::to_string((limit - 2) / 3) + " levels the ONNX parser (protobuf, recursion limit " +
                       std::to_string(limit) + ") reads; deeplocalize does not run If/Loop/Scan subgraphs in any case");
    throw ModelError(prefix + "the bytes do not parse as an ONNX ModelProto: truncated or another format)");
  }
  if (!model.has_graph()) throw ModelError(prefix + "no graph)");
  if (model.ir_version() <= 0) throw ModelError(prefix + "no ir_version)");
  if (model.opset_import_size() == 0) throw ModelError(prefix + "no opset_import)");
  return model;
}

ir::DType dtype_from_onnx(int32_t data_type) {
  switch (data_type) {
    case onnx::TensorProto::FLOAT: return ir::DType::kFloat32;
    case onnx::TensorProto::DOUBLE: return ir::DType::kFloat64;
    case onnx::TensorProto::INT64: return ir::DType::kInt64;
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT8: return ir::DType::kInt32;
    case onnx::TensorProto::BOOL: return ir::DType::kBool;
    default: return ir::DType::kOther;
  }
}

std::string onnx_dtype_name(int32_t data_type) {
  if (onnx::TensorProto::DataType_IsValid(data_type)) {
    return onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(data_type));
  }
  return "data type " + std::to_string(data_type);
}

bool has_external_data(const onnx::TensorProto& t) {
  return t.data_location() == onnx::TensorProto::EXTERNAL || t.external_data_size() > 0;
}

int64_t validate_tensor(const onnx::TensorProto& t, const std::string& what) {
  if (has_external_data(t)) {
    throw ModelError(what + " keeps its data in an external file, which deeplocalize does not support "
                            "(save the model with all tensors inside the .onnx file)");
  }
  if (t.has_segment()) throw ModelError(what + " is a segmented tensor, which is not supported");
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0) throw ModelError(what + " has a negative dimension in " + dims_text(dims));
    if (d > 0 && count > std::numeric_limits<int64_t>::max() / d) {
      throw ModelError(what + " has more elements than fit in 64 bits");
    }
    count *= d;
  }
  const Storage storage = storage_of(t, what);
  if (t.has_raw_data()) {
    const uint64_t need = static_cast<uint64_t>(count) * storage.raw_bytes;
    if (count > std::numeric_limits<int64_t>::max() / 8 || t.raw_data().size() != need) {
      throw ModelError(what + ": raw_data holds " + std::to_string(t.raw_data().size()) + " bytes but dims " +
                       dims_text(dims) + " need " + std::to_string(need));
    }
  } else if (storage.typed_count != count) {
    throw ModelError(what + ": " + storage.typed_field + " holds " + std::to_string(storage.typed_count) +
                     " values but dims " + dims_text(dims) + " need " + std::to_string(count));
  }
  return count;
}

ir::TensorData tensor_from_proto(onnx::TensorProto& t, const std::string& what) {
  const int64_t count = validate_tensor(t, what);
  ir::TensorData out;
  out.name = t.name();
  out.dims.assign(t.dims().begin(), t.dims().end());
  out.dtype = dtype_from_onnx(t.data_type());
  const bool raw = t.has_raw_data();
  const std::string& bytes = t.raw_data();
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      if (raw) copy_raw<float>(bytes, count, out.floats);
      else out.floats.assign(t.float_data().begin(), t.float_data().end());
      break;
    case onnx::TensorProto::DOUBLE:  // narrowed: the runtime computes in float32
      if (raw) copy_raw<double>(bytes, count, out.floats);
      else out.floats.assign(t.double_data().begin(), t.double_data().end());
      break;
    case onnx::TensorProto::INT64:
      if (raw) copy_raw<int64_t>(bytes, count, out.ints);
      else out.ints.assign(t.int64_data().begin(), t.int64_data().end());
      break;
    case onnx::TensorProto::INT32:
      if (raw) copy_raw<int32_t>(bytes, count, out.ints);
      else out.ints.assign(t.int32_data().begin(), t.int32_data().end());
      break;
    case onnx::TensorProto::BOOL:
    case onnx::TensorProto::UINT8:
      if (raw) copy_raw<uint8_t>(bytes, count, out.ints);
      else out.ints.assign(t.int32_data().begin(), t.int32_data().end());
      if (t.data_type() == onnx::TensorProto::BOOL)
        for (int64_t& v : out.ints) v = v != 0;
      break;
    case onnx::TensorProto::INT8:
      if (raw) copy_raw<int8_t>(bytes, count, out.ints);
      else out.ints.assign(t.int32_data().begin(), t.int32_data().end());
      break;
    default: break;  // rejected by validate_tensor
  }
  if (raw) std::string().swap(*t.mutable_raw_data());
  return out;
}

}  // namespace detail

ir::TensorData load_tensor_file(const std::string& path) {
  const std::string bytes = detail::read_file(path);
  onnx::TensorProto tensor;
  if (!detail::parse_message(bytes, &tensor)) {
    throw ModelError(path + ": not an ONNX TensorProto (the bytes do not parse: truncated or another format)");
  }
  const std::string what = path + ": tensor" + (tensor.name().empty() ? "" : " '" + tensor.name() + "'");
  if (detail::dtype_from_onnx(tensor.data_type()) == ir::DType::kOther || detail::has_external_data(tensor)) {
    return detail::tensor_from_proto(tensor, what);  // throws the data type / external data error
  }
  // The backend tests also store sequences and optionals (SequenceProto,
  // OptionalProto) in input_N.pb; they parse as nonsense tensors.
  const char* hint = " (if the file holds a sequence or optional value: only plain tensors are supported)";
  if (tensor.has_segment()) {
    throw ModelError(what + " is not a plain tensor (a sequence or optional value, or a segmented "
                            "tensor); only plain tensors are supported");
  }
  try {
    return detail::tensor_from_proto(tensor, what);
  } catch (const ModelError& e) {
    throw ModelError(e.what() + std::string(hint));
  }
}

}  // namespace dl::conv
