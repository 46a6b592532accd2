// Shared machinery for the broadcasting ops with a bool output: comparisons (Equal,
// Less, Greater, LessOrEqual, GreaterOrEqual) and logic (And, Or, Xor). Broadcasting as
// binary.h (numpy rules, or the legacy `broadcast`/`axis` attributes before opset 7).
// The output is a step function of the inputs: no gradient flows through it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "converter/errors.h"
#include "runtime/attrs.h"
#include "runtime/op.h"
#include "runtime/ops/binary.h"

namespace dl::rt {

// Which input types an op takes: comparisons numbers (float32, int64; Equal also bool),
// logic ops bool only.
enum class PredicateInputs { kNumbers, kNumbersOrBool, kBool };

template <class Pred>
class PredicateOp : public Op {
 public:
  PredicateOp(const ir::Node& node, BinaryBroadcast bcast, PredicateInputs kind, Pred pred)
      : Op(node), bcast_(bcast), kind_(kind), pred_(pred) {}

  void infer(InferCtx& ctx) override {
    if (ctx.in.size() != 2 || !ctx.in[0] || !ctx.in[1]) throw ShapeError(where() + ": expects two inputs");
    const DType a = ctx.in[0]->dtype(), b = ctx.in[1]->dtype();
    if (a != b)
      throw ShapeError(where() + ": inputs have different types (" + dtype_name(a) + " and " + dtype_name(b) + ")");
    if (kind_ == PredicateInputs::kBool && a != DType::kBool)
      throw ShapeError(where() + ": inputs must be bool, got " + dtype_name(a));
    if (kind_ == PredicateInputs::kNumbers && a == DType::kBool)
      throw ShapeError(where() + ": inputs must be float32 or int64, got bool");
    plan_ = bcast_.plan(ctx.in[0]->shape(), ctx.in[1]->shape(), where());
    ctx.out[0]->plan(DType::kBool, plan_.out);
  }

  void forward(FwdCtx& ctx) override {
    const Tensor& a = *ctx.in[0];
    const Tensor& b = *ctx.in[1];
    auto f = [this](auto x, auto y) -> int64_t { return pred_(x, y) ? 1 : 0; };
    if (a.dtype() == DType::kFloat32)
      broadcast_apply(plan_, a.f(), b.f(), ctx.out[0]->i(), f);
    else
      broadcast_apply(plan_, a.i(), b.i(), ctx.out[0]->i(), f);
  }

  void backward(BwdCtx&) override {}  // piecewise constant: the gradient is 0 almost everywhere
  bool differentiable_input(size_t) const override { return false; }

  OpTraits traits() const override {
    OpTraits t;
    t.out_lo = 0.0;
    t.out_hi = 1.0;
    return t;
  }

 private:
  BinaryBroadcast bcast_;
  BroadcastPlan plan_;
  PredicateInputs kind_;
  Pred pred_;
};

// pred(a, b) is called with two floats or two int64 (bools are 0/1 int64).
template <class Pred>
std::unique_ptr<Op> make_predicate(const ir::Node& node, PredicateInputs kind, Pred pred) {
  Attrs attrs(node);
  BinaryBroadcast bcast(attrs, node, 7);
  attrs.finish();
  return std::make_unique<PredicateOp<Pred>>(node, bcast, kind, pred);
}

// Sample cases shared by the predicate ops (forward only): float with a row broadcast,
// int64, and the legacy broadcast attributes where the op has them.
std::vector<OpSample> predicate_samples(const std::string& op_type, PredicateInputs kind, bool legacy);

}  // namespace dl::rt
