// Conv (since 1, 11): Y[n, m] = sum_c W[m, c] (*) X[n, g*Cg + c] + B[m], grouped, with
// strides, dilations and explicit or automatic padding. 1 to 3 spatial axes.
//
// Lowered to im2col + one Eigen GEMM per image and group: col (Cg*K x P) holds the
// receptive fields, Y_g (Mg x P) = W_g (Mg x Cg*K) * col. The col buffer is sized in
// infer() and reused for both the forward columns and the backward column gradient
// (which col2im scatters back into dX). A 1x1 stride-1 convolution skips im2col.
#include "runtime/attrs.h"
#include "runtime/ops/eigen_map.h"
#include "runtime/ops/shape_util.h"
#include "runtime/ops/window.h"

namespace dl::rt {
namespace {

// Walks the (channel, kernel offset) rows of the column matrix and the output positions
// that read inside the input, calling f(col_row, input_row, start, lo, hi, step) for
// each run of output positions along W: col_row[ow] <-> input_row[ow * step + start]
// for ow in [lo, hi). Positions that read padding are reported through pad(col_ptr, n).
// X is const float (im2col) or float (col2im).
template <class X, class F, class Pad>
void walk_columns(const Window& w, int64_t channels, float* col, X* x, F f, Pad pad) {
  const int64_t P = w.out_size(), ohw = w.out[1] * w.out[2];
  int64_t row = 0;
  for (int64_t c = 0; c < channels; ++c) {
    X* xc = x + c * w.in_size();
    for (int64_t kd = 0; kd < w.k[0]; ++kd)
      for (int64_t kh = 0; kh < w.k[1]; ++kh)
        for (int64_t kw = 0; kw < w.k[2]; ++kw, ++row) {
          float* r = col + row * P;
          int64_t wlo, whi;
          w.valid_range(2, kw * w.dil[2], wlo, whi);
          for (int64_t od = 0; od < w.out[0]; ++od) {
            const int64_t id = od * w.stride[0] - w.pad_begin[0] + kd * w.dil[0];
            float* rd = r + od * ohw;
            if (id < 0 || id >= w.in[0]) {
              pad(rd, ohw);
              continue;
            }
            for (int64_t oh = 0; oh < w.out[1]; ++oh) {
              const int64_t ih = oh * w.stride[1] - w.pad_begin[1] + kh * w.dil[1];
              float* rh = rd + oh * w.out[2];
              if (ih < 0 || ih >= w.in[1]) {
                pad(rh, w.out[2]);
                continue;
              }
              pad(rh, wlo);
              pad(rh + whi, w.out[2] - whi);
              f(rh, xc + (id * w.in[1] + ih) * w.in[2], kw * w.dil[2] - w.pad_begin[2], wlo, whi, w.stride[2]);
            }
          }
        }
  }
}

void im2col(const Window& w, int64_t channels, const float* x, float* col) {
  walk_columns(
      w, channels, col, x,
      [](float* r, const float* xr, int64_t start, int64_t lo, int64_t hi, int64_t s) {
        for (int64_t o = lo; o < hi; ++o) r[o] = xr[o * s + start];
      },
      [](float* r, int64_t n) { std::fill(r, r + n, 0.0f); });
}

// dx += col2im(dcol): every column entry goes back to the input pixel it was read from.
void col2im_add(const Window& w, int64_t channels, float* dcol, float* dx) {
  walk_columns(
      w, channels, dcol, dx,
      [](float* r, float* dr, int64_t start, int64_t lo, int64_t hi, int64_t s) {
        for (int64_t o = lo; o < hi; ++o) dr[o * s + start] += r[o];
      },
      [](float*, int64_t) {});
}

class Conv : public Op {
 public:
  explicit Conv(const ir::Node& node) : Op(node) {
    Attrs a(node);
    attrs_ = read_window_attrs(a, true, false);
    group_ = a.i("group", 1);
    if (group_ < 1) a.fail("group", "must be positive");
    a.finish();
  }

  void infer(InferCtx& ctx) override {
    check_inputs(ctx, 2, 3, 2, where());
    const Tensor& x = *ctx.in[0];
    const Tensor& wt = *ctx.in[1];
    for (size_t i = 0; i < ctx.in.size(); ++i)
      if (ctx.in[i] && ctx.in[i]->dtype() != DType::kFloat32) throw ShapeError(where() + ": inputs must be float32");
    if (x.rank() != wt.rank())
      throw ShapeError(where() + ": X " + shape_str(x.shape()) + " and W " + shape_str(wt.shape()) +
                       " must have the same rank");
    if (x.rank() < 3 || x.rank() > 5)
      throw ShapeError(where() + ": only 1-D, 2-D and 3-D convolutions are supported, got X " + shape_str(x.shape()));
    batch_ = x.dim(0);
    c_ = x.dim(1);
    m_ = wt.dim(0);
    if (c_ % group_ != 0 || m_ % group_ != 0 || wt.dim(1) != c_ / group_)
      throw ShapeError(where() + ": X " + shape_str(x.shape()) + " and W " + shape_str(wt.shape()) +
                       " do not fit group " + std::to_string(group_) + " (need W[1] = C/group, M divisible by group)");
    std::vector<int64_t> kernel(wt.shape().begin() + 2, wt.shape().end());
    if (!attrs_.kernel.empty() && attrs_.kernel != kernel)
      throw ShapeError(where() + ": kernel_shape " + shape_str(attrs_.kernel) + " disagrees with W " +
                       shape_str(wt.shape()));
    if (ctx.in.size() > 2 && ctx.in[2] && ctx.in[2]->shape() != Shape{m_})
      throw ShapeError(where() + ": bias B " + shape_str(ctx.in[2]->shape()) + " must have shape [" +
                       std::to_string(m_) + "]");
    win_ = plan_window(where(), attrs_, x.shape(), kernel);
    const Shape out = win_.out_shape(batch_, m_);
    ctx.out[0]->plan(DType::kFloat32, out);
    col_.assign(win_.pointwise() ? 0 : static_cast<size_t>((c_ / group_) * win_.k_size() * win_.out_size()), 0.0f);
  }

