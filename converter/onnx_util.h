// Internal to converter/: protobuf helpers shared by the converter's .cpp files.
// Only converter/*.cpp may include this header (it pulls in protobuf and ONNX).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>

#include "converter/ir.h"

namespace dl::conv::detail {

// Reads a whole file or stream into memory, at most max_bytes (0: protobuf's 2 GB
// limit) else ResourceError; throws ModelError "PATH: cannot open (...)".
std::string read_file(const std::string& path, int64_t max_bytes = 0);

// Serializes `model` through io::AtomicFile (io/atomic_file.h: a unique temporary file,
// fsynced and renamed over `out_path`; a failed write leaves no partial model and no
// temporary file; a symlink or special file at `out_path` is refused). Throws
// ConfigError "OUT_PATH: cannot write (...)".
void write_model_atomically(const onnx::ModelProto& model, const std::string& out_path);

// Parses a serialized ModelProto and checks it looks like one (a graph, an
// ir_version, an opset_import). Throws ModelError "LABEL: not an ONNX model (...)".
onnx::ModelProto parse_model(const std::string& bytes, const std::string& label);

// How a serialized ModelProto nests subgraphs (If/Loop/Scan bodies), from its wire
// format, without recursion and without parsing anything else: message_depth counts
// the messages on the deepest path (ModelProto = 1, its graph 2, a node 3, an attribute
// 4, a subgraph 5, ...), graph_depth the graphs on it (the main graph = 1), outer_op the
// op type of the first node found holding a subgraph. nullopt when the bytes are not
// well-formed wire data along that path.
struct Nesting {
  int message_depth = 1, graph_depth = 0;
  std::string outer_op;
};
std::optional<Nesting> model_nesting(const std::string& bytes);

// The IR dtype for an ONNX TensorProto data type. int8/uint8 map to kInt32 (the IR
// holds every integer type in `ints`); types the IR cannot hold map to kOther.
ir::DType dtype_from_onnx(int32_t data_type);
std::string onnx_dtype_name(int32_t data_type);

bool has_external_data(const onnx::TensorProto& t);

// Checks a tensor without copying it: no external data, dims >= 0, a supported data
// type, as many values as the dims need. Returns the element count. Throws
// ModelError starting with `what`.
int64_t validate_tensor(const onnx::TensorProto& t, const std::string& what);

// Converts a tensor, validating it first. `what` names it in errors, e.g.
// "model.onnx: initializer 'w'". raw_data is released from `t` once copied, to keep peak memory near one copy.
ir::TensorData tensor_from_proto(onnx::TensorProto& t, const std::string& what);

// Gives unnamed nodes the name "<OpType>_<index>", checks that every value is
// produced once and every node input (including outer-scope values used by
// subgraphs) is defined, rejects cycles, and reorders the nodes topologically
// (stable: an already sorted graph keeps its order). Throws ModelError "LABEL: ...".
void validate_and_sort_graph(onnx::GraphProto& graph, const std::string& label);

// For models at default opset 6 or below, which ONNX's Gemm-6 shape inference and its
// version converter's Gemm 6->7 adapter see: refuses a Gemm whose A or B is known (declared
// or inferred) not to be 2-D, as both read their first two dims unchecked. Throws
// ModelError "LABEL: node 'NAME' (Gemm): A 'x' has rank 0; ..." (gemm_rank_check.cpp).
void check_old_gemm_ranks(const onnx::ModelProto& model, const std::string& label);

// Folds a multi-line library message into one line.
std::string one_line(const std::string& message);

}  // namespace dl::conv::detail
