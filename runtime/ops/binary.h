// Shared machinery for the arithmetic binary ops (Add, Sub, Mul, Div): numpy
// broadcasting (opset >= 7) or ONNX's legacy `broadcast`/`axis` attributes (opset 6),
// float32 forward + backward, and an int64 forward for shape arithmetic (PyTorch
// exports compute sizes with Mul/Div/Add on int64 tensors).
//
// An op file supplies y = f(a, b) for float and int64 and the local derivatives
// dy/da, dy/db as functions of (a, b, y); this template does shapes, loops, and the
// reduction of gradients back to each input's shape.
#pragma once

#include <memory>

#include "converter/errors.h"
#include "runtime/attrs.h"
#include "runtime/op.h"
#include "runtime/ops/broadcast.h"
#include "runtime/sink_chunks.h"

namespace dl::rt {

// How a binary node broadcasts: numpy rules from opset 7, or the legacy opt-in rule
// (B broadcast onto A at `axis`) for nodes whose since-version predates numpy rules.
class BinaryBroadcast {
 public:
  // Reads `broadcast` and `axis` when node.since_version is in (0, first_numpy_version).
  BinaryBroadcast(Attrs& attrs, const ir::Node& node, int first_numpy_version) {
    legacy_ = node.since_version > 0 && node.since_version < first_numpy_version;
    if (!legacy_) return;
    on_ = attrs.i("broadcast", 0) != 0;
    has_axis_ = attrs.has("axis");
    axis_ = attrs.i("axis", 0);
  }

  // Throws ShapeError naming `where` with both shapes when they do not fit.
  BroadcastPlan plan(const Shape& a, const Shape& b, const std::string& where) const {
    if (!legacy_) return BroadcastPlan::make(a, b, where);
    if (!on_) {
      if (a != b)
        throw ShapeError(where + ": shapes " + shape_str(a) + " and " + shape_str(b) +
                         " differ and attribute 'broadcast' is 0");
      return BroadcastPlan::make(a, b, where);
    }
    return BroadcastPlan::make(a, legacy_broadcast_shape(a, b, axis_, has_axis_, where), where);
  }

 private:
  bool legacy_ = false;
  bool on_ = false;
  bool has_axis_ = false;
  int64_t axis_ = 0;
};

template <class FwdF, class FwdI, class DA, class DB>
class BinaryOp : public Op {
 public:
  // pass_a, pass_b: dy/da, dy/db are 1 (Add), so an input of the output's shape gets dy
  // itself (Op::passes_gradient).
  BinaryOp(const ir::Node& node, BinaryBroadcast bcast, OpTraits traits, FwdF ff, FwdI fi, DA da, DB db, bool pass_a = false,
           bool pass_b = false)
      : Op(node), bcast_(bcast), traits_(traits), ff_(ff), fi_(fi), da_(da), db_(db), pass_{pass_a, pass_b} {}

  void infer(InferCtx& ctx) override {
    if (ctx.in.size() != 2 || !ctx.in[0] || !ctx.in[1]) throw ShapeError(where() + ": expects two inputs");
    const Tensor& a = *ctx.in[0];
    const Tensor& b = *ctx.in[1];
    if (a.dtype() != b.dtype())
      throw ShapeError(where() + ": inputs have different types (" + dtype_name(a.dtype()) + " and " +
                       dtype_name(b.dtype()) + ")");
    if (a.dtype() == DType::kBool)  // arithmetic on bools is not ONNX (and would leave 0/1)
      throw ShapeError(where() + ": inputs are bool; arithmetic takes numbers (float or int64)");
    plan_ = bcast_.plan(a.shape(), b.shape(), where());
    ctx.out[0]->plan(a.dtype(), plan_.out);
    // The input read in the output's order (not broadcast), which forward() may report.
    const int64_t n = shape_numel(plan_.out);
    full_input_ = a.dtype() != DType::kFloat32 ? -1 : a.numel() == n ? 0 : b.numel() == n ? 1 : -1;
    for (size_t i = 0; i < 2; ++i) {
      whole_[i] = a.dtype() == DType::kFloat32 && ctx.in[i]->numel() == n;
      passes_[i] = pass_[i] && whole_[i];
    }
  }
  // An input of the output's shape gets one term per element (a broadcast one sums).
  bool assigns_gradient(size_t i) const override { return i < 2 && whole_[i]; }
  bool passes_gradient(size_t i) const override { return i < 2 && passes_[i]; }

