// Concat (since 4, 11, 13): joins float32 or int64 inputs of equal rank along axis
// (negative axis from 11); every other dimension must match.
#include "runtime/attrs.h"
#include "runtime/ops/shape_util.h"
#include "runtime/sink_chunks.h"

namespace dl::rt {
namespace {

class Concat : public Op {
 public:
  explicit Concat(const ir::Node& node) : Op(node) {
    Attrs a(node);
    if (!a.has("axis")) a.fail("axis", "is required");
    axis_attr_ = a.i("axis", 0);
    a.finish();
  }

  void infer(InferCtx& ctx) override {
    if (ctx.in.empty()) throw ShapeError(where() + ": expects at least one input");
    check_inputs(ctx, 1, ctx.in.size(), ctx.in.size(), where());
    const Tensor& first = *ctx.in[0];
    const int64_t r = first.rank();
    if (r == 0) throw ShapeError(where() + ": cannot concatenate scalars");
    const size_t axis = static_cast<size_t>(normalize_axis(axis_attr_, r, where(), "axis"));
    Shape out = first.shape();
    out[axis] = 0;
    for (size_t k = 0; k < ctx.in.size(); ++k) {
      const Tensor& t = *ctx.in[k];
      if (t.dtype() != first.dtype())
        throw ShapeError(where() + ": input " + std::to_string(k) + " is " + dtype_name(t.dtype()) +
                         " but input 0 is " + dtype_name(first.dtype()));
      bool fits = t.rank() == r;
      for (size_t d = 0; fits && d < static_cast<size_t>(r); ++d) fits = d == axis || t.shape()[d] == out[d];
      if (!fits)
        throw ShapeError(where() + ": input " + std::to_string(k) + " has shape " + shape_str(t.shape()) +
                         ", which cannot be concatenated with " + shape_str(first.shape()) + " along axis " +
                         std::to_string(axis));
      out[axis] += t.shape()[axis];
    }
    outer_ = 1;
    for (size_t d = 0; d < axis; ++d) outer_ *= out[d];
    int64_t inner = 1;
    for (size_t d = axis + 1; d < out.size(); ++d) inner *= out[d];
    chunk_.clear();
    for (const Tensor* t : ctx.in) chunk_.push_back(t->shape()[axis] * inner);
    ctx.out[0]->plan(first.dtype(), std::move(out));
  }

  // Output row o is input 0's row o, then input 1's row o, ... (rows = outer indices).
  // Y is written and dY read front to back: a probe's sink gets them chunk by chunk, while
  // in cache (runtime/sink_chunks.h).
  void forward(FwdCtx& ctx) override {
    Tensor& y = *ctx.out[0];
    const bool floats = y.dtype() == DType::kFloat32;
    ChunkReporter report(floats ? ctx.out_stats : nullptr, floats ? y.f() : nullptr, y.numel());
    int64_t at = 0;
    for (int64_t o = 0; o < outer_; ++o)
      for (size_t k = 0; k < chunk_.size(); ++k) {
        copy_elems(*ctx.in[k], o * chunk_[k], y, at, chunk_[k]);
        at += chunk_[k];
        report.upto(at);
      }
    report.finish();
  }

  void backward(BwdCtx& ctx) override {
    if (!ctx.dout[0]) return;
    const float* dy = ctx.dout[0]->f();
    ChunkReporter report(ctx.dout_stats, dy, ctx.dout[0]->numel());
    int64_t at = 0;
    for (int64_t o = 0; o < outer_; ++o)
      for (size_t k = 0; k < chunk_.size(); ++k) {
        if (ctx.din[k]) add_elems(dy + at, ctx.din[k]->f() + o * chunk_[k], chunk_[k], ctx.assigns(k));
        at += chunk_[k];
        report.upto(at);
      }
    report.finish();
  }

  bool assigns_gradient(size_t) const override { return true; }  // (each input is a part of dY)
  bool joins_inputs() const override { return true; }

  OpTraits traits() const override {
    OpTraits t;
    t.linear = true;
    t.rearranges = true;
    return t;
  }

 private:
  int64_t axis_attr_ = 0;
  int64_t outer_ = 1;
  std::vector<int64_t> chunk_;  // elements per outer index, per input
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<Concat>(node); }

std::vector<OpSample> samples() {
  OpSample a;
  a.label = "concat 2x1x2, 2x2x2, 2x3x2 axis 1";
  a.node = sample_node("Concat", 3, 1, {{"axis", attr_i(1)}});
  a.inputs = {Tensor::floats({2, 1, 2}, {0.1f, -0.4f, 1.3f, -2.0f}),
              Tensor::floats({2, 2, 2}, {0.6f, 1.7f, -1.1f, 2.2f, -0.3f, 0.9f, 1.5f, -2.6f}),
              Tensor::floats({2, 3, 2}, {-0.2f, 0.8f, 1.9f, -1.4f, 2.5f, 0.3f, -2.1f, 1.1f, 0.4f, -0.9f, 1.6f, -1.8f})};
  a.check_grad = {true, true, true};
  OpSample b;
  b.label = "concat 2x2, 2x1 axis -1";
  b.node = sample_node("Concat", 2, 1, {{"axis", attr_i(-1)}});
  b.inputs = {Tensor::floats({2, 2}, {0.5f, -1.5f, 2.5f, -0.5f}), Tensor::floats({2, 1}, {1.0f, -2.0f})};
  b.check_grad = {true, true};
  OpSample c;
  c.label = "concat int64 shapes axis 0";
  c.node = sample_node("Concat", 2, 1, {{"axis", attr_i(0)}});
  c.inputs = {Tensor::ints({1}, {-1}), Tensor::ints({2}, {3, 4})};
  c.check_grad = {false, false};
  return {a, b, c};
}

}  // namespace

OpInfo op_info_concat() { return {"Concat", {4, 11, 13}, make, samples}; }

}  // namespace dl::rt
