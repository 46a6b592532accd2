// Conv (since 1, 11): Y[n, m] = sum_c W[m, c] (*) X[n, g*Cg + c] + B[m], grouped, with
// strides, dilations and explicit or automatic padding. 1 to 3 spatial axes.
//
// Lowered to im2col + Eigen GEMM per image, group and tile of output rows: col
// (Cg*K x positions) holds the receptive fields, Y_g[:, tile] = W_g (Mg x Cg*K) * col.
// The col buffer is sized in infer() (capped, see kColBudget) and reused for both the
// forward columns and the backward column gradient, which col2im scatters back into dX.
// A 1x1 stride-1 convolution on a large map skips im2col; a depthwise one (one input
// channel per group) runs the direct kernel of runtime/ops/depthwise.h, one with a single
// input channel (LeNet's first) those of runtime/ops/conv_direct.h for Y and dW.
//
// Output maps under kBatchCols positions (resnet18 at 32x32: 16x16 down to 1x1) would make
// thin per-image GEMMs (a GEMV at 1x1, dW products of depth 1 to 64), so their images are
// batched: the columns of up to batch_imgs_ images side by side in one buffer, one GEMM
// for them all, Y or dY copied between NCHW and the product's layout (pointwise ones too:
// im2col is a copy). Taps that read only padding for every output (a 3x3 kernel, pad 1,
// on a 1x1 map: all but the centre) are left out of those GEMMs (LiveTaps, im2col.h).
//
// The per-image GEMMs of small images (LeNet: M = 6 and 16) are too small to split, so
// the batch is: images go in fixed parts (run_parts) run on the compute threads, each
// with its own column buffer and dW/dB sums, added in part order afterwards.
#include "runtime/ops/conv_op.h"