  void forward(FwdCtx& ctx) override {
    const float* x = ctx.in[0]->f();
    const float* wt = ctx.in[1]->f();
    float* y = ctx.out[0]->f();
    const int64_t cg = c_ / group_, mg = m_ / group_, kk = cg * win_.k_size(), P = win_.out_size();
    for (int64_t n = 0; n < batch_; ++n)
      for (int64_t g = 0; g < group_; ++g) {
        const float* xg = x + (n * c_ + g * cg) * win_.in_size();
        const float* col = xg;
        if (!col_.empty()) {
          im2col(win_, cg, xg, col_.data());
          col = col_.data();
        }
        MatMap yg(y + (n * m_ + g * mg) * P, mg, P);
        yg.noalias() = CMatMap(wt + g * mg * kk, mg, kk) * CMatMap(col, kk, P);
      }
    if (ctx.in.size() > 2 && ctx.in[2]) {
      const float* b = ctx.in[2]->f();
      for (int64_t n = 0; n < batch_; ++n)
        for (int64_t m = 0; m < m_; ++m) {
          float* yr = y + (n * m_ + m) * P;
          for (int64_t p = 0; p < P; ++p) yr[p] += b[m];
        }
    }
  }

  void backward(BwdCtx& ctx) override {
    if (!ctx.dout[0]) return;
    const float* x = ctx.in[0]->f();
    const float* wt = ctx.in[1]->f();
    const float* dy = ctx.dout[0]->f();
    float* dx = ctx.din[0] ? ctx.din[0]->f() : nullptr;
    float* dw = ctx.din[1] ? ctx.din[1]->f() : nullptr;
    float* db = ctx.din.size() > 2 && ctx.din[2] ? ctx.din[2]->f() : nullptr;
    const int64_t cg = c_ / group_, mg = m_ / group_, kk = cg * win_.k_size(), P = win_.out_size();
    if (db)
      for (int64_t n = 0; n < batch_; ++n)
        for (int64_t m = 0; m < m_; ++m) db[m] += sum_of(dy + (n * m_ + m) * P, P);
    if (!dx && !dw) return;
    for (int64_t n = 0; n < batch_; ++n)
      for (int64_t g = 0; g < group_; ++g) {
        const int64_t xoff = (n * c_ + g * cg) * win_.in_size();
        CMatMap dyg(dy + (n * m_ + g * mg) * P, mg, P);
        CMatMap wg(wt + g * mg * kk, mg, kk);
        if (dw) {
          const float* col = x + xoff;
          if (!col_.empty()) {
            im2col(win_, cg, x + xoff, col_.data());
            col = col_.data();
          }
          MatMap(dw + g * mg * kk, mg, kk).noalias() += dyg * CMatMap(col, kk, P).transpose();
        }
        if (dx) {
          if (col_.empty()) {
            MatMap(dx + xoff, kk, P).noalias() += wg.transpose() * dyg;
          } else {
            MatMap(col_.data(), kk, P).noalias() = wg.transpose() * dyg;
            col2im_add(win_, cg, col_.data(), dx + xoff);
          }
        }
      }
  }

  OpTraits traits() const override {
    OpTraits t;
    t.role = OpTraits::Role::kParameterized;
    t.linear = true;
    return t;
  }

 private:
  WindowAttrs attrs_;
  int64_t group_ = 1;
  Window win_;
  int64_t batch_ = 0, c_ = 0, m_ = 0;
  std::vector<float> col_;  // im2col scratch: (C/group * kernel size) x output positions
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<Conv>(node); }

std::vector<float> ramp(int64_t n, float scale, float shift) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k)] = scale * static_cast<float>((k * 7) % 11) + shift;
  return v;
}

std::vector<OpSample> samples() {
  OpSample a;
  a.label = "conv 2-D 1x2x5x5 * 3x2x3x3, pads 1, strides 2, bias";
  a.node = sample_node("Conv", 3, 1, {{"pads", attr_ints({1, 1, 1, 1})}, {"strides", attr_ints({2, 2})}}, 11);
  a.inputs = {Tensor::floats({1, 2, 5, 5}, ramp(50, 0.3f, -1.4f)), Tensor::floats({3, 2, 3, 3}, ramp(54, 0.1f, -0.5f)),
              Tensor::floats({3}, {0.2f, -0.1f, 0.3f})};
  a.check_grad = {true, true, true};
  OpSample b;
  b.label = "conv 2-D group 2, dilations 2, SAME_LOWER, batch 2";
  b.node = sample_node(
      "Conv", 2, 1,
      {{"group", attr_i(2)}, {"dilations", attr_ints({2, 1})}, {"auto_pad", attr_s("SAME_LOWER")},
       {"kernel_shape", attr_ints({2, 3})}},
      11);
  b.inputs = {Tensor::floats({2, 4, 4, 3}, ramp(96, 0.25f, -1.2f)), Tensor::floats({2, 2, 2, 3}, ramp(24, 0.15f, -0.6f))};
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
  return {a, b, c, d};
}

}  // namespace

OpInfo op_info_conv() { return {"Conv", {1, 11}, make, samples}; }

}  // namespace dl::rt
