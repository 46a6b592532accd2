#include "runtime/tensor.h"

#include <algorithm>

#include "converter/errors.h"

namespace dl::rt {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kFloat32: return "float32";
    case DType::kInt64: return "int64";
    case DType::kBool: return "bool";
  }
  return "unknown";
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) throw ShapeError("negative dimension in shape " + shape_str(s));
    if (__builtin_mul_overflow(n, d, &n))
      throw ResourceError("shape " + shape_str(s) + " has more elements than can be addressed");
  }
  return n;
}

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t k = 0; k < s.size(); ++k) {
    if (k) out += ", ";
    out += std::to_string(s[k]);
  }
  return out + "]";
}

Tensor Tensor::floats(Shape shape, std::vector<float> values) {
  Tensor t(DType::kFloat32, std::move(shape));
  t.f_ = std::move(values);
  t.f_.resize(static_cast<size_t>(t.numel_));
  return t;
}

Tensor Tensor::ints(Shape shape, std::vector<int64_t> values) {
  Tensor t(DType::kInt64, std::move(shape));
  t.i_ = std::move(values);
  t.i_.resize(static_cast<size_t>(t.numel_));
  return t;
}

Tensor Tensor::bools(Shape shape, std::vector<int64_t> values) {
  Tensor t = ints(std::move(shape), std::move(values));
  t.dtype_ = DType::kBool;
  return t;
}

void Tensor::plan(DType dtype, Shape shape) {
  dtype_ = dtype;
  numel_ = shape_numel(shape);
  shape_ = std::move(shape);
  f_.clear();
  i_.clear();
}

bool Tensor::allocated() const {
  return static_cast<int64_t>(dtype_ == DType::kFloat32 ? f_.size() : i_.size()) == numel_;
}

void Tensor::reset(DType dtype, Shape shape) {
  plan(dtype, std::move(shape));
  allocate();
}

void Tensor::allocate() {
  if (dtype_ == DType::kFloat32) {
    f_.assign(static_cast<size_t>(numel_), 0.0f);
    i_.clear();
  } else {
    i_.assign(static_cast<size_t>(numel_), 0);
    f_.clear();
  }
}

void Tensor::zero() {
  std::fill(f_.begin(), f_.end(), 0.0f);
  std::fill(i_.begin(), i_.end(), 0);
}

}  // namespace dl::rt
