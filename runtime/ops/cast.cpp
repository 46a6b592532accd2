// Cast (since 6, 9, 13) onto the runtime's dtypes: FLOAT and DOUBLE become float32;
// INT64, INT32, INT16, INT8, UINT32, UINT16, UINT8 become int64 holding the value the
// target type would hold, and BOOL becomes bool (0/1 in the int64 storage). Float ->
// integer truncates toward zero (NaN -> 0, out of int64 range saturates), narrowing
// integers wrap like C/NumPy, BOOL is x != 0.
// Other targets (FLOAT16, BFLOAT16, STRING, UINT64, complex) are rejected by name.
#include <cmath>
#include <cstdint>
#include <limits>

#include "runtime/attrs.h"
#include "runtime/ops/shape_util.h"

namespace dl::rt {
namespace {

// onnx.TensorProto.DataType values.
enum OnnxType : int64_t {
  kFloat = 1, kUint8 = 2, kInt8 = 3, kUint16 = 4, kInt16 = 5, kInt32 = 6, kInt64 = 7, kString = 8,
  kBool = 9, kFloat16 = 10, kDouble = 11, kUint32 = 12, kUint64 = 13, kComplex64 = 14, kComplex128 = 15,
  kBfloat16 = 16,
};

const char* onnx_type_name(int64_t t) {
  static const char* const kNames[] = {"UNDEFINED", "FLOAT",  "UINT8",  "INT8",      "UINT16",     "INT16",
                                       "INT32",     "INT64",  "STRING", "BOOL",      "FLOAT16",    "DOUBLE",
                                       "UINT32",    "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16"};
  return t >= 0 && t <= 16 ? kNames[t] : "unknown";
}

// The integer the target type holds for an int64 value.
int64_t narrow(int64_t v, int64_t to) {
  switch (to) {
    case kUint8: return static_cast<uint8_t>(v);
    case kInt8: return static_cast<int8_t>(v);
    case kUint16: return static_cast<uint16_t>(v);
    case kInt16: return static_cast<int16_t>(v);
    case kUint32: return static_cast<uint32_t>(v);
    case kInt32: return static_cast<int32_t>(v);
    case kBool: return v != 0;
    default: return v;
  }
}

int64_t float_to_int(float x, int64_t to) {
  if (to == kBool) return x != 0.0f;  // NaN is true, as in NumPy
  if (std::isnan(x)) return 0;
  constexpr float kLimit = 9.2233720368547758e18f;  // 2^63
  if (x >= kLimit) return narrow(std::numeric_limits<int64_t>::max(), to);
  if (x < -kLimit) return narrow(std::numeric_limits<int64_t>::min(), to);
  return narrow(static_cast<int64_t>(x), to);  // the conversion truncates toward zero
}

class Cast : public Op {
 public:
  explicit Cast(const ir::Node& node) : Op(node) {
    Attrs a(node);
    if (!a.has("to")) a.fail("to", "is required");
    to_ = a.i("to", 0);
    switch (to_) {
      case kFloat: case kDouble: to_float_ = true; break;
      case kUint8: case kInt8: case kUint16: case kInt16: case kUint32: case kInt32: case kInt64: case kBool: break;
      default:
        throw ModelError(where() + ": cast to " + onnx_type_name(to_) + " (" + std::to_string(to_) +
                         ") is not supported (supported: FLOAT, DOUBLE, INT64, INT32, INT16, INT8, UINT32, "
                         "UINT16, UINT8, BOOL)");
    }
    a.finish();
  }

  void infer(InferCtx& ctx) override {
    check_inputs(ctx, 1, 1, 1, where());
    ctx.out[0]->plan(to_float_ ? DType::kFloat32 : (to_ == kBool ? DType::kBool : DType::kInt64), ctx.in[0]->shape());
    from_float_ = ctx.in[0]->dtype() == DType::kFloat32;
  }

  void forward(FwdCtx& ctx) override {
    const Tensor& x = *ctx.in[0];
    Tensor& y = *ctx.out[0];
    const int64_t n = x.numel();
    const bool from_float = x.dtype() == DType::kFloat32;
    if (to_float_ && from_float) {
      copy_elems(x, 0, y, 0, n);
    } else if (to_float_) {
      for (int64_t k = 0; k < n; ++k) y.f()[k] = static_cast<float>(x.i()[k]);
    } else if (from_float) {
      for (int64_t k = 0; k < n; ++k) y.i()[k] = float_to_int(x.f()[k], to_);
    } else {
      for (int64_t k = 0; k < n; ++k) y.i()[k] = narrow(x.i()[k], to_);
    }
  }

  void backward(BwdCtx& ctx) override {
    if (!ctx.din[0] || !ctx.dout[0] || !to_float_ || ctx.in[0]->dtype() != DType::kFloat32) return;
    add_elems(ctx.dout[0]->f(), ctx.din[0]->f(), ctx.din[0]->numel());
  }

  OpTraits traits() const override {
    OpTraits t;
    t.linear = to_float_;
    t.passes_values = to_float_ && from_float_;  // (a copy: float -> float)
    if (to_ == kBool) t.out_lo = 0, t.out_hi = 1;
    if (to_ == kUint8) t.out_lo = 0, t.out_hi = 255;
    if (to_ == kInt8) t.out_lo = -128, t.out_hi = 127;
    return t;
  }
  // Only float -> float casts carry a gradient.
  bool differentiable_input(size_t) const override { return to_float_; }

 private:
  int64_t to_ = kFloat;
  bool to_float_ = false;
  bool from_float_ = false;  // (set by infer)
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<Cast>(node); }

std::vector<OpSample> samples() {
  const std::vector<float> v = {-2.7f, -1.2f, 0.4f, 1.5f, 2.9f, -0.6f};
  OpSample a;
  a.label = "cast float to DOUBLE (float32 here)";
  a.node = sample_node("Cast", 1, 1, {{"to", attr_i(kDouble)}});
  a.inputs = {Tensor::floats({2, 3}, v)};
  a.check_grad = {true};
  OpSample b;
  b.label = "cast float to INT64 truncates toward zero";
  b.node = sample_node("Cast", 1, 1, {{"to", attr_i(kInt64)}});
  b.inputs = {Tensor::floats({2, 3}, v)};
  b.check_grad = {false};
  OpSample c;
  c.label = "cast int64 to FLOAT";
  c.node = sample_node("Cast", 1, 1, {{"to", attr_i(kFloat)}});
  c.inputs = {Tensor::ints({3}, {-3, 0, 70000})};
  c.check_grad = {false};
  OpSample d;
  d.label = "cast float to BOOL (bool, x != 0)";
  d.node = sample_node("Cast", 1, 1, {{"to", attr_i(kBool)}});
  d.inputs = {Tensor::floats({3}, {0.0f, -0.5f, 2.0f})};
  d.check_grad = {false};
  OpSample e;
  e.label = "cast bool to FLOAT";
  e.node = sample_node("Cast", 1, 1, {{"to", attr_i(kFloat)}});
  e.inputs = {Tensor::bools({3}, {1, 0, 1})};
  e.check_grad = {false};
  return {a, b, c, d, e};
}

}  // namespace

OpInfo op_info_cast() { return {"Cast", {6, 9, 13}, make, samples}; }

}  // namespace dl::rt
