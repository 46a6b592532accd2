// LeakyRelu (since 6, 16): y = x for x >= 0, alpha * x otherwise (alpha default 0.01).
// Unbounded with a non-zero slope everywhere: no dead zone, no saturation.
#include <limits>

#include "runtime/attrs.h"
#include "runtime/ops/unary.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) {
  Attrs attrs(node);
  const float alpha = attrs.finite("alpha", 0.01f);
  attrs.finish();
  const double inf = std::numeric_limits<double>::infinity();
  return make_unary(
      node, activation_traits(-inf, inf), [alpha](float x) { return x >= 0.0f ? x : alpha * x; },
      [alpha](float x, float) { return x >= 0.0f ? 1.0f : alpha; });
}

std::vector<OpSample> samples() {
  std::vector<OpSample> out(2);
  out[0].label = "default alpha";
  out[0].node = sample_node("LeakyRelu", 1);
  out[0].inputs = {Tensor::floats({2, 3}, {-1.5f, 0.7f, 2.0f, -0.3f, 0.4f, -2.2f})};
  out[0].check_grad = {true};
  out[1].label = "alpha 0.3";
  out[1].node = sample_node("LeakyRelu", 1, 1, {{"alpha", attr_f(0.3f)}});
  out[1].inputs = {Tensor::floats({4}, {-1.5f, 0.7f, -0.4f, 2.5f})};
  out[1].check_grad = {true};
  return out;
}

}  // namespace

OpInfo op_info_leaky_relu() { return {"LeakyRelu", {6, 16}, make, samples}; }

}  // namespace dl::rt
