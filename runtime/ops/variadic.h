// Shared machinery for the variadic element-wise ops (Sum, Mean, Max, Min): one or more
// inputs of one type, broadcast together (numpy rules from since-version 8; before that
// all shapes must be equal), folded left to right into the output.
//
// Gradients (float32): Sum and Mean pass dy (scaled by 1/n for Mean) to every input.
// Max and Min pass dy to the input(s) holding the selected value; on a tie it is split
// equally between the tied inputs, as torch.maximum / torch.minimum do for two (PyTorch
// exports those as ONNX Max / Min), so each gets dy / (number of tied inputs).
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "converter/errors.h"
#include "runtime/attrs.h"
#include "runtime/op.h"
#include "runtime/ops/broadcast.h"
#include "runtime/ops/int_wrap.h"

namespace dl::rt {

enum class VariadicKind { kSum, kMean, kMax, kMin };

class VariadicOp : public Op {
 public:
  VariadicOp(const ir::Node& node, VariadicKind kind, bool numpy_broadcast)
      : Op(node), kind_(kind), numpy_(numpy_broadcast) {
    Attrs(node).finish();
  }

  void infer(InferCtx& ctx) override {
    if (ctx.in.empty()) throw ShapeError(where() + ": expects at least one input");
    std::vector<Shape> shapes;
    for (size_t k = 0; k < ctx.in.size(); ++k) {
      if (!ctx.in[k]) throw ShapeError(where() + ": input " + std::to_string(k) + " is required");
      if (ctx.in[k]->dtype() != ctx.in[0]->dtype())
        throw ShapeError(where() + ": inputs have different types (" + dtype_name(ctx.in[0]->dtype()) + " and " +
                         dtype_name(ctx.in[k]->dtype()) + ")");
      if (!numpy_ && ctx.in[k]->shape() != ctx.in[0]->shape())
        throw ShapeError(where() + ": shapes " + shape_str(ctx.in[0]->shape()) + " and " +
                         shape_str(ctx.in[k]->shape()) + " differ (no broadcasting before version 8)");
      shapes.push_back(ctx.in[k]->shape());
    }
    const DType t = ctx.in[0]->dtype();
    if (t == DType::kBool) throw ShapeError(where() + ": inputs must be float32 or int64, got bool");
    if (kind_ == VariadicKind::kMean && t != DType::kFloat32)
      throw ShapeError(where() + ": inputs must be float32, got " + dtype_name(t));
    bc_ = MultiBroadcast::make(shapes, where());
    ctx.out[0]->plan(t, bc_.out);
    if (t == DType::kFloat32 && (kind_ == VariadicKind::kMax || kind_ == VariadicKind::kMin)) {
      const int64_t n = shape_numel(bc_.out);
      if (n > ctx.max_bytes / 4)
        throw ResourceError(where() + ": the tie counts for output " + shape_str(bc_.out) +
                            " do not fit in what the memory cap leaves; raise it with --max-memory");
      ctx.charge(n * 4, "its tie counts");
      ties_.assign(static_cast<size_t>(n), 0.0f);
    }
  }

  void forward(FwdCtx& ctx) override {
    if (ctx.out[0]->dtype() == DType::kFloat32) {
      fold(ctx, ctx.out[0]->f(), [](const Tensor* t) { return t->f(); });
      if (kind_ == VariadicKind::kMean) {
        const float inv = 1.0f / static_cast<float>(ctx.in.size());
        float* y = ctx.out[0]->f();
        for (int64_t k = 0, n = ctx.out[0]->numel(); k < n; ++k) y[k] *= inv;
      }
    } else {
      fold(ctx, ctx.out[0]->i(), [](const Tensor* t) { return t->i(); });
    }
  }

  void backward(BwdCtx& ctx) override {
    if (!ctx.dout[0] || ctx.out[0]->dtype() != DType::kFloat32) return;
    const float* dy = ctx.dout[0]->f();
    const float* y = ctx.out[0]->f();
    if (kind_ == VariadicKind::kSum || kind_ == VariadicKind::kMean) {
      const float scale = kind_ == VariadicKind::kMean ? 1.0f / static_cast<float>(ctx.in.size()) : 1.0f;
      for (size_t k = 0; k < ctx.in.size(); ++k)
        if (k < ctx.din.size() && ctx.din[k])
          broadcast_accumulate(bc_.plans[k], 1, ctx.din[k]->f(),
                               [&](int64_t o, int64_t, int64_t) { return scale * dy[o]; });
      return;
    }
    // How many inputs hold the selected value at each output element.
    std::fill(ties_.begin(), ties_.end(), 0.0f);
    float* ties = ties_.data();
    for (size_t k = 0; k < ctx.in.size(); ++k) {
      const float* x = ctx.in[k]->f();
      bc_.plans[k].for_each_run([&](int64_t o, int64_t, int64_t ib, int64_t n, int64_t, int64_t db) {
        for (int64_t j = 0; j < n; ++j) ties[o + j] += x[ib + j * db] == y[o + j] ? 1.0f : 0.0f;
      });
    }
    for (size_t k = 0; k < ctx.in.size(); ++k) {
      if (k >= ctx.din.size() || !ctx.din[k]) continue;
      const float* x = ctx.in[k]->f();
      broadcast_accumulate(bc_.plans[k], 1, ctx.din[k]->f(), [&](int64_t o, int64_t, int64_t ib) {
        return x[ib] == y[o] ? dy[o] / ties[o] : 0.0f;  // a NaN output selects none (ties 0)
      });
    }
  }

  OpTraits traits() const override {
    OpTraits t;
    t.role = OpTraits::Role::kElementwise;
    t.linear = kind_ == VariadicKind::kSum || kind_ == VariadicKind::kMean;
    return t;
  }

 private:
  // y = x_0 (broadcast), then y = combine(y, x_k) for each further input. NaN wins in Max
  // and Min (as numpy.maximum / minimum and torch do).
  template <class T, class Data>
  void fold(FwdCtx& ctx, T* y, Data data) const {
    broadcast_apply(bc_.plans[0], y, data(ctx.in[0]), y, [](T, T b) { return b; });
    for (size_t k = 1; k < ctx.in.size(); ++k) {
      const T* x = data(ctx.in[k]);
      switch (kind_) {
        case VariadicKind::kSum:
        case VariadicKind::kMean: broadcast_apply(bc_.plans[k], y, x, y, [](T a, T b) { return plus(a, b); }); break;
        case VariadicKind::kMax:
          broadcast_apply(bc_.plans[k], y, x, y, [](T a, T b) { return b > a || b != b ? b : a; });
          break;
        case VariadicKind::kMin:
          broadcast_apply(bc_.plans[k], y, x, y, [](T a, T b) { return b < a || b != b ? b : a; });
          break;
      }
    }
  }

  VariadicKind kind_;
  bool numpy_;
  MultiBroadcast bc_;
  std::vector<float> ties_;  // Max/Min backward scratch (sized in infer)
};

inline std::unique_ptr<Op> make_variadic(const ir::Node& node, VariadicKind kind) {
  return std::make_unique<VariadicOp>(node, kind, node.since_version == 0 || node.since_version >= 8);
}

// Sample cases shared by the variadic ops: three equal shapes, three broadcast shapes
// and, for Max/Min, a two-input tie; an int64 case (forward only) unless Mean.
std::vector<OpSample> variadic_samples(const std::string& op_type, VariadicKind kind);

}  // namespace dl::rt
