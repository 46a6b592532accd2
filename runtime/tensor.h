// Dense row-major tensors of the execution graph. A tensor's storage is sized once,
// when the graph is planned, and reused for every step.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dl::rt {

using Shape = std::vector<int64_t>;

// kBool (ONNX BOOL: comparisons, Not/And/Or, Where's condition) holds 0 or 1 in the
// int64 storage, so every dtype-generic copy treats it as an integer; ops that need a
// boolean check for kBool by name.
enum class DType { kFloat32, kInt64, kBool };

const char* dtype_name(DType t);
int64_t shape_numel(const Shape& s);
std::string shape_str(const Shape& s);  // "[64, 784]"

class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, Shape shape) { reset(dtype, std::move(shape)); }
  // A copy or move of a view holds its own copy of the values (a view never outlives the
  // graph whose storage it reads by way of a copy).
  Tensor(const Tensor& other);
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(const Tensor& other);
  Tensor& operator=(Tensor&& other) noexcept;
  ~Tensor() = default;
  static Tensor floats(Shape shape, std::vector<float> values);
  static Tensor ints(Shape shape, std::vector<int64_t> values);
  static Tensor bools(Shape shape, std::vector<int64_t> values);  // values 0 or 1

  // Sets dtype and shape and sizes the storage (zero-filled). Planning only.
  void reset(DType dtype, Shape shape);
  // Sets dtype and shape without storage: ops call this from infer() so the graph can
  // check the memory budget before anything is allocated. allocate() sizes the storage.
  void plan(DType dtype, Shape shape);
  void allocate();
  bool allocated() const;
  // Makes this planned float tensor a view of `owner`'s values (same dtype and element
  // count, any shape): it gives up storage of its own and reads and writes owner's, in
  // the same row-major order, until it is planned again (the graph's views:
  // runtime/graph_views.cpp). `owner` must have its values (storage, or be a view) and
  // outlive this tensor.
  void view_of(Tensor& owner);
  bool is_view() const { return view_ != nullptr; }

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t i) const { return shape_[static_cast<size_t>(i < 0 ? i + rank() : i)]; }
  int64_t numel() const { return numel_; }

  float* f() { return view_ ? view_->f() : f_.data(); }
  const float* f() const { return view_ ? view_->f() : f_.data(); }
  int64_t* i() { return i_.data(); }
  const int64_t* i() const { return i_.data(); }
  // (A view's are its owner's, under the owner's shape.)
  std::vector<float>& fvec() { return view_ ? view_->fvec() : f_; }
  const std::vector<float>& fvec() const { return view_ ? view_->fvec() : f_; }
  const std::vector<int64_t>& ivec() const { return i_; }

  void zero();
  // Values as double regardless of dtype (tests, constant folding, reporting).
  double at(int64_t flat) const { return dtype_ == DType::kFloat32 ? f()[flat] : double(i_[size_t(flat)]); }

 private:
  DType dtype_ = DType::kFloat32;
  Shape shape_;
  int64_t numel_ = 0;
  std::vector<float> f_;
  std::vector<int64_t> i_;
  Tensor* view_ = nullptr;  // the tensor whose values this one is a view of (view_of)
  void copy_from(const Tensor& other);
};

}  // namespace dl::rt
