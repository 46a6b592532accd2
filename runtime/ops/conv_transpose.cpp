// ConvTranspose (since 1, 11): the adjoint of Conv. Y[n, g*Mg + m] = sum_c W[g*Cg + c, m]
// (*)^T X[n, g*Cg + c] + B[m]; W is [C, M/group, k...]. 1 to 3 spatial axes.
//
// Output size per axis: stride * (in - 1) + output_padding + (k - 1) * dilation + 1
// - pad_begin - pad_end, or output_shape when given (then, and with auto_pad SAME_*, the
// pads are derived from the total padding as the spec says; a negative total, an output
// larger than the kernels reach, leaves the extra positions at the bias, like
// output_padding).
//
// Lowered on the Conv machinery with the roles of X and Y swapped: the window's "input"
// is Y and its "output" positions are X's. Forward: col = W_g^T * X_g (Mg*K x positions)
// scattered into Y by col2im; backward: col = im2col(dY_g), dX_g += W_g * col,
// dW_g += X_g * col^T. Tiles of whole X rows bound the column buffer as in Conv.
#include "runtime/attrs.h"
#include "runtime/ops/conv_batched.h"
#include "runtime/ops/eigen_map.h"
#include "runtime/ops/gemm_kernel.h"
#include "runtime/ops/im2col.h"
#include "runtime/ops/shape_util.h"
#include "runtime/ops/window.h"

namespace dl::rt {
namespace {

class ConvTranspose : public Op, private ConvLimits {  // (kColBudget, as Conv)
 public:
  explicit ConvTranspose(const ir::Node& node) : Op(node) {
    Attrs a(node);
    attrs_ = read_conv_attrs(a, group_);
    output_padding_ = a.ints("output_padding");
    output_shape_ = a.ints("output_shape");
    constexpr int64_t kMax = std::numeric_limits<int32_t>::max();  // as read_window_attrs bounds the others
    for (int64_t v : output_padding_)
      if (v < 0 || v > kMax) a.fail("output_padding", "must be non-negative and at most " + std::to_string(kMax));
    for (int64_t v : output_shape_)
      if (v < 1 || v > kMax) a.fail("output_shape", "must be positive and at most " + std::to_string(kMax));
    a.finish();
  }

  void infer(InferCtx& ctx) override {
    check_inputs(ctx, 2, 3, 2, where());
    for (size_t i = 0; i < ctx.in.size(); ++i)
      if (ctx.in[i] && ctx.in[i]->dtype() != DType::kFloat32) throw ShapeError(where() + ": inputs must be float32");
    const Tensor& x = *ctx.in[0];
    const Tensor& wt = *ctx.in[1];
    if (x.rank() != wt.rank())
      throw ShapeError(where() + ": X " + shape_str(x.shape()) + " and W " + shape_str(wt.shape()) +
                       " must have the same rank");
    if (x.rank() < 3 || x.rank() > 5)
      throw ShapeError(where() + ": only 1-D, 2-D and 3-D transposed convolutions are supported, got X " +
                       shape_str(x.shape()));
    batch_ = x.dim(0);
    c_ = x.dim(1);
    m_ = wt.dim(1) * group_;
    if (wt.dim(0) != c_ || c_ % group_ != 0)
      throw ShapeError(where() + ": X " + shape_str(x.shape()) + " and W " + shape_str(wt.shape()) +
                       " do not fit group " + std::to_string(group_) + " (need W[0] = C, C divisible by group)");
    if (ctx.in.size() > 2 && ctx.in[2] && ctx.in[2]->shape() != Shape{m_})
      throw ShapeError(where() + ": bias B " + shape_str(ctx.in[2]->shape()) + " must have shape [" +
                       std::to_string(m_) + "]");
    plan_geometry(x.shape(), Shape(wt.shape().begin() + 2, wt.shape().end()));
    Shape y = {batch_, m_};
    for (int a = 3 - win_.spatial; a < 3; ++a) y.push_back(win_.in[a]);
    ctx.out[0]->plan(DType::kFloat32, y);

    kk_ = (m_ / group_) * win_.k_size();
    const int64_t rows = win_.out[0] * win_.out[1], per_row = kk_ * win_.out[2];
    tile_rows_ = std::max<int64_t>(1, std::min(rows, kColBudget / std::max<int64_t>(per_row, 1)));
    ctx.reserve(where(), double(per_row) * double(tile_rows_) * sizeof(float) + double(rows) * 16,
                "its column buffer and im2col tables", double(shape_numel(y)) * sizeof(float));
    origins_.plan(win_);
    col_.assign(static_cast<size_t>(per_row * tile_rows_), 0.0f);
  }

