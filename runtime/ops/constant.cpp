// Constant (since 9, 11, 12, 13): exactly one of value (tensor), value_float,
// value_floats, value_int, value_ints (the value_* forms from 12). Float tensors become
// float32, integer tensors int64, bool tensors bool. The output is known at plan time, so infer()
// computes it and the graph folds the node; sparse and string constants are rejected.
#include <algorithm>

#include "runtime/attrs.h"
#include "runtime/ops/shape_util.h"

namespace dl::rt {
namespace {

class Constant : public Op {
 public:
  explicit Constant(const ir::Node& node) : Op(node) {
    Attrs a(node);
    for (const char* unsupported : {"sparse_value", "value_string", "value_strings"})
      if (a.has(unsupported)) a.fail(unsupported, "is not supported (only dense numeric constants)");
    int given = 0;
    for (const char* name : {"value", "value_float", "value_floats", "value_int", "value_ints"}) given += a.has(name);
    if (given != 1) throw ModelError(where() + ": exactly one of the value attributes must be given, got " +
                                     std::to_string(given));
    if (const ir::TensorData* t = a.tensor("value")) {
      shape_ = t->dims;
      if (t->dtype == ir::DType::kFloat32 || t->dtype == ir::DType::kFloat64) {
        value_ = Tensor::floats(shape_, t->floats);
        check_count(t->floats.size());
      } else if (t->dtype == ir::DType::kInt64 || t->dtype == ir::DType::kInt32 || t->dtype == ir::DType::kBool) {
        value_ = t->dtype == ir::DType::kBool ? Tensor::bools(shape_, t->ints) : Tensor::ints(shape_, t->ints);
        check_count(t->ints.size());
      } else {
        a.fail("value", std::string("has unsupported data type ") + ir::dtype_name(t->dtype));
      }
    } else if (a.has("value_float")) {
      value_ = Tensor::floats({}, {a.f("value_float", 0.0f)});
    } else if (a.has("value_floats")) {
      std::vector<float> v = a.floats("value_floats");
      const int64_t n = static_cast<int64_t>(v.size());
      value_ = Tensor::floats({n}, std::move(v));
    } else if (a.has("value_int")) {
      value_ = Tensor::ints({}, {a.i("value_int", 0)});
    } else {
      std::vector<int64_t> v = a.ints("value_ints");
      const int64_t n = static_cast<int64_t>(v.size());
      value_ = Tensor::ints({n}, std::move(v));
    }
    a.finish();
  }

  void infer(InferCtx& ctx) override {
    if (!ctx.in.empty()) throw ShapeError(where() + ": takes no inputs");
    ctx.out[0]->reset(value_.dtype(), value_.shape());
    forward_into(*ctx.out[0]);
    if (!ctx.out_known.empty()) ctx.out_known[0] = true;
  }

  void forward(FwdCtx& ctx) override { forward_into(*ctx.out[0]); }

  void backward(BwdCtx&) override {}  // no inputs

 private:
  void check_count(size_t n) const {
    if (static_cast<int64_t>(n) != value_.numel())
      throw ModelError(where() + ": attribute 'value' holds " + std::to_string(n) + " values for dims " +
                       shape_str(shape_));
  }
  void forward_into(Tensor& y) const { copy_elems(value_, 0, y, 0, value_.numel()); }

  Shape shape_;
  Tensor value_;
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<Constant>(node); }

std::vector<OpSample> samples() {
  OpSample a;
  a.label = "constant value_floats";
  a.node = sample_node("Constant", 0, 1, {{"value_floats", attr_floats({0.5f, -1.5f, 2.0f})}});
  OpSample b;
  b.label = "constant value_int";
  b.node = sample_node("Constant", 0, 1, {{"value_int", attr_i(7)}});
  return {a, b};
}

}  // namespace

OpInfo op_info_constant() { return {"Constant", {9, 11, 12, 13}, make, samples}; }

}  // namespace dl::rt
