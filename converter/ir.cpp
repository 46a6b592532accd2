#include "converter/ir.h"

namespace dl::ir {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kInt64: return "int64";
    case DType::kInt32: return "int32";
    case DType::kBool: return "bool";
    default: return "unsupported";
  }
}

int64_t TensorData::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

}  // namespace dl::ir
