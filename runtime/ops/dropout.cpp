// Dropout (since 6, 7, 10, 12, 13). In training mode each element is kept with
// probability 1 - ratio and scaled by 1 / (1 - ratio); otherwise y = x.
//   ratio:  attribute before 12 (default 0.5); optional scalar input from 12.
//   mode:   training iff the graph runs in training mode (the trainer's Keras-like
//           switch), or, from 12, the optional `training_mode` input is true. Since 6's
//           `is_test = 1` forces inference. The `seed` attribute (12+) is accepted but
//           the mask comes from the graph's random stream so runs are reproducible.
//   mask:   optional second output, 1 where kept: float32 in 6/7 (type T), int64 0/1
//           standing for bool from 10.
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "converter/errors.h"
#include "runtime/attrs.h"
#include "runtime/op.h"
#include "runtime/ops/shape_util.h"
#include "runtime/sink_chunks.h"

namespace dl::rt {
namespace {

class DropoutOp : public Op {
 public:
  DropoutOp(const ir::Node& node, int version, float ratio, bool is_test)
      : Op(node), version_(version), ratio_(ratio), is_test_(is_test) {}

  void infer(InferCtx& ctx) override {
    const size_t max_inputs = version_ >= 12 ? 3 : 1;
    if (ctx.in.empty() || !ctx.in[0] || ctx.in.size() > max_inputs)
      throw ShapeError(where() + ": expects a data input and at most " + std::to_string(max_inputs - 1) +
                       " optional inputs");
    const Tensor& x = *ctx.in[0];
    if (x.dtype() != DType::kFloat32) throw ShapeError(where() + ": input must be float32");
    for (size_t k = 1; k < ctx.in.size(); ++k)
      if (ctx.in[k] && ctx.in[k]->numel() != 1)
        throw ShapeError(where() + ": input " + (k == 1 ? "'ratio'" : "'training_mode'") +
                         " must be a scalar, got shape " + shape_str(ctx.in[k]->shape()));
    // From 12 the ratio is an input, usually a constant: checked here like the attribute.
    has_ratio_input_ = ctx.in.size() > 1 && ctx.in[1];
    known_ratio_.reset();
    if (has_ratio_input_ && ctx.known.size() > 1 && ctx.known[1]) known_ratio_ = check_ratio(float(ctx.in[1]->at(0)));
    ctx.out[0]->plan(DType::kFloat32, x.shape());
    if (ctx.out.size() > 1 && ctx.out[1])
      ctx.out[1]->plan(version_ >= 10 ? DType::kBool : DType::kFloat32, x.shape());
    keep_.assign(static_cast<size_t>(x.numel()), 0.0f);
    mask_all_kept_ = false;
  }

  void forward(FwdCtx& ctx) override {
    const Tensor& x = *ctx.in[0];
    Tensor* mask = ctx.out.size() > 1 ? ctx.out[1] : nullptr;
    const int64_t n = x.numel();
    const float* xf = x.f();
    float* y = ctx.out[0]->f();
    const float ratio = ctx.in.size() > 1 && ctx.in[1] ? check_ratio(static_cast<float>(ctx.in[1]->at(0))) : ratio_;
    bool train = ctx.training && !is_test_;
    if (ctx.in.size() > 2 && ctx.in[2] && ctx.in[2]->at(0) != 0) train = true;
    applied_ = train && ratio > 0.0f;
    if (!applied_) {
      chunked_loop(n, ctx.in_stats, xf, [&](int64_t lo, int64_t hi) { std::copy(xf + lo, xf + hi, y + lo); });
      // All ones: written once per plan (only this op writes its mask), not every step.
      if (mask && !mask_all_kept_) fill_mask(mask, n, nullptr);
      mask_all_kept_ = mask != nullptr;
      return;
    }
    mask_all_kept_ = false;
    if (!ctx.rng) throw InternalError(where() + ": training-mode forward without a random stream");
    // Keep when a uniform 64-bit draw is at or above ratio * 2^64: P(keep) = 1 - ratio
    // (ratio < 1: checked).
    const uint64_t threshold = static_cast<uint64_t>(std::ldexp(double(ratio), 64));
    const float scale = 1.0f / (1.0f - ratio);
    std::mt19937_64& rng = *ctx.rng;
    for (int64_t k = 0; k < n; ++k) keep_[size_t(k)] = rng() >= threshold ? scale : 0.0f;
    const float* keep = keep_.data();
    chunked_loop(n, ctx.out_stats, y, ctx.in_stats, xf, [&](int64_t lo, int64_t hi) {
      for (int64_t k = lo; k < hi; ++k) y[k] = xf[k] * keep[k];
    });
    if (mask) fill_mask(mask, n, keep_.data());
  }
  // X (FwdCtx::in_stats) chunk by chunk in the loop that reads it: a layer's output that
  // a Dropout reads next is reported there (runtime/probes.h).
  bool reports_input() const override { return true; }
  // Without dropping, out[0] is a copy of in[0]; else forward() reports out[0] and
  // backward() dout[0] chunk by chunk (runtime/sink_chunks.h).
  bool copies_input() const override { return !applied_; }
  // A ratio of 0 (a constant, or the attribute), or since 6's is_test: y = x in any mode.
  bool views_input() const override {
    return is_test_ || (has_ratio_input_ ? known_ratio_ && *known_ratio_ == 0.0f : ratio_ == 0.0f);
  }

