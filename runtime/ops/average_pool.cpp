// AveragePool (since 1, 7, 10, 11): the mean over each window; 1 to 3 spatial axes,
// auto_pad, ceil_mode (10+), count_include_pad (7+). Dilations arrive only in
// version 19, which is not implemented.
//
// The divisor is the number of in-range elements, or with count_include_pad the window
// clipped to the explicitly padded input: positions added by ceil_mode beyond the end
// padding never count (as ONNX Runtime and PyTorch).
#include "runtime/attrs.h"
#include "runtime/ops/shape_util.h"
#include "runtime/ops/window.h"

namespace dl::rt {
namespace {

class AveragePool : public Op {
 public:
  explicit AveragePool(const ir::Node& node) : Op(node) {
    Attrs a(node);
    attrs_ = read_window_attrs(a, false, true);
    count_include_pad_ = a.i("count_include_pad", 0) != 0;
    a.finish();
  }

  void infer(InferCtx& ctx) override {
    check_inputs(ctx, 1, 1, 1, where());
    const Tensor& x = *ctx.in[0];
    if (x.dtype() != DType::kFloat32) throw ShapeError(where() + ": input must be float32");
    win_ = plan_window(where(), attrs_, x.shape(), attrs_.kernel);
    Shape out = {x.dim(0), x.dim(1)};
    for (int64_t d : win_.out_dims()) out.push_back(d);
    ctx.out[0]->plan(DType::kFloat32, out);
    planes_ = x.dim(0) * x.dim(1);
  }

  void forward(FwdCtx& ctx) override {
    const float* x = ctx.in[0]->f();
    float* y = ctx.out[0]->f();
    const int64_t S = win_.in_size(), P = win_.out_size();
    for (int64_t pl = 0; pl < planes_; ++pl) {
      const float* xp = x + pl * S;
      float* yp = y + pl * P;
      for_each_window([&](int64_t o, const Range (&r)[3], float inv) {
        float s = 0.0f;
        for (int64_t id = r[0].lo; id < r[0].hi; ++id)
          for (int64_t ih = r[1].lo; ih < r[1].hi; ++ih) {
            const float* row = xp + (id * win_.in[1] + ih) * win_.in[2];
            for (int64_t iw = r[2].lo; iw < r[2].hi; ++iw) s += row[iw];
          }
        yp[o] = s * inv;
      });
    }
  }

  void backward(BwdCtx& ctx) override {
    if (!ctx.dout[0] || !ctx.din[0]) return;
    const float* dy = ctx.dout[0]->f();
    float* dx = ctx.din[0]->f();
    const int64_t S = win_.in_size(), P = win_.out_size();
    for (int64_t pl = 0; pl < planes_; ++pl) {
      float* dxp = dx + pl * S;
      const float* dyp = dy + pl * P;
      for_each_window([&](int64_t o, const Range (&r)[3], float inv) {
        const float g = dyp[o] * inv;
        for (int64_t id = r[0].lo; id < r[0].hi; ++id)
          for (int64_t ih = r[1].lo; ih < r[1].hi; ++ih) {
            float* row = dxp + (id * win_.in[1] + ih) * win_.in[2];
            for (int64_t iw = r[2].lo; iw < r[2].hi; ++iw) row[iw] += g;
          }
      });
    }
  }

  OpTraits traits() const override {
    OpTraits t;
    t.linear = true;
    return t;
  }

 private:
  struct Range {
    int64_t lo, hi;  // in-range input coordinates [lo, hi) (no dilation before version 19)
  };

  // Calls f(output_index, in-range input ranges per axis, 1 / divisor) for every output
  // position of one plane.
  template <class F>
  void for_each_window(F f) const {
    Range r[3];
    int64_t padded[3];
    for (int64_t od = 0, o = 0; od < win_.out[0]; ++od) {
      clip(0, od, r[0], padded[0]);
      for (int64_t oh = 0; oh < win_.out[1]; ++oh) {
        clip(1, oh, r[1], padded[1]);
        for (int64_t ow = 0; ow < win_.out[2]; ++ow, ++o) {
          clip(2, ow, r[2], padded[2]);
          const int64_t n = count_include_pad_ ? padded[0] * padded[1] * padded[2]
                                               : (r[0].hi - r[0].lo) * (r[1].hi - r[1].lo) * (r[2].hi - r[2].lo);
          f(o, r, n > 0 ? 1.0f / static_cast<float>(n) : 0.0f);
        }
      }
    }
  }

  // Window of output o along axis a: in-range part, and its size within the padded input.
  void clip(int a, int64_t o, Range& r, int64_t& padded) const {
    const int64_t start = o * win_.stride[a] - win_.pad_begin[a];
    const int64_t end = start + win_.k[a];
    padded = std::min(end, win_.in[a] + win_.pad_end[a]) - start;
    r.lo = std::max<int64_t>(start, 0);
    r.hi = std::max(std::min(end, win_.in[a]), r.lo);
  }

  WindowAttrs attrs_;
  bool count_include_pad_ = false;
  Window win_;
  int64_t planes_ = 0;
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<AveragePool>(node); }

std::vector<float> ramp(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k)] = 0.3f * static_cast<float>((k * 7) % 13) - 1.8f;
  return v;
}

std::vector<OpSample> samples() {
  OpSample a;
  a.label = "averagepool 2-D 3x3 stride 2, pads 1, ceil_mode, count_include_pad";
  a.node = sample_node(
      "AveragePool", 1, 1,
      {{"kernel_shape", attr_ints({3, 3})}, {"strides", attr_ints({2, 2})}, {"pads", attr_ints({1, 1, 1, 0})},
       {"ceil_mode", attr_i(1)}, {"count_include_pad", attr_i(1)}},
      11);
  a.inputs = {Tensor::floats({1, 2, 5, 6}, ramp(60))};
  a.check_grad = {true};
  OpSample b;
  b.label = "averagepool 2-D 2x3 SAME_LOWER, pads excluded";
  b.node = sample_node("AveragePool", 1, 1,
                       {{"kernel_shape", attr_ints({2, 3})}, {"auto_pad", attr_s("SAME_LOWER")}}, 11);
  b.inputs = {Tensor::floats({2, 1, 3, 4}, ramp(24))};
  b.check_grad = {true};
  OpSample c;
  c.label = "averagepool 1-D kernel 2";
  c.node = sample_node("AveragePool", 1, 1, {{"kernel_shape", attr_ints({2})}}, 11);
  c.inputs = {Tensor::floats({1, 2, 5}, ramp(10))};
  c.check_grad = {true};
  return {a, b, c};
}

}  // namespace

OpInfo op_info_average_pool() { return {"AveragePool", {1, 7, 10, 11}, make, samples}; }

}  // namespace dl::rt
