// ConstantOfShape (since 9): a tensor of the shape given by the int64 input, every element
// the one-element `value` attribute (default float 0). float/double values give float32,
// integer values int64, bool values bool. The shape must be known at plan time (it
// usually comes from Shape), so infer() computes the output and the graph folds the node.
#include <algorithm>

#include "runtime/attrs.h"
#include "runtime/ops/shape_util.h"

namespace dl::rt {
namespace {

class ConstantOfShape : public Op {
 public:
  explicit ConstantOfShape(const ir::Node& node) : Op(node) {
    Attrs a(node);
    value_ = Tensor::floats({}, {0.0f});
    if (const ir::TensorData* t = a.tensor("value")) {
      if (t->numel() != 1) a.fail("value", "must hold exactly one element, got " + std::to_string(t->numel()));
      switch (t->dtype) {
        case ir::DType::kFloat32: case ir::DType::kFloat64: value_ = Tensor::floats({}, {t->floats.at(0)}); break;
        case ir::DType::kInt64: case ir::DType::kInt32: value_ = Tensor::ints({}, {t->ints.at(0)}); break;
        case ir::DType::kBool: value_ = Tensor::bools({}, {t->ints.at(0) != 0}); break;
        default: a.fail("value", std::string("has unsupported data type ") + ir::dtype_name(t->dtype));
      }
    }
    a.finish();
  }

  void infer(InferCtx& ctx) override {
    check_inputs(ctx, 1, 1, 1, where());
    if (ctx.in[0]->rank() != 1)
      throw ShapeError(where() + ": input must be 1-D, got shape " + shape_str(ctx.in[0]->shape()));
    const Shape shape = known_ints(ctx, 0, where(), "input");
    for (int64_t d : shape)
      if (d < 0) throw ShapeError(where() + ": negative dimension in shape " + shape_str(shape));
    ctx.out[0]->plan(value_.dtype(), shape);
    if (shape_numel(shape) > ctx.max_bytes / 8) return;  // the graph reports the memory cap
    ctx.out[0]->allocate();
    fill(*ctx.out[0]);
    if (!ctx.out_known.empty()) ctx.out_known[0] = true;
  }

  void forward(FwdCtx& ctx) override { fill(*ctx.out[0]); }
  void backward(BwdCtx&) override {}
  bool differentiable_input(size_t) const override { return false; }

 private:
  void fill(Tensor& y) const {
    if (y.dtype() == DType::kFloat32)
      std::fill(y.f(), y.f() + y.numel(), value_.f()[0]);
    else
      std::fill(y.i(), y.i() + y.numel(), value_.i()[0]);
  }

  Tensor value_;
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<ConstantOfShape>(node); }

std::vector<OpSample> samples() {
  ir::Attribute value;
  value.kind = ir::Attribute::Kind::kTensor;
  value.t.dtype = ir::DType::kInt64;
  value.t.dims = {1};
  value.t.ints = {7};
  OpSample a;
  a.label = "default float 0, shape [2, 3]";
  a.node = sample_node("ConstantOfShape", 1);
  a.inputs = {Tensor::ints({2}, {2, 3})};
  a.check_grad = {false};
  OpSample b;
  b.label = "int64 value 7, shape [4]";
  b.node = sample_node("ConstantOfShape", 1, 1, {{"value", value}});
  b.inputs = {Tensor::ints({1}, {4})};
  b.check_grad = {false};
  return {a, b};
}

}  // namespace

OpInfo op_info_constant_of_shape() { return {"ConstantOfShape", {9}, make, samples}; }

}  // namespace dl::rt