  void backward(BwdCtx& ctx) override {
    if (!ctx.din[0] || !ctx.dout[0]) return;
    const float* dy = ctx.dout[0]->f();
    float* dx = ctx.din[0]->f();
    const float* keep = keep_.data();
    const bool applied = applied_, assign = ctx.assigns(0);  // (first writer: 0 + the term, dX not read)
    chunked_loop(ctx.in[0]->numel(), ctx.dout_stats, dy, [&](int64_t lo, int64_t hi) {
      if (applied && assign)
        for (int64_t k = lo; k < hi; ++k) dx[k] = 0.0f + dy[k] * keep[k];
      else if (applied)
        for (int64_t k = lo; k < hi; ++k) dx[k] += dy[k] * keep[k];
      else
        add_elems(dy + lo, dx + lo, hi - lo, assign);
    });
  }
  bool assigns_gradient(size_t i) const override { return i == 0; }

  bool differentiable_input(size_t i) const override { return i == 0; }
  bool stochastic() const override { return true; }

  OpTraits traits() const override {
    OpTraits t;
    t.role = OpTraits::Role::kElementwise;
    t.linear = true;
    if (!is_test_) t.drop_rate = known_ratio_ ? *known_ratio_ : ratio_;
    return t;
  }

 private:
  // The ONNX domain of the ratio, [0, 1): 1 would scale the kept values by infinity.
  float check_ratio(float r) const {
    if (!(r >= 0.0f && r < 1.0f))
      throw ModelError(where() + ": input 'ratio' is " + attr_number(r) + "; must be in [0, 1)");
    return r;
  }

  // keep == nullptr: every element kept.
  static void fill_mask(Tensor* mask, int64_t n, const float* keep) {
    if (mask->dtype() == DType::kBool) {
      int64_t* m = mask->i();
      for (int64_t k = 0; k < n; ++k) m[k] = !keep || keep[k] != 0.0f;
    } else {
      float* m = mask->f();
      for (int64_t k = 0; k < n; ++k) m[k] = !keep || keep[k] != 0.0f ? 1.0f : 0.0f;
    }
  }

  int version_;
  float ratio_;
  std::optional<float> known_ratio_;  // a constant 'ratio' input (opset 12+), seen at plan time
  bool has_ratio_input_ = false;      // a 'ratio' input is given (the attribute's then unused)
  bool is_test_;
  bool applied_ = false;    // whether the last forward dropped (else y = x)
  bool mask_all_kept_ = false;  // the mask output holds all ones since the last plan
  std::vector<float> keep_;  // per element: scale if kept, 0 if dropped (sized in infer)
};

std::unique_ptr<Op> make(const ir::Node& node) {
  Attrs attrs(node);
  const int version = node.since_version == 0 ? 13 : node.since_version;
  float ratio = 0.5f;
  bool is_test = false;
  if (version < 12) {
    ratio = attrs.in_range("ratio", 0.5f, 0.0f, 1.0f, /*hi_open=*/true);
  } else {
    attrs.i("seed", 0);
  }
  if (version < 7) is_test = attrs.i("is_test", 0) != 0;
  attrs.finish();
  return std::make_unique<DropoutOp>(node, version, ratio, is_test);
}

std::vector<OpSample> samples() {
  const std::vector<float> x = {-1.5f, 0.7f, 2.0f, -0.3f, 0.4f, -2.2f, 1.3f, 0.9f};
  std::vector<OpSample> out(4);
  out[0].label = "opset 13 training mode input, ratio 0.5, mask output";
  out[0].node = sample_node("Dropout", 3, 2, {{"seed", attr_i(3)}}, 13);
  out[0].inputs = {Tensor::floats({2, 4}, x), Tensor::floats({}, {0.5f}), Tensor::ints({}, {1})};
  out[0].check_grad = {true, false, false};
  out[1].label = "opset 13 inference (no training_mode): identity";
  out[1].node = sample_node("Dropout", 1, 1, {}, 13);
  out[1].inputs = {Tensor::floats({2, 4}, x)};
  out[1].check_grad = {true};
  out[2].label = "opset 7 ratio attribute, graph in training mode";
  out[2].node = sample_node("Dropout", 1, 2, {{"ratio", attr_f(0.25f)}}, 7);
  out[2].inputs = {Tensor::floats({2, 4}, x)};
  out[2].check_grad = {true};
  out[2].training = true;
  out[3].label = "opset 6 is_test=1 in a training graph: identity";
  out[3].node = sample_node("Dropout", 1, 1, {{"is_test", attr_i(1)}}, 6);
  out[3].inputs = {Tensor::floats({2, 4}, x)};
  out[3].check_grad = {true};
  out[3].training = true;
  return out;
}

}  // namespace

OpInfo op_info_dropout() { return {"Dropout", {6, 7, 10, 12, 13}, make, samples}; }

}  // namespace dl::rt
