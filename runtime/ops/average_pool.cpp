// AveragePool (since 1, 7, 10, 11): the mean over each window; 1 to 3 spatial axes,
// auto_pad, ceil_mode (10+), count_include_pad (7+). Dilations arrive only in
// version 19, which is not implemented.
//
// The divisor is the number of in-range elements, or with count_include_pad the window
// clipped to the explicitly padded input: positions added by ceil_mode beyond the end
// padding never count (as ONNX Runtime and PyTorch). It factors per axis, so 1/count
// is precomputed per axis and output coordinate.
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
    reserve_window_output(ctx, where(), win_, x.dim(0), x.dim(1), 48, "its tap tables");
    const Shape out = win_.out_shape(x.dim(0), x.dim(1));
    ctx.out[0]->plan(DType::kFloat32, out);
    planes_ = x.dim(0) * x.dim(1);
    taps_.plan(win_);
    rows_.assign(static_cast<size_t>(win_.k[0] * win_.k[1]), 0);
    for (int a = 0; a < 3; ++a) {
      inv_count_[a].resize(static_cast<size_t>(win_.out[a]));
      for (int64_t o = 0; o < win_.out[a]; ++o) {
        const PoolTaps::Axis& t = taps_.axis[a][static_cast<size_t>(o)];
        const int64_t n =
            count_include_pad_ ? std::min(t.first + win_.k[a], win_.in[a] + win_.pad_end[a]) - t.first : t.hi - t.lo;
        inv_count_[a][static_cast<size_t>(o)] = n > 0 ? 1.0f / static_cast<float>(n) : 0.0f;
      }
    }
  }

  void forward(FwdCtx& ctx) override {
    const float* x = ctx.in[0]->f();
    float* y = ctx.out[0]->f();
    const int64_t ow_n = win_.out[2];
    for_each_row(
        [&](const float* __restrict xp, float* __restrict yr, const int64_t* rows, int64_t n_rows, float inv_dh) {
          for (int64_t ow = 0; ow < ow_n; ++ow) yr[ow] = 0.0f;
          for_each_tap(rows, n_rows, [&](int64_t base, int64_t lo, int64_t hi, int64_t sw) {
            for (int64_t ow = lo; ow < hi; ++ow) yr[ow] += xp[base + ow * sw];
          });
          const float* __restrict inv_w = inv_count_[2].data();
          for (int64_t ow = 0; ow < ow_n; ++ow) yr[ow] *= inv_dh * inv_w[ow];
        },
        x, y);
  }

  void backward(BwdCtx& ctx) override {
    if (!ctx.dout[0] || !ctx.din[0]) return;
    const float* dy = ctx.dout[0]->f();
    float* dx = ctx.din[0]->f();
    // Reads dy through the "output" pointer and scatters into dx through the "input" one.
    for_each_row(
        [&](float* __restrict dxp, const float* __restrict dyr, const int64_t* rows, int64_t n_rows, float inv_dh) {
          const float* __restrict inv_w = inv_count_[2].data();
          for_each_tap(rows, n_rows, [&](int64_t base, int64_t lo, int64_t hi, int64_t sw) {
            for (int64_t ow = lo; ow < hi; ++ow) dxp[base + ow * sw] += dyr[ow] * inv_dh * inv_w[ow];
          });
        },
        dx, dy);
  }

  OpTraits traits() const override {
    OpTraits t;
    t.linear = true;
    return t;
  }

 private:
  // Row-wise walk (see PoolTaps): f(plane input, output row, input row offsets of the
  // window's in-range (D, H) taps, their count, 1 / (D count * H count)).
  template <class F, class X, class Y>
  void for_each_row(F f, X* x, Y* y) {
    const int64_t S = win_.in_size(), P = win_.out_size();
    int64_t* rows = rows_.data();
    for (int64_t pl = 0; pl < planes_; ++pl)
      for (int64_t od = 0; od < win_.out[0]; ++od) {
        const PoolTaps::Axis dt = taps_.axis[0][static_cast<size_t>(od)];
        for (int64_t oh = 0; oh < win_.out[1]; ++oh) {
          const PoolTaps::Axis ht = taps_.axis[1][static_cast<size_t>(oh)];
          int64_t n = 0;
          for (int64_t td = dt.lo; td < dt.hi; ++td)
            for (int64_t th = ht.lo; th < ht.hi; ++th)
              rows[n++] = ((dt.first + td) * win_.in[1] + ht.first + th) * win_.in[2];
          const float inv_dh = inv_count_[0][static_cast<size_t>(od)] * inv_count_[1][static_cast<size_t>(oh)];
          f(x + pl * S, y + pl * P + (od * win_.out[1] + oh) * win_.out[2], rows, n, inv_dh);
        }
      }
  }

  // g(first input index of output 0 for this tap, lo, hi, stride) per (row, W tap).
  template <class G>
  void for_each_tap(const int64_t* rows, int64_t n_rows, G g) const {
    for (int64_t r = 0; r < n_rows; ++r)
      for (const PoolTaps::RowTap& t : taps_.row) g(rows[r] + t.offset, t.lo, t.hi, win_.stride[2]);
  }

  WindowAttrs attrs_;
  bool count_include_pad_ = false;
  Window win_;
  PoolTaps taps_;
  std::vector<float> inv_count_[3];  // per axis and output coordinate: 1 / elements counted
  std::vector<int64_t> rows_;        // scratch: input row offsets of one window's (D, H) taps
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
  a.node = sample_node("AveragePool", 1, 1,
                       {{"kernel_shape", attr_ints({3, 3})},
                        {"strides", attr_ints({2, 2})},
                        {"pads", attr_ints({1, 1, 1, 0})},
                        {"ceil_mode", attr_i(1)},
                        {"count_include_pad", attr_i(1)}},
                       11);
  a.inputs = {Tensor::floats({1, 2, 5, 6}, ramp(60))};
  a.check_grad = {true};
  OpSample b;
  b.label = "averagepool 2-D 2x3 SAME_LOWER, pads excluded";
  b.node =
      sample_node("AveragePool", 1, 1, {{"kernel_shape", attr_ints({2, 3})}, {"auto_pad", attr_s("SAME_LOWER")}}, 11);
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
