// Shared machinery for the data-movement ops (Flatten, Reshape, Squeeze, Unsqueeze,
// Transpose, Concat, Gather, ...): axis normalisation, reading plan-time values of
// shape/axes inputs, dtype-generic copies, and a base class for ops whose output is
// their first input with a different shape.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "converter/errors.h"
#include "runtime/op.h"
#include "runtime/sink_chunks.h"

namespace dl::rt {

// Maps axis from [-rank, rank-1] (or [-rank, rank] when allow_end) to [0, rank); throws
// ShapeError "<where>: <what> <axis> is out of range for rank <rank>" otherwise.
inline int64_t normalize_axis(int64_t axis, int64_t rank, const std::string& where, const char* what,
                              bool allow_end = false) {
  const int64_t hi = allow_end ? rank : rank - 1;
  if (axis < -rank || axis > hi)
    throw ShapeError(where + ": " + what + " " + std::to_string(axis) + " is out of range for rank " +
                     std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

// The values of int64 input i, which must be known at plan time: output shapes that
// depend on values computed while running are not supported (ShapeError naming the
// node and the input).
inline std::vector<int64_t> known_ints(const InferCtx& ctx, size_t i, const std::string& where,
                                       const char* input_name) {
  const Tensor* t = ctx.in[i];
  if (t->dtype() != DType::kInt64)
    throw ShapeError(where + ": input '" + input_name + "' must be int64, got " + dtype_name(t->dtype()));
  if (i >= ctx.known.size() || !ctx.known[i])
    throw ShapeError(where + ": input '" + input_name +
                     "' is computed at run time; a data-dependent output shape is not supported");
  return std::vector<int64_t>(t->i(), t->i() + t->numel());
}

// Throws ShapeError unless ctx has between lo and hi inputs, the first `required` of
// them present.
inline void check_inputs(const InferCtx& ctx, size_t lo, size_t hi, size_t required, const std::string& where) {
  if (ctx.in.size() < lo || ctx.in.size() > hi)
    throw ShapeError(where + ": expects " + std::to_string(lo) + (lo == hi ? "" : ".." + std::to_string(hi)) +
                     " inputs, got " + std::to_string(ctx.in.size()));
  for (size_t k = 0; k < required; ++k)
    if (!ctx.in[k]) throw ShapeError(where + ": input " + std::to_string(k) + " is required");
}

// Copies n elements starting at element `from` of src into dst at element `to`; both
// tensors have the same dtype (float32 or int64).
inline void copy_elems(const Tensor& src, int64_t from, Tensor& dst, int64_t to, int64_t n) {
  if (src.dtype() == DType::kFloat32)
    std::copy(src.f() + from, src.f() + from + n, dst.f() + to);
  else
    std::copy(src.i() + from, src.i() + from + n, dst.i() + to);
}

// dst += src over n float elements.
inline void add_elems(const float* src, float* dst, int64_t n) {
  for (int64_t k = 0; k < n; ++k) dst[k] += src[k];
}
// dst += src, or dst = 0 + src (the same bits, dst not read) as a gradient's first
// writer (BwdCtx::assigns).
inline void add_elems(const float* src, float* dst, int64_t n, bool assign) {
  if (!assign) return add_elems(src, dst, n);
  for (int64_t k = 0; k < n; ++k) dst[k] = 0.0f + src[k];
}

inline OpTraits shape_traits() {
  OpTraits t;
  t.role = OpTraits::Role::kShape;
  t.linear = true;
  t.rearranges = true;
  return t;
}

// An op whose output holds its first input's elements in the same order under a new
// shape (Flatten, Reshape, Squeeze, Unsqueeze). Inputs after the first (shape, axes)
// are not differentiable. Subclasses compute the output shape from the validated ctx.
class ReshapeLikeOp : public Op {
 public:
  using Op::Op;

  void infer(InferCtx& ctx) override {
    Shape out = output_shape(ctx);
    const Tensor& x = *ctx.in[0];
    if (shape_numel(out) != x.numel())
      throw ShapeError(where() + ": cannot reshape " + shape_str(x.shape()) + " (" + std::to_string(x.numel()) +
                       " elements) to " + shape_str(out));
    ctx.out[0]->plan(x.dtype(), std::move(out));
  }

  void forward(FwdCtx& ctx) override { copy_elems(*ctx.in[0], 0, *ctx.out[0], 0, ctx.in[0]->numel()); }
  bool copies_input() const override { return true; }
  bool views_input() const override { return true; }

  // Reports dout[0] chunk by chunk as it goes (BwdCtx::dout_stats).
  void backward(BwdCtx& ctx) override {
    if (!ctx.din[0] || !ctx.dout[0]) return;
    const float* dy = ctx.dout[0]->f();
    float* dx = ctx.din[0]->f();
    const bool assign = ctx.assigns(0);
    chunked_loop(ctx.din[0]->numel(), ctx.dout_stats, dy,
                 [&](int64_t lo, int64_t hi) { add_elems(dy + lo, dx + lo, hi - lo, assign); });
  }
  bool assigns_gradient(size_t i) const override { return i == 0; }

  OpTraits traits() const override { return shape_traits(); }
  bool differentiable_input(size_t i) const override { return i == 0; }

 protected:
  // Validates the inputs (at least that input 0 is present) and returns the output shape.
  virtual Shape output_shape(InferCtx& ctx) = 0;
};

}  // namespace dl::rt
