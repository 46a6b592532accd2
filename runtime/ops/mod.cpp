// Mod (since 10, 13): the remainder of a / b, numpy broadcasting. fmod = 0 (the default)
// is integer modulus with the divisor's sign (Python's %); fmod = 1 truncates (C fmod),
// the result taking the dividend's sign. ONNX requires fmod = 1 for floats. An integer
// remainder by 0 is 0 rather than a trap (as Div).
//
// Gradient (float32, fmod = 1), as torch.fmod's: d/da = 1, d/db = -trunc(a / b); the
// jumps where a / b crosses an integer have measure zero.
#include <cmath>
#include <cstdint>

#include "runtime/ops/binary.h"

namespace dl::rt {
namespace {

int64_t int_mod(int64_t a, int64_t b, bool fmod) {
  if (b == 0) return 0;
  if (b == -1) return 0;  // INT64_MIN % -1 overflows; every remainder by -1 is 0
  const int64_t r = a % b;  // C++ truncates: the sign of a
  if (fmod || r == 0 || (r < 0) == (b < 0)) return r;
  return r + b;
}

struct FwdF {
  float operator()(float a, float b) const { return std::fmod(a, b); }
};
struct FwdI {
  bool fmod;
  int64_t operator()(int64_t a, int64_t b) const { return int_mod(a, b, fmod); }
};
struct DA {
  float operator()(float, float, float) const { return 1.0f; }
};
struct DB {
  float operator()(float a, float b, float) const { return -std::trunc(a / b); }
};
using ModBase = BinaryOp<FwdF, FwdI, DA, DB>;

class ModOp : public ModBase {
 public:
  ModOp(const ir::Node& node, BinaryBroadcast bcast, bool fmod)
      : ModBase(node, bcast, elementwise_traits(false), FwdF{}, FwdI{fmod}, DA{}, DB{}), fmod_(fmod) {}

  void infer(InferCtx& ctx) override {
    ModBase::infer(ctx);
    if (ctx.in[0]->dtype() == DType::kBool) throw ShapeError(where() + ": inputs must be float32 or int64, got bool");
    if (ctx.in[0]->dtype() == DType::kFloat32 && !fmod_)
      throw ModelError(where() + ": attribute 'fmod' must be 1 for float inputs (ONNX Mod)");
  }

 private:
  bool fmod_;
};

std::unique_ptr<Op> make(const ir::Node& node) {
  Attrs attrs(node);
  const int64_t fmod = attrs.i("fmod", 0);
  if (fmod != 0 && fmod != 1) attrs.fail("fmod", "must be 0 or 1, got " + std::to_string(fmod));
  BinaryBroadcast bcast(attrs, node, 7);
  attrs.finish();
  return std::make_unique<ModOp>(node, bcast, fmod == 1);
}

std::vector<OpSample> samples() {
  std::vector<OpSample> out(3);
  out[0].label = "float fmod=1, quotients away from integers, mixed signs";
  out[0].node = sample_node("Mod", 2, 1, {{"fmod", attr_i(1)}});
  out[0].inputs = {Tensor::floats({2, 3}, {5.3f, -5.3f, 2.4f, 0.7f, -3.1f, 7.9f}),
                   Tensor::floats({3}, {2.0f, 1.5f, -1.1f})};
  out[0].check_grad = {true, true};
  out[1].label = "int64 fmod=0: the divisor's sign";
  out[1].node = sample_node("Mod", 2);
  out[1].inputs = {Tensor::ints({4}, {7, -7, 7, -7}), Tensor::ints({4}, {3, 3, -3, -3})};
  out[1].check_grad = {false, false};
  out[2].label = "int64 fmod=1: the dividend's sign";
  out[2].node = sample_node("Mod", 2, 1, {{"fmod", attr_i(1)}});
  out[2].inputs = {Tensor::ints({4}, {7, -7, 7, -7}), Tensor::ints({4}, {3, 3, -3, -3})};
  out[2].check_grad = {false, false};
  return out;
}

}  // namespace

OpInfo op_info_mod() { return {"Mod", {10, 13}, make, samples}; }

}  // namespace dl::rt
