// GlobalAveragePool (since 1): Y[n, c, 1, ..., 1] = mean of X[n, c, ...] over every
// spatial axis; any input rank >= 3.
#include "runtime/attrs.h"
#include "runtime/ops/eigen_map.h"
#include "runtime/ops/shape_util.h"

namespace dl::rt {
namespace {

class GlobalAveragePool : public Op {
 public:
  explicit GlobalAveragePool(const ir::Node& node) : Op(node) { Attrs(node).finish(); }

  void infer(InferCtx& ctx) override {
    check_inputs(ctx, 1, 1, 1, where());
    const Tensor& x = *ctx.in[0];
    if (x.dtype() != DType::kFloat32) throw ShapeError(where() + ": input must be float32");
    if (x.rank() < 3)
      throw ShapeError(where() + ": input must be (N, C, D1, ...) with at least one spatial axis, got " +
                       shape_str(x.shape()));
    Shape out(x.shape().size(), 1);
    out[0] = x.dim(0);
    out[1] = x.dim(1);
    ctx.out[0]->plan(DType::kFloat32, out);
    planes_ = x.dim(0) * x.dim(1);
    size_ = x.numel() / std::max<int64_t>(planes_, 1);
  }

  void forward(FwdCtx& ctx) override {
    const float* x = ctx.in[0]->f();
    float* y = ctx.out[0]->f();
    const float inv = size_ > 0 ? 1.0f / static_cast<float>(size_) : 0.0f;
    for (int64_t p = 0; p < planes_; ++p) {
      y[p] = sum_of(x + p * size_, size_) * inv;
    }
  }

  void backward(BwdCtx& ctx) override {
    if (!ctx.dout[0] || !ctx.din[0]) return;
    const float* dy = ctx.dout[0]->f();
    float* dx = ctx.din[0]->f();
    const float inv = size_ > 0 ? 1.0f / static_cast<float>(size_) : 0.0f;
    for (int64_t p = 0; p < planes_; ++p) {
      float* dxp = dx + p * size_;
      const float g = dy[p] * inv;
      for (int64_t k = 0; k < size_; ++k) dxp[k] += g;
    }
  }

  OpTraits traits() const override {
    OpTraits t;
    t.linear = true;
    return t;
  }

 private:
  int64_t planes_ = 0, size_ = 0;  // N*C planes of size_ spatial elements
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<GlobalAveragePool>(node); }

std::vector<OpSample> samples() {
  std::vector<float> v(24);
  for (size_t k = 0; k < v.size(); ++k) v[k] = 0.25f * static_cast<float>((k * 5) % 11) - 1.2f;
  OpSample a;
  a.label = "globalaveragepool 2x3x2x2";
  a.node = sample_node("GlobalAveragePool", 1, 1, {}, 1);
  a.inputs = {Tensor::floats({2, 3, 2, 2}, v)};
  a.check_grad = {true};
  OpSample b;
  b.label = "globalaveragepool 1-D 2x2x6";
  b.node = sample_node("GlobalAveragePool", 1, 1, {}, 1);
  b.inputs = {Tensor::floats({2, 2, 6}, v)};
  b.check_grad = {true};
  return {a, b};
}

}  // namespace

OpInfo op_info_global_average_pool() { return {"GlobalAveragePool", {1}, make, samples}; }

}  // namespace dl::rt
