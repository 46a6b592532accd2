// Pow (since 1, 7, 12, 13, 15): Z = X ^ Y with numpy broadcasting (legacy `broadcast`/
// `axis` attributes at since-version 1). X is float32 or int64; Y (the exponent) may be
// either type independently. Gradients flow to a float32 base, and to a float32
// exponent where the base is positive (d/dy x^y = x^y ln x is undefined for x <= 0).
#include <cmath>
#include <cstdint>

#include "runtime/ops/binary.h"

namespace dl::rt {
namespace {

int64_t int_pow(int64_t base, int64_t exp) {
  if (exp < 0) return base == 1 ? 1 : base == -1 ? (exp % 2 ? -1 : 1) : 0;  // numpy-like truncation
  // Unsigned arithmetic wraps like numpy's int64 instead of being undefined on overflow.
  uint64_t r = 1, b = static_cast<uint64_t>(base);
  for (uint64_t e = static_cast<uint64_t>(exp); e; e >>= 1) {
    if (e & 1) r *= b;
    b *= b;
  }
  return static_cast<int64_t>(r);
}

// double -> int64 without undefined behaviour: NaN gives 0, out-of-range values saturate.
int64_t to_int64_saturating(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9223372036854775807.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return static_cast<int64_t>(v);
}

class PowOp : public Op {
 public:
  PowOp(const ir::Node& node, BinaryBroadcast bcast) : Op(node), bcast_(bcast) {}

  void infer(InferCtx& ctx) override {
    if (ctx.in.size() != 2 || !ctx.in[0] || !ctx.in[1]) throw ShapeError(where() + ": expects two inputs");
    plan_ = bcast_.plan(ctx.in[0]->shape(), ctx.in[1]->shape(), where());
    ctx.out[0]->plan(ctx.in[0]->dtype(), plan_.out);
  }

  void forward(FwdCtx& ctx) override {
    const Tensor& x = *ctx.in[0];
    const Tensor& e = *ctx.in[1];
    Tensor& z = *ctx.out[0];
    const bool fx = x.dtype() == DType::kFloat32, fe = e.dtype() == DType::kFloat32;
    if (fx && fe) {
      broadcast_apply(plan_, x.f(), e.f(), z.f(), [](float a, float b) { return std::pow(a, b); });
    } else if (fx) {
      broadcast_apply(plan_, x.f(), e.i(), z.f(),
                      [](float a, int64_t b) { return static_cast<float>(std::pow(double(a), double(b))); });
    } else if (fe) {
      broadcast_apply(plan_, x.i(), e.f(), z.i(),
                      [](int64_t a, float b) { return to_int64_saturating(std::pow(double(a), double(b))); });
    } else {
      broadcast_apply(plan_, x.i(), e.i(), z.i(), int_pow);
    }
  }

  void backward(BwdCtx& ctx) override {
    if (!ctx.dout[0] || ctx.in[0]->dtype() != DType::kFloat32) return;
    const float* x = ctx.in[0]->f();
    const float* z = ctx.out[0]->f();
    const float* dz = ctx.dout[0]->f();
    if (ctx.in[1]->dtype() == DType::kInt64) {
      const int64_t* e = ctx.in[1]->i();
      if (ctx.din[0])
        broadcast_accumulate(plan_, 0, ctx.din[0]->f(), [&](int64_t o, int64_t ia, int64_t ib) {
          return dz[o] * float(e[ib]) * std::pow(x[ia], float(e[ib] - 1));
        });
      return;
    }
    const float* e = ctx.in[1]->f();
    if (ctx.din[0])
      broadcast_accumulate(plan_, 0, ctx.din[0]->f(), [&](int64_t o, int64_t ia, int64_t ib) {
        return dz[o] * e[ib] * std::pow(x[ia], e[ib] - 1.0f);
      });
    if (ctx.din.size() > 1 && ctx.din[1])
      broadcast_accumulate(plan_, 1, ctx.din[1]->f(), [&](int64_t o, int64_t ia, int64_t) {
        return x[ia] > 0.0f ? dz[o] * z[o] * std::log(x[ia]) : 0.0f;
      });
  }

  OpTraits traits() const override { return elementwise_traits(false); }

 private:
  BinaryBroadcast bcast_;
  BroadcastPlan plan_;
};

std::unique_ptr<Op> make(const ir::Node& node) {
  Attrs attrs(node);
  BinaryBroadcast bcast(attrs, node, 7);
  attrs.finish();
  return std::make_unique<PowOp>(node, bcast);
}

std::vector<OpSample> samples() {
  std::vector<OpSample> out(4);
  out[0].label = "positive base, float exponents, equal shapes";
  out[0].node = sample_node("Pow", 2);
  out[0].inputs = {Tensor::floats({2, 3}, {0.5f, 1.2f, 2.0f, 0.8f, 1.7f, 1.1f}),
                   Tensor::floats({2, 3}, {1.5f, 0.2f, -0.4f, 0.9f, 2.2f, -1.3f})};
  out[0].check_grad = {true, true};
  out[1].label = "square by scalar float exponent, negative bases";
  out[1].node = sample_node("Pow", 2);
  out[1].inputs = {Tensor::floats({2, 2}, {-0.5f, 1.2f, -2.0f, 0.8f}), Tensor::floats({}, {2.0f})};
  out[1].check_grad = {true, false};  // d/dexponent undefined for negative bases
  out[2].label = "int64 exponent row [2,3] ^ [3]";
  out[2].node = sample_node("Pow", 2);
  out[2].inputs = {Tensor::floats({2, 3}, {-0.5f, 1.2f, 2.0f, 0.8f, -1.7f, 1.1f}), Tensor::ints({3}, {1, 2, 3})};
  out[2].check_grad = {true, false};
  out[3].label = "legacy broadcast=1 (since 1) [2,3] ^ [3]";
  out[3].node = sample_node("Pow", 2, 1, {{"broadcast", attr_i(1)}}, 1);
  out[3].inputs = {Tensor::floats({2, 3}, {0.5f, 1.2f, 2.0f, 0.8f, 1.7f, 1.1f}),
                   Tensor::floats({3}, {0.5f, 2.0f, -1.0f})};
  out[3].check_grad = {true, true};
  return out;
}

}  // namespace

OpInfo op_info_pow() { return {"Pow", {1, 7, 12, 13, 15}, make, samples}; }

}  // namespace dl::rt