  void forward(FwdCtx& ctx) override {
    const float* x = ctx.in[0]->f();
    const float* wt = ctx.in[1]->f();
    const float* b = ctx.in.size() > 2 && ctx.in[2] ? ctx.in[2]->f() : nullptr;
    float* y = ctx.out[0]->f();
    const int64_t cg = c_ / group_, mg = m_ / group_, P = win_.out_size(), Q = win_.in_size();
    for (int64_t n = 0; n < batch_; ++n) {
      for (int64_t m = 0; m < m_; ++m) std::fill_n(y + (n * m_ + m) * Q, Q, b ? b[m] : 0.0f);
      for (int64_t g = 0; g < group_; ++g) {
        const float* xg = x + (n * c_ + g * cg) * P;
        const MatRef wg_t{wt + g * cg * kk_, kk_, true};
        for_each_tile([&](int64_t r0, int64_t r1, int64_t p0, int64_t cols) {
          gemm(kk_, cols, cg, 1.0f, wg_t, {xg + p0, P, false}, col_.data(), cols, false);
          col2im_add(win_, origins_, mg, r0, r1, col_.data(), y + (n * m_ + g * mg) * Q, cols);
        });
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
    const int64_t cg = c_ / group_, mg = m_ / group_, P = win_.out_size(), Q = win_.in_size();
    for (int64_t n = 0; n < batch_; ++n) {
      if (db)
        for (int64_t m = 0; m < m_; ++m) db[m] += sum_of(dy + (n * m_ + m) * Q, Q);
      if (!dx && !dw) continue;
      for (int64_t g = 0; g < group_; ++g) {
        const int64_t xoff = (n * c_ + g * cg) * P;
        const float* dyg = dy + (n * m_ + g * mg) * Q;
        const float* wg = wt + g * cg * kk_;
        for_each_tile([&](int64_t r0, int64_t r1, int64_t p0, int64_t cols) {
          im2col(win_, origins_, mg, r0, r1, dyg, col_.data(), cols);
          if (dx) gemm(cg, cols, kk_, 1.0f, {wg, kk_, false}, {col_.data(), cols, false}, dx + xoff + p0, P, true);
          if (dw)
            gemm(cg, kk_, cols, 1.0f, {x + xoff + p0, P, false}, {col_.data(), cols, true}, dw + g * cg * kk_, kk_,
                 true);
        });
      }
    }
  }

  OpTraits traits() const override { return linear_layer_traits(); }
  // W [C, M/group, k...]: fan_in = M/group * prod(k) (PyTorch's and Keras' transposed
  // kernels), fan_out = C * prod(k).
  ParamRole param_role(size_t i, const Shape& s) const override { return kernel_param_role(i, s); }

 private:
  // The window seen from Y: in = Y's spatial size, out = X's, so that Conv's im2col and
  // col2im map X positions to the Y pixels their kernel taps reach.
  void plan_geometry(const Shape& x, const std::vector<int64_t>& kernel) {
    const size_t nd = x.size() - 2;
    auto check_len = [&](const std::vector<int64_t>& v, size_t n, const char* name) {
      if (!v.empty() && v.size() != n)
        throw ShapeError(where() + ": attribute '" + name + "' has " + std::to_string(v.size()) + " values, expected " +
                         std::to_string(n) + " for X " + shape_str(x));
    };
    if (!attrs_.kernel.empty() && attrs_.kernel != kernel)
      throw ShapeError(where() + ": kernel_shape " + shape_str(attrs_.kernel) + " disagrees with W's " +
                       shape_str(kernel));
    check_len(attrs_.strides, nd, "strides");
    check_len(attrs_.dilations, nd, "dilations");
    check_len(attrs_.pads, 2 * nd, "pads");
    check_len(output_padding_, nd, "output_padding");
    // output_shape is spatial, or (as some exporters write it) N, C and spatial.
    std::vector<int64_t> out_shape = output_shape_;
    if (out_shape.size() == nd + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
    check_len(out_shape, nd, "output_shape");
    win_ = Window{};
    win_.spatial = static_cast<int>(nd);
    const int off = 3 - win_.spatial;
    for (size_t i = 0; i < nd; ++i) {
      const int a = off + static_cast<int>(i);
      win_.out[a] = x[2 + i];
      win_.k[a] = kernel[i];
      if (win_.k[a] > std::numeric_limits<int32_t>::max())
        throw ShapeError(where() + ": kernel of " + std::to_string(win_.k[a]) + " along axis " +
                         std::to_string(2 + i) + " is larger than any output could be");
      win_.stride[a] = attrs_.strides.empty() ? 1 : attrs_.strides[i];
      win_.dil[a] = attrs_.dilations.empty() ? 1 : attrs_.dilations[i];
      const int64_t adj = output_padding_.empty() ? 0 : output_padding_[i];
      if (adj >= std::max(win_.stride[a], win_.dil[a]))
        throw ShapeError(where() + ": output_padding " + std::to_string(adj) + " along axis " + std::to_string(2 + i) +
                         " must be smaller than the stride or the dilation");
      if (double(win_.stride[a]) * double(win_.out[a]) + double(win_.k[a]) * double(win_.dil[a]) > 0x1p61)
        throw ResourceError(where() + ": strides and kernel make axis " + std::to_string(2 + i) +
                            " of the output longer than can be addressed, for X " + shape_str(x));
      const int64_t full = win_.stride[a] * (win_.out[a] - 1) + adj + (win_.k[a] - 1) * win_.dil[a] + 1;
      const bool same = attrs_.auto_pad == "SAME_UPPER" || attrs_.auto_pad == "SAME_LOWER";
      if (!out_shape.empty() || same) {
        win_.in[a] = !out_shape.empty() ? out_shape[i] : win_.out[a] * win_.stride[a];
        const int64_t total = std::max<int64_t>(0, full - win_.in[a]);
        // The spec: SAME_UPPER puts the smaller half first, otherwise the larger.
        win_.pad_begin[a] = attrs_.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      } else {
        if (attrs_.auto_pad == "NOTSET" && !attrs_.pads.empty()) {
          win_.pad_begin[a] = attrs_.pads[i];
          win_.pad_end[a] = attrs_.pads[nd + i];
        }
        win_.in[a] = full - win_.pad_begin[a] - win_.pad_end[a];
      }
      win_.pad_end[a] = 0;  // only pad_begin places the taps; positions past the end are dropped
      if (win_.in[a] < 1)
        throw ShapeError(where() + ": pads leave no output along axis " + std::to_string(2 + i) + " of X " +
                         shape_str(x));
    }
  }

  // f(first X row, end row, first X position, positions) per tile of whole X rows.
  template <class F>
  void for_each_tile(F f) const { for_each_row_tile(win_, tile_rows_, f); }

  WindowAttrs attrs_;
  int64_t group_ = 1;
  std::vector<int64_t> output_padding_, output_shape_;
  Window win_;
  int64_t batch_ = 0, c_ = 0, m_ = 0, kk_ = 0, tile_rows_ = 1;
  RowOrigins origins_;
  std::vector<float> col_;  // (M/group * kernel size) x (tile_rows_ * X width)
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<ConvTranspose>(node); }

std::vector<float> ramp(int64_t n, float scale, float shift) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k)] = scale * static_cast<float>((k * 5) % 13) + shift;
  return v;
}

std::vector<OpSample> samples() {
  OpSample a;
  a.label = "convtranspose 2-D 1x2x3x3 * 2x3x3x3, strides 2, pads 1, output_padding 1, bias";
  a.node = sample_node(
      "ConvTranspose", 3, 1,
      {{"pads", attr_ints({1, 1, 1, 1})}, {"strides", attr_ints({2, 2})}, {"output_padding", attr_ints({1, 1})}}, 11);
  a.inputs = {Tensor::floats({1, 2, 3, 3}, ramp(18, 0.3f, -1.4f)), Tensor::floats({2, 3, 3, 3}, ramp(54, 0.1f, -0.5f)),
              Tensor::floats({3}, {0.2f, -0.1f, 0.3f})};
  a.check_grad = {true, true, true};
  OpSample b;
  b.label = "convtranspose 2-D group 2, dilations 2, strides (2, 1), batch 2";
  b.node = sample_node("ConvTranspose", 2, 1,
                       {{"group", attr_i(2)}, {"dilations", attr_ints({2, 1})}, {"strides", attr_ints({2, 1})}}, 11);
  b.inputs = {Tensor::floats({2, 4, 3, 2}, ramp(48, 0.25f, -1.2f)),
              Tensor::floats({4, 1, 2, 3}, ramp(24, 0.15f, -0.6f))};
  b.check_grad = {true, true};
  OpSample c;
  c.label = "convtranspose 1-D stride 3, SAME_UPPER, bias";
  c.node = sample_node(
      "ConvTranspose", 3, 1,
      {{"strides", attr_ints({3})}, {"auto_pad", attr_s("SAME_UPPER")}, {"kernel_shape", attr_ints({4})}}, 11);
  c.inputs = {Tensor::floats({2, 2, 4}, ramp(16, 0.3f, -1.5f)), Tensor::floats({2, 2, 4}, ramp(16, 0.2f, -0.9f)),
              Tensor::floats({2}, {0.1f, -0.2f})};
  c.check_grad = {true, true, true};
  OpSample e;
  e.label = "convtranspose 1-D output_shape 9 (past the kernels' reach)";
  e.node = sample_node("ConvTranspose", 2, 1, {{"strides", attr_ints({2})}, {"output_shape", attr_ints({9})}}, 11);
  e.inputs = {Tensor::floats({1, 2, 3}, ramp(6, 0.3f, -0.8f)), Tensor::floats({2, 1, 2}, ramp(4, 0.2f, -0.3f))};
  e.check_grad = {true, true};
  OpSample d;
  d.label = "convtranspose 3-D 1x1x2x2x2 * 1x2x2x2x2, strides 2";
  d.node = sample_node("ConvTranspose", 2, 1, {{"strides", attr_ints({2, 2, 2})}}, 11);
  d.inputs = {Tensor::floats({1, 1, 2, 2, 2}, ramp(8, 0.3f, -1.1f)),
              Tensor::floats({1, 2, 2, 2, 2}, ramp(16, 0.2f, -0.7f))};
  d.check_grad = {true, true};
  return {a, b, c, d, e};
}

}  // namespace

OpInfo op_info_conv_transpose() { return {"ConvTranspose", {1, 11}, make, samples}; }

}  // namespace dl::rt
