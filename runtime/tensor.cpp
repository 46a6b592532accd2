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

Tensor::Tensor(const Tensor& other) { copy_from(other); }

Tensor::Tensor(Tensor&& other) noexcept { *this = std::move(other); }

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) copy_from(other);
  return *this;
}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this == &other) return *this;
  if (other.view_) {  // (copy_from allocates: a failure ends the program, as noexcept says)
    copy_from(other);
    return *this;
  }
  dtype_ = other.dtype_;
  shape_ = std::move(other.shape_);
  numel_ = other.numel_;
  f_ = std::move(other.f_);
  i_ = std::move(other.i_);
  view_ = nullptr;
  return *this;
}

void Tensor::copy_from(const Tensor& other) {
  dtype_ = other.dtype_;
  shape_ = other.shape_;
  numel_ = other.numel_;
  if (other.view_) f_ = std::vector<float>(other.f(), other.f() + other.numel_);  // (other may view this)
  else f_ = other.f_;
  i_ = other.i_;
  view_ = nullptr;
}

void Tensor::view_of(Tensor& owner) {
  if (dtype_ != DType::kFloat32 || owner.dtype_ != DType::kFloat32 || owner.numel_ != numel_ || &owner == this ||
      !owner.allocated())
    throw InternalError("a tensor of " + std::to_string(numel_) + " " + dtype_name(dtype_) +
                        " values cannot be a view of one of " + std::to_string(owner.numel_) + " " +
                        dtype_name(owner.dtype_) + " values" + (owner.allocated() ? "" : " without storage"));
  f_ = std::vector<float>();
  i_ = std::vector<int64_t>();
  view_ = &owner;
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
  view_ = nullptr;
}

bool Tensor::allocated() const {
  if (view_) return true;
  return static_cast<int64_t>(dtype_ == DType::kFloat32 ? f_.size() : i_.size()) == numel_;
}

void Tensor::reset(DType dtype, Shape shape) {
  plan(dtype, std::move(shape));
  allocate();
}

void Tensor::allocate() {
  view_ = nullptr;
  if (dtype_ == DType::kFloat32) {
    f_.assign(static_cast<size_t>(numel_), 0.0f);
    i_.clear();
  } else {
    i_.assign(static_cast<size_t>(numel_), 0);
    f_.clear();
  }
}

void Tensor::zero() {
  if (view_) std::fill(f(), f() + numel_, 0.0f);
  std::fill(f_.begin(), f_.end(), 0.0f);
  std::fill(i_.begin(), i_.end(), 0);
}

}  // namespace dl::rt