  // Float: reports out[0] (FwdCtx::out_stats) and the input read in its order
  // (FwdCtx::in_stats) chunk by chunk as it goes, and dout[0] (BwdCtx::dout_stats) in
  // the first gradient pass, din[0] (BwdCtx::din_stats) in its own.
  void forward(FwdCtx& ctx) override {
    const Tensor& a = *ctx.in[0];
    const Tensor& b = *ctx.in[1];
    if (a.dtype() != DType::kFloat32) {
      broadcast_apply(plan_, a.i(), b.i(), ctx.out[0]->i(), fi_);
      return;
    }
    const int64_t n = ctx.out[0]->numel();
    ChunkReporter out(ctx.out_stats, ctx.out[0]->f(), n);
    ChunkReporter in(full_input_ >= 0 ? ctx.in_stats : nullptr, full_input_ == 1 ? b.f() : a.f(), n);
    if (!out.active() && !in.active()) {
      broadcast_apply(plan_, a.f(), b.f(), ctx.out[0]->f(), ff_);
      return;
    }
    broadcast_apply(plan_, a.f(), b.f(), ctx.out[0]->f(), ff_, [&](int64_t end) {
      out.upto(end);
      in.upto(end);
    });
    out.finish();
    in.finish();
  }
  bool reports_input() const override { return full_input_ >= 0; }
  size_t reported_input() const override { return full_input_ == 1 ? 1 : 0; }

  void backward(BwdCtx& ctx) override {
    if (!ctx.dout[0] || ctx.in[0]->dtype() != DType::kFloat32) return;
    const float* a = ctx.in[0]->f();
    const float* b = ctx.in[1]->f();
    const float* y = ctx.out[0]->f();
    const float* dy = ctx.dout[0]->f();
    const bool d0 = ctx.din[0] != nullptr, d1 = ctx.din.size() > 1 && ctx.din[1];
    const int64_t n = ctx.dout[0]->numel();
    ChunkReporter g(d0 || d1 ? ctx.dout_stats : nullptr, dy, n);
    // dA, of the output's shape, as its chunks are done (BwdCtx::din_stats).
    ChunkReporter ga(d0 && whole_[0] ? ctx.din_stats : nullptr, d0 ? ctx.din[0]->f() : nullptr, n);
    auto after = [&](int64_t end) {
      g.upto(end);
      ga.upto(end);
    };
    if (d0)
      broadcast_accumulate(
          plan_, 0, ctx.din[0]->f(), [&](int64_t o, int64_t ia, int64_t ib) { return dy[o] * da_(a[ia], b[ib], y[o]); },
          after, ctx.assigns(0));
    if (d1)
      broadcast_accumulate(
          plan_, 1, ctx.din[1]->f(), [&](int64_t o, int64_t ia, int64_t ib) { return dy[o] * db_(a[ia], b[ib], y[o]); },
          [&](int64_t end) {
            if (!d0) g.upto(end);
          },
          ctx.assigns(1));
    g.finish();
    ga.finish();
  }
  // dA chunk by chunk from L1 where A is not broadcast and its gradient is not dY's values
  // (a product's, a quotient's: attention's scores under a causal mask, Mul then Add; an
  // Add's passes dY on, whose sums the probes have already).
  bool reports_input_gradient() const override { return whole_[0] && !passes_[0]; }

  OpTraits traits() const override { return traits_; }

 private:
  BinaryBroadcast bcast_;
  BroadcastPlan plan_;
  OpTraits traits_;
  FwdF ff_;
  FwdI fi_;
  DA da_;
  DB db_;
  int full_input_ = -1;  // float: the input of the output's shape (0 first), -1 none
  bool pass_[2];
  bool passes_[2] = {false, false};
  bool whole_[2] = {false, false};  // float input of the output's shape
};

template <class FwdF, class FwdI, class DA, class DB>
std::unique_ptr<Op> make_binary(const ir::Node& node, OpTraits traits, FwdF ff, FwdI fi, DA da, DB db,
                                bool pass_a = false, bool pass_b = false) {
  Attrs attrs(node);
  BinaryBroadcast bcast(attrs, node, 7);
  attrs.finish();
  return std::make_unique<BinaryOp<FwdF, FwdI, DA, DB>>(node, bcast, traits, ff, fi, da, db, pass_a, pass_b);
}

inline OpTraits elementwise_traits(bool linear) {
  OpTraits t;
  t.role = OpTraits::Role::kElementwise;
  t.linear = linear;
  return t;
}

}  // namespace dl::rt
