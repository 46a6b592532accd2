// Where (since 9, 16): y = condition ? X : Y, the three inputs broadcast together. X and Y
// float32, int64 or bool (same type); condition bool. Gradients flow to X where the
// condition holds and to Y elsewhere, reduced back over broadcast dimensions; none to
// the condition.
#include <cstdint>
#include <vector>

#include "runtime/attrs.h"
#include "runtime/data/io.h"
#include "runtime/ops/broadcast.h"
#include "runtime/ops/shape_util.h"

namespace dl::rt {
namespace {

class WhereOp : public Op {
 public:
  explicit WhereOp(const ir::Node& node) : Op(node) { Attrs(node).finish(); }

  void infer(InferCtx& ctx) override {
    check_inputs(ctx, 3, 3, 3, where());
    if (ctx.in[0]->dtype() != DType::kBool)
      throw ShapeError(where() + ": condition must be bool, got " + dtype_name(ctx.in[0]->dtype()));
    const DType t = ctx.in[1]->dtype();
    if (ctx.in[2]->dtype() != t)
      throw ShapeError(where() + ": X and Y have different types (" + dtype_name(t) + " and " +
                       dtype_name(ctx.in[2]->dtype()) + ")");
    bc_ = MultiBroadcast::make({ctx.in[0]->shape(), ctx.in[1]->shape(), ctx.in[2]->shape()}, where());
    ctx.out[0]->plan(t, bc_.out);
    const int64_t n = shape_numel(bc_.out);
    if (n > ctx.max_bytes)  // the mask, one byte per output element, besides the output itself
      throw ResourceError(where() + ": the condition mask for output " + shape_str(bc_.out) +
                          " does not fit in what the memory cap leaves (" + data::human_bytes(double(ctx.max_bytes)) +
                          "; raise it with --max-memory)");
    ctx.charge(n, "its condition mask");
    mask_.assign(static_cast<size_t>(n), 0);
  }

  void forward(FwdCtx& ctx) override {
    uint8_t* m = mask_.data();
    broadcast_apply(bc_.plans[0], m, ctx.in[0]->i(), m, [](uint8_t, int64_t c) -> uint8_t { return c != 0; });
    if (ctx.in[1]->dtype() == DType::kFloat32)
      select(ctx.in[1]->f(), ctx.in[2]->f(), ctx.out[0]->f());
    else
      select(ctx.in[1]->i(), ctx.in[2]->i(), ctx.out[0]->i());
  }

  void backward(BwdCtx& ctx) override {
    if (!ctx.dout[0] || ctx.in[1]->dtype() != DType::kFloat32) return;
    const float* dy = ctx.dout[0]->f();
    const uint8_t* m = mask_.data();
    if (ctx.din.size() > 1 && ctx.din[1])
      broadcast_accumulate(bc_.plans[1], 1, ctx.din[1]->f(),
                           [&](int64_t o, int64_t, int64_t) { return m[o] ? dy[o] : 0.0f; });
    if (ctx.din.size() > 2 && ctx.din[2])
      broadcast_accumulate(bc_.plans[2], 1, ctx.din[2]->f(),
                           [&](int64_t o, int64_t, int64_t) { return m[o] ? 0.0f : dy[o]; });
  }

  bool differentiable_input(size_t i) const override { return i != 0; }
  OpTraits traits() const override {
    OpTraits t;
    t.passes_values = true;
    return t;
  }

 private:
  // out = X everywhere, then Y where the mask is off.
  template <class T>
  void select(const T* x, const T* y, T* out) const {
    broadcast_apply(bc_.plans[1], out, x, out, [](T, T v) { return v; });
    const uint8_t* m = mask_.data();
    bc_.plans[2].for_each_run([&](int64_t o, int64_t, int64_t ib, int64_t n, int64_t, int64_t db) {
      for (int64_t k = 0; k < n; ++k)
        if (!m[o + k]) out[o + k] = y[ib + k * db];
    });
  }

  MultiBroadcast bc_;
  std::vector<uint8_t> mask_;  // the condition broadcast to the output (sized in infer)
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<WhereOp>(node); }

std::vector<OpSample> samples() {
  std::vector<OpSample> out(3);
  out[0].label = "equal shapes";
  out[0].node = sample_node("Where", 3);
  out[0].inputs = {Tensor::bools({2, 3}, {1, 0, 1, 0, 0, 1}),
                   Tensor::floats({2, 3}, {0.5f, -1.0f, 2.0f, 0.3f, -0.7f, 1.1f}),
                   Tensor::floats({2, 3}, {1.5f, 0.2f, -0.4f, 0.9f, 2.2f, -1.3f})};
  out[0].check_grad = {false, true, true};
  out[1].label = "all three broadcast: cond [2,1], X [3], Y scalar";
  out[1].node = sample_node("Where", 3);
  out[1].inputs = {Tensor::bools({2, 1}, {1, 0}), Tensor::floats({3}, {0.5f, -1.0f, 2.0f}),
                   Tensor::floats({}, {0.25f})};
  out[1].check_grad = {false, true, true};
  out[2].label = "int64 values (forward only)";
  out[2].node = sample_node("Where", 3);
  out[2].inputs = {Tensor::bools({3}, {0, 1, 0}), Tensor::ints({3}, {1, 2, 3}), Tensor::ints({1}, {-1})};
  out[2].check_grad = {false, false, false};
  return out;
}

}  // namespace

OpInfo op_info_where() { return {"Where", {9, 16}, make, samples}; }

}  // namespace dl::rt
