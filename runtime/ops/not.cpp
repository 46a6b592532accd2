// Not (since 1): y = not x on a bool tensor. No gradient.
#include "runtime/attrs.h"
#include "runtime/ops/shape_util.h"

namespace dl::rt {
namespace {

class NotOp : public Op {
 public:
  explicit NotOp(const ir::Node& node) : Op(node) { Attrs(node).finish(); }

  void infer(InferCtx& ctx) override {
    check_inputs(ctx, 1, 1, 1, where());
    if (ctx.in[0]->dtype() != DType::kBool)
      throw ShapeError(where() + ": input must be bool, got " + dtype_name(ctx.in[0]->dtype()));
    ctx.out[0]->plan(DType::kBool, ctx.in[0]->shape());
  }

  void forward(FwdCtx& ctx) override {
    const int64_t* x = ctx.in[0]->i();
    int64_t* y = ctx.out[0]->i();
    for (int64_t k = 0, n = ctx.in[0]->numel(); k < n; ++k) y[k] = x[k] == 0;
  }

  void backward(BwdCtx&) override {}
  bool differentiable_input(size_t) const override { return false; }

  OpTraits traits() const override {
    OpTraits t;
    t.out_lo = 0.0;
    t.out_hi = 1.0;
    return t;
  }
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<NotOp>(node); }

std::vector<OpSample> samples() {
  OpSample s;
  s.label = "not of a bool 2x2";
  s.node = sample_node("Not", 1);
  s.inputs = {Tensor::bools({2, 2}, {0, 1, 1, 0})};
  s.check_grad = {false};
  return {s};
}

}  // namespace

OpInfo op_info_not() { return {"Not", {1}, make, samples}; }

}  // namespace dl::rt
