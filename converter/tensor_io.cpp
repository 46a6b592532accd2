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
#include "converter/input_file.h"
#include "converter/onnx_util.h"
#include "io/atomic_file.h"

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

// Whether the first bytes of a stream can start a serialized ModelProto: every top-level
// field has a nonzero number and a wire type ONNX uses (no groups), ModelProto's own
// fields their declared one. Undecided (true) once a field runs past the bytes seen.
// Lets /dev/zero or a binary stream be refused at once, not read to the cap.
bool plausible_model_start(const std::string& b) {
  size_t at = 0;
  auto varint = [&](uint64_t& v) {  // 1: read, 0: cut off, -1: longer than 10 bytes
    v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (at >= b.size()) return 0;
      const auto c = static_cast<uint8_t>(b[at++]);
      if (shift < 64) v |= uint64_t(c & 0x7f) << shift;
      if (!(c & 0x80)) return 1;
    }
    return -1;
  };
  const std::pair<uint64_t, uint64_t> known[] = {{1, 0}, {2, 2}, {3, 2},  {4, 2},  {5, 0}, {6, 2},
                                                 {7, 2}, {8, 2}, {14, 2}, {20, 2}, {25, 2}};
  while (at < b.size()) {
    uint64_t tag = 0, v = 0;
    const int got = varint(tag);
    if (got <= 0) return got == 0;
    const uint64_t field = tag >> 3, wire = tag & 7;
    if (field == 0 || (wire != 0 && wire != 1 && wire != 2 && wire != 5)) return false;
    for (const auto& [f, w] : known)
      if (f == field && w != wire) return false;
    if (wire == 0) {
      const int ok = varint(v);
      if (ok <= 0) return ok == 0;
      continue;
    }
    if (wire == 2) {
      const int ok = varint(v);
      if (ok <= 0) return ok == 0;
    } else {
      v = wire == 1 ? 8 : 4;
    }
    if (v >= b.size() - at) return true;
    at += v;
  }
  return true;
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

std::string read_file(const std::string& path, int64_t max_bytes) {
  // Protobuf's limit bounds the read even without a cap; a stream (pipe, FIFO,
  // /dev/stdin) is read once to its end, one without protobuf framing not past 64 KiB.
  const bool capped = max_bytes > 0 && max_bytes < kMaxProtoBytes;
  const std::string limit = capped
                                ? "the limit of " + input::byte_text(double(max_bytes)) + " (raise it with --max-memory)"
                                : "2 GB: models of 2 GB or more need external data, which is not supported";
  auto fail = [&](input::ReadStep step, int err) {
    throw ModelError(path + (step == input::ReadStep::kOpen ? ": cannot open (" : ": cannot read (") +
                     std::strerror(err) + ")");
  };
  auto check_start = [&](const std::string& start) {
    if (!plausible_model_start(start))
      throw ModelError(path + ": not an ONNX model (the bytes do not parse as an ONNX ModelProto: another format)");
  };
  return input::read_whole_file(path, capped ? max_bytes : kMaxProtoBytes, limit, fail, check_start);
}

void write_model_atomically(const onnx::ModelProto& model, const std::string& out_path) {
  io::AtomicFile file(out_path);
  errno = 0;
  if (!model.SerializeToFileDescriptor(file.fd()))
    file.fail(errno != 0 ? std::strerror(errno) : "the model could not be serialized (larger than 2 GB?)");
  file.commit();
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
  auto fail = [&](input::ReadStep step, int err) {
    throw ModelError(path + (step == input::ReadStep::kOpen ? ": cannot open (" : ": cannot read (") +
                     std::strerror(err) + ")");
  };
  const std::string bytes = input::read_whole_file(path, detail::kMaxProtoBytes, "2 GB", fail);
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
