// How deeply a serialized ModelProto nests its subgraphs, read from the wire format
// without recursion (see onnx_util.h: model_nesting). Used only to explain why protobuf
// refused a model: its parser stops at a fixed message depth, and a model of If/Loop
// bodies nested past it would otherwise be reported as "not an ONNX model".
#include <algorithm>
#include <cstdint>
#include <vector>

#include "converter/onnx_util.h"

namespace dl::conv::detail {
namespace {

enum class Kind { kModel, kGraph, kNode, kAttribute };

// The field of `kind` that holds a message on the path to subgraphs, and what it holds.
bool child_kind(Kind kind, uint64_t field, Kind& child) {
  switch (kind) {
    case Kind::kModel: child = Kind::kGraph; return field == 7;                   // ModelProto.graph
    case Kind::kGraph: child = Kind::kNode; return field == 1;                    // GraphProto.node
    case Kind::kNode: child = Kind::kAttribute; return field == 5;               // NodeProto.attribute
    case Kind::kAttribute: child = Kind::kGraph; return field == 6 || field == 11;  // .g, .graphs
  }
  return false;
}

bool read_varint(const uint8_t*& p, const uint8_t* end, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p == end) return false;
    const uint8_t b = *p++;
    v |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

}  // namespace

std::optional<Nesting> model_nesting(const std::string& bytes) {
  struct Frame {
    const uint8_t* end;
    Kind kind;
    int graphs;  // graphs on the path, this message included
    std::string op_type;  // a node's op_type (field 4), once read
  };
  const uint8_t* p = reinterpret_cast<const uint8_t*>(bytes.data());
  std::vector<Frame> stack{{p + bytes.size(), Kind::kModel, 0, {}}};
  Nesting out;
  while (!stack.empty()) {
    Frame& top = stack.back();
    if (p == top.end) {
      stack.pop_back();
      continue;
    }
    uint64_t key = 0, len = 0;
    if (!read_varint(p, top.end, key)) return std::nullopt;
    const uint64_t field = key >> 3;
    switch (key & 7) {
      case 0:
        if (!read_varint(p, top.end, len)) return std::nullopt;
        break;
      case 1:
        if (top.end - p < 8) return std::nullopt;
        p += 8;
        break;
      case 5:
        if (top.end - p < 4) return std::nullopt;
        p += 4;
        break;
      case 2: {
        if (!read_varint(p, top.end, len) || len > uint64_t(top.end - p)) return std::nullopt;
        const uint8_t* body = p;
        p += len;  // skipped, unless it is a message on the path to subgraphs
        if (top.kind == Kind::kNode && field == 4) top.op_type.assign(reinterpret_cast<const char*>(body), size_t(len));
        Kind child;
        if (!child_kind(top.kind, field, child)) break;
        const int graphs = top.graphs + (child == Kind::kGraph ? 1 : 0);
        // The op whose attribute holds a subgraph (the node is two frames up).
        if (child == Kind::kGraph && graphs > 1 && out.outer_op.empty() && stack.size() >= 2)
          out.outer_op = stack[stack.size() - 2].op_type;
        stack.push_back({body + len, child, graphs, {}});  // `top` is not used after this
        p = body;
        out.message_depth = std::max(out.message_depth, int(stack.size()));
        out.graph_depth = std::max(out.graph_depth, graphs);
        break;
      }
      default:
        return std::nullopt;  // groups (3, 4) and invalid wire types: not ModelProto
    }
  }
  return out;
}

}  // namespace dl::conv::detail