namespace dl::rt {

std::vector<OpSample> conv_samples();  // conv_samples.cpp

namespace conv_detail {

void Conv::infer(InferCtx& ctx) {
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
  has_bias_ = ctx.in.size() > 2 && ctx.in[2];
  if (has_bias_ && ctx.in[2]->shape() != Shape{m_})
    throw ShapeError(where() + ": bias B " + shape_str(ctx.in[2]->shape()) + " must have shape [" +
                     std::to_string(m_) + "]");
  win_ = plan_window(where(), attrs_, x.shape(), kernel);
  reserve_window_output(ctx, where(), win_, batch_, m_, 48, "its im2col and tap tables");
  const Shape out = win_.out_shape(batch_, m_);
  ctx.out[0]->plan(DType::kFloat32, out);
  // The column buffer holds whole output rows, as many as fit kColBudget floats.
  const int64_t rows = win_.out[0] * win_.out[1], per_row = (c_ / group_) * win_.k_size() * win_.out[2];
  tile_rows_ = std::max<int64_t>(1, std::min(rows, kColBudget / std::max<int64_t>(per_row, 1)));
  origins_.plan(win_);
  // C = 1 with one group (LeNet's first layer) is not depthwise: see direct1_ below.
  depthwise_ = group_ > 1 && c_ == group_;
  if (depthwise_) taps_.plan(win_);
  blocked_ = depthwise_ && m_ == group_ && depthwise_prefers_blocked(win_);
  direct1_ = c_ == 1 && group_ == 1 && single_channel_direct(win_);
  kk_ = (c_ / group_) * win_.k_size();
  const int64_t P = win_.out_size();
  batch_imgs_ = 1;
  const bool thin = m_ / group_ < kThinMaps;  // LeNet-5's 6 and 16
  if (!depthwise_ && !direct1_ && P < (thin ? kBatchMaxPositions : kBatchCols) && tile_rows_ == rows)
    batch_imgs_ = std::max<int64_t>(1, std::min({batch_, (kBatchCols + P - 1) / P, kColBudget / std::max<int64_t>(kk_ * P, 1)}));
  if (batch_imgs_ > 1) {
    live_.plan(win_);
    bkk_ = (c_ / group_) * live_.win.k_size();
    col_size_ = bkk_ * batch_imgs_ * P;
    tmp_size_ = (m_ / group_) * (batch_imgs_ * P + (live_.reduced ? bkk_ : 0));
    wl_.assign(live_.reduced ? static_cast<size_t>(m_ * bkk_) : 0, 0.0f);
    wl_of_ = nullptr;
  } else {
    col_size_ = blocked_ ? depthwise_blocked_scratch(win_) : win_.pointwise() || depthwise_ ? 0 : per_row * tile_rows_;
    tmp_size_ = 0;
  }
  // Batched images: parts of at least batch_imgs_ images each (a part's GEMMs are then
  // split across the threads themselves when large enough).
  const int64_t max_parts = batch_imgs_ > 1 ? std::max<int64_t>(1, batch_ / batch_imgs_) : batch_;
  parts_ = std::max<int64_t>(1, std::min({max_parts, kMaxParts, kColBudget / std::max<int64_t>(col_size_, 1),
                                           kColBudget / std::max<int64_t>(m_ * kk_ + m_, 1)}));
  col_.assign(static_cast<size_t>(col_size_ * parts_), 0.0f);
  tmp_.assign(static_cast<size_t>(tmp_size_ * parts_), 0.0f);
  part_sums_.assign(parts_ > 1 ? static_cast<size_t>((m_ * kk_ + m_) * parts_) : 0, 0.0f);
}
void Conv::forward(FwdCtx& ctx) {
  Pass pass{this, ctx.in[0]->f(), ctx.in[1]->f(), ctx.in.size() > 2 && ctx.in[2] ? ctx.in[2]->f() : nullptr,
            ctx.out[0]->f()};
  pass.stats = ctx.out_stats;
  pass.wb = batched_weights(pass.wt, false);
  run_parts(&pass, [](const void* c, int64_t part) {
    const Pass& ps = *static_cast<const Pass*>(c);
    ps.op->forward_images(ps, part);
  });
}
void Conv::backward(BwdCtx& ctx) {
  if (!ctx.dout[0]) return;
  Pass pass{this, ctx.in[0]->f(), ctx.in[1]->f(), nullptr, nullptr};
  pass.dy = ctx.dout[0]->f();
  pass.dx = ctx.din[0] ? ctx.din[0]->f() : nullptr;
  pass.dw = ctx.din[1] ? ctx.din[1]->f() : nullptr;
  pass.db = ctx.din.size() > 2 && ctx.din[2] ? ctx.din[2]->f() : nullptr;
  pass.stats = ctx.dout_stats;
  if (!pass.dx && !pass.dw && !pass.db) return;
  pass.wb = batched_weights(pass.wt, true);
  // As the gradients' first writer (BwdCtx::assign): dX is zeroed by each part for its
  // own images (or written by 1x1 products without adding), dW and dB by the sum of the
  // parts (one part adds into them: zeroed here).
  pass.assign = ctx.assign;
  const int64_t kk = (c_ / group_) * win_.k_size();
  // (Live taps: the first image batch writes dW whole, zeros at the dead taps included.)
  pass.set_dw = parts_ == 1 && pass.dw && ctx.assigns(1) && batch_imgs_ > 1 && live_.reduced;
  if (parts_ == 1 && pass.dw && ctx.assigns(1) && !pass.set_dw) std::fill_n(pass.dw, m_ * kk, 0.0f);
  if (parts_ == 1 && pass.db && ctx.assigns(2)) std::fill_n(pass.db, m_, 0.0f);
  run_parts(&pass, [](const void* c, int64_t part) {
    const Pass& ps = *static_cast<const Pass*>(c);
    ps.op->backward_images(ps, part);
  });
  // Each part's dW and dB sums, added in part order: the same result for any number
  // of threads. (One part accumulates into dW and dB directly.)
  for (int64_t part = 0; parts_ > 1 && part < parts_; ++part) {
    const float* pdw = part_dw(part);
    if (pass.dw) add_elems(pdw, pass.dw, m_ * kk, part == 0 && ctx.assigns(1));
    if (pass.db) add_elems(pdw + m_ * kk, pass.db, m_, part == 0 && ctx.assigns(2));
  }
}
}  // namespace conv_detail

namespace {

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<conv_detail::Conv>(node); }

}  // namespace

OpInfo op_info_conv() { return {"Conv", {1, 11}, make, conv_samples}; }

}  // namespace dl::rt
