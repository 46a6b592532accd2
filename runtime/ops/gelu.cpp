// Gelu (since 20): y = x * Phi(x), approximate "none" (Phi(x) = (1 + erf(x / sqrt 2)) / 2)
// or "tanh" (Phi(x) ~ (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) / 2). The ONNX library
// this build links (1.12) knows opsets up to 17 only, so the converter refuses an
// opset-20 model before any node runs; the op is here for when it does not, and models
// at the supported opsets run GELU through Erf (PyTorch's Div/Erf/Add/Mul/Mul export).
// Unbounded above; below, the minimum is -0.17 at x = -0.75, and no dead zone (the
// gradient vanishes only towards -inf).
#include <cmath>
#include <limits>
#include <string>

#include "runtime/attrs.h"
#include "runtime/ops/unary.h"

namespace dl::rt {
namespace {

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;  // 1 / sqrt(2 pi): the normal density's peak
constexpr float kSqrt2OverPi = 0.79788456080286536f;
constexpr float kCubic = 0.044715f;

std::unique_ptr<Op> make(const ir::Node& node) {
  Attrs attrs(node);
  const std::string approximate = attrs.s("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    attrs.fail("approximate", "must be \"none\" or \"tanh\", got \"" + approximate + "\"");
  attrs.finish();
  const OpTraits t = activation_traits(-0.17, std::numeric_limits<double>::infinity());
  if (approximate == "tanh")
    return make_unary(
        node, t,
        [](float x) { return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + kCubic * x * x * x))); },
        [](float x, float) {
          const float th = std::tanh(kSqrt2OverPi * (x + kCubic * x * x * x));
          const float dinner = kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x);
          return 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * dinner;
        });
  return make_unary(
      node, t, [](float x) { return 0.5f * x * (1.0f + std::erf(x * kInvSqrt2)); },
      [](float x, float) {
        return 0.5f * (1.0f + std::erf(x * kInvSqrt2)) + x * kInvSqrt2Pi * std::exp(-0.5f * x * x);
      });
}

std::vector<OpSample> samples() {
  const std::vector<float> x = {-2.5f, -0.75f, -0.2f, 0.3f, 1.1f, 2.4f};
  std::vector<OpSample> out(2);
  out[0].label = "exact (approximate none)";
  out[0].node = sample_node("Gelu", 1, 1, {}, 20);
  out[0].inputs = {Tensor::floats({2, 3}, x)};
  out[0].check_grad = {true};
  out[1].label = "approximate tanh";
  out[1].node = sample_node("Gelu", 1, 1, {{"approximate", attr_s("tanh")}}, 20);
  out[1].inputs = {Tensor::floats({2, 3}, x)};
  out[1].check_grad = {true};
  return out;
}

}  // namespace

OpInfo op_info_gelu() { return {"Gelu", {20}, make, samples}; }

}  // namespace dl::rt
