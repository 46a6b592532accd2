// Conv's op-test samples (runtime/ops/conv.cpp): strides, pads, groups, dilations, 1-D,
// pointwise, depthwise, batched images and one input channel, each with a gradient check.
#include "runtime/attrs.h"
#include "runtime/op.h"

namespace dl::rt {
namespace {

std::vector<float> ramp(int64_t n, float scale, float shift) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k)] = scale * static_cast<float>((k * 7) % 11) + shift;
  return v;
}

}  // namespace

std::vector<OpSample> conv_samples() {
  OpSample a;
  a.label = "conv 2-D 1x2x5x5 * 3x2x3x3, pads 1, strides 2, bias";
  a.node = sample_node("Conv", 3, 1, {{"pads", attr_ints({1, 1, 1, 1})}, {"strides", attr_ints({2, 2})}}, 11);
  a.inputs = {Tensor::floats({1, 2, 5, 5}, ramp(50, 0.3f, -1.4f)), Tensor::floats({3, 2, 3, 3}, ramp(54, 0.1f, -0.5f)),
              Tensor::floats({3}, {0.2f, -0.1f, 0.3f})};
  a.check_grad = {true, true, true};
  OpSample b;
  b.label = "conv 2-D group 2, dilations 2, SAME_LOWER, batch 2";
  b.node = sample_node("Conv", 2, 1,
                       {{"group", attr_i(2)},
                        {"dilations", attr_ints({2, 1})},
                        {"auto_pad", attr_s("SAME_LOWER")},
                        {"kernel_shape", attr_ints({2, 3})}},
                       11);
  b.inputs = {Tensor::floats({2, 4, 4, 3}, ramp(96, 0.25f, -1.2f)),
              Tensor::floats({2, 2, 2, 3}, ramp(24, 0.15f, -0.6f))};
  b.check_grad = {true, true};
  OpSample c;
  c.label = "conv 1-D stride 2, SAME_UPPER, bias";
  c.node = sample_node("Conv", 3, 1, {{"strides", attr_ints({2})}, {"auto_pad", attr_s("SAME_UPPER")}}, 11);
  c.inputs = {Tensor::floats({2, 2, 7}, ramp(28, 0.3f, -1.5f)), Tensor::floats({3, 2, 2}, ramp(12, 0.2f, -0.9f)),
              Tensor::floats({3}, {0.1f, 0.0f, -0.2f})};
  c.check_grad = {true, true, true};
  OpSample d;
  d.label = "conv 1x1 pointwise";
  d.node = sample_node("Conv", 2, 1, {}, 11);
  d.inputs = {Tensor::floats({2, 3, 2, 2}, ramp(24, 0.3f, -1.4f)), Tensor::floats({2, 3, 1, 1}, ramp(6, 0.2f, -0.7f))};
  d.check_grad = {true, true};
  OpSample e;  // the direct depthwise kernel (group = C), with a channel multiplier
  e.label = "conv depthwise group 2 (x2 multiplier), strides 2, pads 1, bias";
  e.node = sample_node("Conv", 3, 1,
                       {{"group", attr_i(2)}, {"pads", attr_ints({1, 1, 1, 1})}, {"strides", attr_ints({2, 2})}}, 11);
  e.inputs = {Tensor::floats({2, 2, 5, 4}, ramp(80, 0.25f, -1.3f)),
              Tensor::floats({4, 1, 3, 3}, ramp(36, 0.15f, -0.7f)),
              Tensor::floats({4}, {0.1f, -0.2f, 0.05f, 0.3f})};
  e.check_grad = {true, true, true};
  OpSample f;  // batched images (small output maps): a strided 1x1 (resnet's downsample), batch 3
  f.label = "conv 1x1 strides 2, batch 3, bias";
  f.node = sample_node("Conv", 3, 1, {{"strides", attr_ints({2, 2})}}, 11);
  f.inputs = {Tensor::floats({3, 2, 3, 3}, ramp(54, 0.3f, -1.4f)), Tensor::floats({3, 2, 1, 1}, ramp(6, 0.2f, -0.7f)),
              Tensor::floats({3}, {0.2f, -0.1f, 0.3f})};
  f.check_grad = {true, true, true};
  OpSample g;  // one input channel, one group: the direct kernels (runtime/ops/conv_direct.h)
  g.label = "conv one input channel 2x1x6x7 * 3x1x3x3, pads 1, bias";
  g.node = sample_node("Conv", 3, 1, {{"pads", attr_ints({1, 1, 1, 1})}}, 11);
  g.inputs = {Tensor::floats({2, 1, 6, 7}, ramp(84, 0.3f, -1.4f)), Tensor::floats({3, 1, 3, 3}, ramp(27, 0.1f, -0.5f)),
              Tensor::floats({3}, {0.2f, -0.1f, 0.3f})};
  g.check_grad = {true, true, true};
  return {a, b, c, d, e, f, g};
}

}  // namespace dl::rt
