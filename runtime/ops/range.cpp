// Range (since 11): start, start + delta, ... while below limit (above, for a negative
// delta): max(ceil((limit - start) / delta), 0) values, float32 or int64. The length
// depends on the values, so the three scalars must be known at plan time (they usually
// are: constants and sizes from Shape); infer() then computes the output and the graph
// folds the node.
#include <cmath>

#include "runtime/attrs.h"
#include "runtime/ops/int_wrap.h"
#include "runtime/ops/shape_util.h"

namespace dl::rt {
namespace {

class RangeOp : public Op {
 public:
  explicit RangeOp(const ir::Node& node) : Op(node) { Attrs(node).finish(); }

  void infer(InferCtx& ctx) override {
    check_inputs(ctx, 3, 3, 3, where());
    static const char* const kNames[] = {"start", "limit", "delta"};
    const DType t = ctx.in[0]->dtype();
    for (size_t k = 0; k < 3; ++k) {
      const Tensor& v = *ctx.in[k];
      if (v.numel() != 1 || v.rank() > 1)
        throw ShapeError(where() + ": input '" + kNames[k] + "' must be a scalar, got shape " + shape_str(v.shape()));
      if (v.dtype() != t || t == DType::kBool)
        throw ShapeError(where() + ": inputs must all be float32 or all int64 (input '" + kNames[k] + "' is " +
                         dtype_name(v.dtype()) + ")");
      if (k >= ctx.known.size() || !ctx.known[k])
        throw ShapeError(where() + ": input '" + kNames[k] +
                         "' is computed at run time; a data-dependent output shape is not supported");
    }
    const double delta = ctx.in[2]->at(0);
    if (delta == 0) throw ShapeError(where() + ": delta must not be 0");
    const double count = std::ceil((ctx.in[1]->at(0) - ctx.in[0]->at(0)) / delta);
    if (!(count < 1e12)) throw ShapeError(where() + ": the range has too many values (" + std::to_string(count) + ")");
    const int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
    ctx.out[0]->plan(t, {n});
    if (n > ctx.max_bytes / 8) return;  // the graph reports the memory cap
    ctx.out[0]->allocate();
    fill(ctx.in, *ctx.out[0]);
    if (!ctx.out_known.empty()) ctx.out_known[0] = true;
  }

  void forward(FwdCtx& ctx) override { fill(ctx.in, *ctx.out[0]); }
  void backward(BwdCtx&) override {}
  bool differentiable_input(size_t) const override { return false; }
  bool plan_time_input(size_t) const override { return true; }  // they decide the length

 private:
  static void fill(const std::vector<const Tensor*>& in, Tensor& y) {
    if (y.dtype() == DType::kFloat32) {
      const float start = in[0]->f()[0], delta = in[2]->f()[0];
      for (int64_t k = 0; k < y.numel(); ++k) y.f()[k] = start + static_cast<float>(k) * delta;
    } else {
      const int64_t start = in[0]->i()[0], delta = in[2]->i()[0];
      for (int64_t k = 0; k < y.numel(); ++k) y.i()[k] = wrap_add(start, wrap_mul(k, delta));
    }
  }
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<RangeOp>(node); }

std::vector<OpSample> samples() {
  OpSample a;
  a.label = "int64 10 down to 4 by -3";
  a.node = sample_node("Range", 3);
  a.inputs = {Tensor::ints({}, {10}), Tensor::ints({}, {4}), Tensor::ints({}, {-3})};
  a.check_grad = {false, false, false};
  OpSample b;
  b.label = "float 1 to 5 by 2";
  b.node = sample_node("Range", 3);
  b.inputs = {Tensor::floats({}, {1.0f}), Tensor::floats({}, {5.0f}), Tensor::floats({}, {2.0f})};
  b.check_grad = {false, false, false};
  return {a, b};
}

}  // namespace

OpInfo op_info_range() { return {"Range", {11}, make, samples}; }

}  // namespace dl::rt
