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
#include "runtime/attrs.h"
#include "runtime/ops/conv_batched.h"
#include "runtime/ops/conv_direct.h"
#include "runtime/ops/depthwise.h"
#include "runtime/ops/eigen_map.h"
#include "runtime/ops/gemm_kernel.h"
#include "runtime/ops/im2col.h"
#include "runtime/ops/shape_util.h"
#include "runtime/ops/window.h"
#include "runtime/parallel.h"
#include "runtime/value_simd.h"

namespace dl::rt {

std::vector<OpSample> conv_samples();  // conv_samples.cpp

namespace {

class Conv : public Op, private ConvLimits {
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

  // The bias is written into Y first and the products accumulate onto it.
  void forward(FwdCtx& ctx) override {
    Pass pass{this, ctx.in[0]->f(), ctx.in[1]->f(), ctx.in.size() > 2 && ctx.in[2] ? ctx.in[2]->f() : nullptr,
              ctx.out[0]->f()};
    pass.stats = ctx.out_stats;
    pass.wb = batched_weights(pass.wt);
    run_parts(&pass, [](const void* c, int64_t part) {
      const Pass& ps = *static_cast<const Pass*>(c);
      ps.op->forward_images(ps, part);
    });
  }

  void backward(BwdCtx& ctx) override {
    if (!ctx.dout[0]) return;
    Pass pass{this, ctx.in[0]->f(), ctx.in[1]->f(), nullptr, nullptr};
    pass.dy = ctx.dout[0]->f();
    pass.dx = ctx.din[0] ? ctx.din[0]->f() : nullptr;
    pass.dw = ctx.din[1] ? ctx.din[1]->f() : nullptr;
    pass.db = ctx.din.size() > 2 && ctx.din[2] ? ctx.din[2]->f() : nullptr;
    pass.stats = ctx.dout_stats;
    if (!pass.dx && !pass.dw && !pass.db) return;
    // The live taps' weights forward gathered (wl_): a step's weights do not change
    // between its forward and its backward, which reads forward's state anyway.
    pass.wb = batch_imgs_ > 1 && live_.reduced ? wl_.data() : pass.wt;
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
  bool assigns_gradient(size_t i) const override { return i < 3; }

  OpTraits traits() const override { return linear_layer_traits(); }
  // W [M, C/group, k...]: fan_in = C/group * prod(k), fan_out = M * prod(k) (Keras).
  ParamRole param_role(size_t i, const Shape& s) const override { return kernel_param_role(i, s); }

 private:
  // One forward or backward pass, shared by the image parts.
  struct Pass {
    const Conv* op;
    const float *x, *wt, *b;
    float* y;
    const float* dy = nullptr;
    float *dx = nullptr, *dw = nullptr, *db = nullptr;
    ValueSink* stats = nullptr;  // Y's statistics (forward) or dY's (backward), per image
    const float* wb = nullptr;   // the batched path's W: wt, or its live taps (wl_)
    uint32_t assign = 0;         // backward: BwdCtx::assign
    bool set_dw = false;         // backward: the first image batch's live taps set dW (scatter_set)
  };

  // The batched path's weights: W itself, or its live taps' columns (LiveTaps).
  const float* batched_weights(const float* wt) const {
    if (batch_imgs_ <= 1 || !live_.reduced) return wt;
    live_.gather(wt, m_, c_ / group_, wl_.data());
    return wl_.data();
  }

  // Images are processed in parts_ fixed ranges (fixed by the batch size, not by the
  // thread count), in parallel when the whole pass is large enough to pay for waking the
  // helpers, each part with its own column buffer and its own dW/dB sums.
  void run_parts(const Pass* pass, void (*fn)(const void*, int64_t)) const {
    const int64_t kk = (c_ / group_) * win_.k_size();
    // The blocked depthwise kernels cost more per multiply-add than a GEMM, and their
    // channel blocks' gathers and scatters (most of a 1x1 map's time) are work too: they
    // pay for a helper from kBlockedParallelValues values read and written.
    const int threads = parts_ <= 1 ? 1
                        : blocked_  ? loop_threads(batch_ * c_ * (win_.in_size() + win_.out_size()), kBlockedParallelValues)
                                    : gemm_threads(m_, win_.out_size() * batch_, kk);
    parallel_blocks(parts_, threads, fn, pass);
  }
  float* part_col(int64_t part) const { return col_.data() + part * col_size_; }
  float* part_tmp(int64_t part) const { return tmp_.data() + part * tmp_size_; }
  float* part_dw(int64_t part) const { return part_sums_.data() + part * (m_ * kk_ + m_); }

  void forward_images(const Pass& ps, int64_t part) const {
    const int64_t cg = c_ / group_, mg = m_ / group_, kk = kk_, P = win_.out_size();
    float* col = part_col(part);
    int64_t n0, n1;
    even_range(batch_, parts_, part, n0, n1);
    if (batch_imgs_ > 1) {
      forward_batched(ps, part, n0, n1);
      return;
    }
    if (blocked_) {
      depthwise_forward_blocked(win_, taps_, n1 - n0, c_, ps.x + n0 * c_ * win_.in_size(), ps.wt, ps.b,
                                ps.y + n0 * m_ * P, col);
      for (int64_t n = n0; ps.stats && n < n1; ++n) ps.stats->add(part, ps.y + n * m_ * P, m_ * P);
      return;
    }
    for (int64_t n = n0; n < n1; ++n) {
      if (direct1_) single_channel_forward(win_, m_, ps.x + n * win_.in_size(), ps.wt, ps.b, ps.y + n * m_ * P);
      if (ps.b && !direct1_)
        for (int64_t m = 0; m < m_; ++m) std::fill_n(ps.y + (n * m_ + m) * P, P, ps.b[m]);
      for (int64_t g = 0; !direct1_ && g < group_; ++g) {
        const float* xg = ps.x + (n * c_ + g * cg) * win_.in_size();
        float* yg = ps.y + (n * m_ + g * mg) * P;
        const MatRef wg{ps.wt + g * mg * kk, kk, false};
        if (depthwise_) {
          if (!ps.b) std::fill_n(yg, mg * P, 0.0f);
          for (int64_t j = 0; j < mg; ++j) depthwise_forward(win_, taps_, xg, wg.p + j * kk, yg + j * P);
          continue;
        }
        if (col_size_ == 0) {
          gemm(mg, P, kk, 1.0f, wg, {xg, P, false}, yg, P, ps.b != nullptr);
          continue;
        }
        for_each_tile([&](int64_t r0, int64_t r1, int64_t p0, int64_t cols) {
          im2col(win_, origins_, cg, r0, r1, xg, col, cols);
          gemm(mg, cols, kk, 1.0f, wg, {col, cols, false}, yg + p0, P, ps.b != nullptr);
        });
      }
      if (ps.stats) ps.stats->add(part, ps.y + n * m_ * P, m_ * P);  // the image's output, still in cache
    }
  }

  // dX of the part's images, and the part's own dW and dB sums (part_dw), which
  // backward() adds up in part order.
  void backward_images(const Pass& ps, int64_t part) const {
    const int64_t cg = c_ / group_, mg = m_ / group_, kk = kk_, P = win_.out_size();
    float* col = part_col(part);
    // This part's dW and dB sums (see backward()); with one part, dW and dB themselves.
    float* dw_sum = parts_ > 1 ? part_dw(part) : ps.dw;
    float* db_sum = parts_ > 1 ? part_dw(part) + m_ * kk : ps.db;
    if (parts_ > 1) std::fill_n(part_dw(part), m_ * kk + m_, 0.0f);
    int64_t n0, n1;
    even_range(batch_, parts_, part, n0, n1);
    // dX's first writer: 1x1 products write it, the other paths add onto this part's
    // images' dX zeroed here.
    const bool product_dx = batch_imgs_ <= 1 && !depthwise_ && col_size_ == 0;
    const bool assign_dx = ps.dx && (ps.assign & 1u);
    if (assign_dx && !product_dx) std::fill(ps.dx + n0 * c_ * win_.in_size(), ps.dx + n1 * c_ * win_.in_size(), 0.0f);
    const bool fused = ps.stats && ps.db && ps.stats->light();
    // The batched path takes dY's light statistics from its copy of dY (backward_batched).
    const bool batch_stats = batch_imgs_ > 1 && ps.stats && !fused && ps.stats->light() && (ps.dx || ps.dw);
    for (int64_t n = n0; n < n1; ++n) {
      if (fused) {  // dB's channel sums and the light statistics of dY in one read of dY
        stats::Sums sums;
        sum_rows_light(ps.dy + n * m_ * P, m_, P, db_sum, sums);
        ps.stats->add_sums(part, sums, m_ * P);
      } else {
        if (ps.stats && !batch_stats) ps.stats->add(part, ps.dy + n * m_ * P, m_ * P);
        if (ps.db)
          for (int64_t m = 0; m < m_; ++m) db_sum[m] += sum_of(ps.dy + (n * m_ + m) * P, P);
      }
      if (!ps.dx && !ps.dw) continue;
      if (batch_imgs_ > 1) continue;  // below, all images at once
      if (blocked_) continue;  // below, all images at once
      for (int64_t g = 0; g < group_; ++g) {
        const int64_t xoff = (n * c_ + g * cg) * win_.in_size();
        const float* dyg = ps.dy + (n * m_ + g * mg) * P;
        const MatRef wg{ps.wt + g * mg * kk, kk, false};
        float* dwg = ps.dw ? dw_sum + g * mg * kk : nullptr;
        if (direct1_ && dwg) single_channel_dw(win_, mg, ps.x + xoff, dyg, dwg);
        float* dw_gemm = direct1_ ? nullptr : dwg;  // dW still to compute by GEMM
        if (depthwise_) {
          for (int64_t j = 0; j < mg; ++j)
            depthwise_backward(win_, taps_, ps.x + xoff, wg.p + j * kk, dyg + j * P, ps.dx ? ps.dx + xoff : nullptr,
                               dwg ? dwg + j * kk : nullptr);
          continue;
        }
        if (col_size_ == 0) {
          if (dw_gemm) gemm(mg, kk, P, 1.0f, {dyg, P, false}, {ps.x + xoff, P, true}, dw_gemm, kk, true);
          if (ps.dx) gemm(kk, P, mg, 1.0f, {wg.p, kk, true}, {dyg, P, false}, ps.dx + xoff, P, !assign_dx);
          continue;
        }
        // One buffer: the tile's columns for dW, then overwritten by its column gradient.
        for_each_tile([&](int64_t r0, int64_t r1, int64_t p0, int64_t cols) {
          const MatRef dyt{dyg + p0, P, false};
          if (dw_gemm) {
            im2col(win_, origins_, cg, r0, r1, ps.x + xoff, col, cols);
            gemm(mg, kk, cols, 1.0f, dyt, {col, cols, true}, dw_gemm, kk, true);
          }
          if (ps.dx) {
            gemm(kk, cols, mg, 1.0f, {wg.p, kk, true}, dyt, col, cols, false);
            col2im_add(win_, origins_, cg, r0, r1, col, ps.dx + xoff, cols);
          }
        });
      }
    }
    if (batch_imgs_ > 1 && (ps.dx || ps.dw)) backward_batched(ps, part, n0, n1, dw_sum, batch_stats);
    if (blocked_ && (ps.dx || ps.dw)) {
      const int64_t xoff = n0 * c_ * win_.in_size();
      depthwise_backward_blocked(win_, taps_, n1 - n0, c_, ps.x + xoff, ps.wt, ps.dy + n0 * m_ * P,
                                 ps.dx ? ps.dx + xoff : nullptr, ps.dw ? dw_sum : nullptr, col);
    }
  }

  // Forward of images [n0, n1) in batches of batch_imgs_: col (kk x nc*P) holds image j's
  // columns at column j*P, tmp (Mg x nc*P) = W_g * col, then Y = tmp (+ B) per image.
  void forward_batched(const Pass& ps, int64_t part, int64_t n0, int64_t n1) const {
    const int64_t cg = c_ / group_, mg = m_ / group_, kk = bkk_, P = win_.out_size(), rows = win_.out[0] * win_.out[1];
    const Window& lw = live_.win;
    float* col = part_col(part);
    float* tmp = part_tmp(part);
    const bool light = ps.stats && ps.stats->light();  // Y's light statistics from tmp (light_rows)
    for (int64_t nb = n0; nb < n1; nb += batch_imgs_) {
      const int64_t nc = std::min(batch_imgs_, n1 - nb), cols = nc * P;
      simd::LightSums sums;
      for (int64_t g = 0; g < group_; ++g) {
        each_image(nc, kk * cols, [&](int64_t j) {
          im2col(lw, live_.origins, cg, 0, rows, ps.x + ((nb + j) * c_ + g * cg) * win_.in_size(), col + j * P, cols);
        });
        gemm(mg, cols, kk, 1.0f, {ps.wb + g * mg * kk, kk, false}, {col, cols, false}, tmp, cols, false);
        if (light) light_rows(tmp, mg, cols, ps.b ? ps.b + g * mg : nullptr, sums);
        each_image(nc, mg * cols, [&](int64_t j) {
          batched_to_image(tmp, mg, cols, j, P, ps.b ? ps.b + g * mg : nullptr, ps.y + ((nb + j) * m_ + g * mg) * P);
        });
      }
      if (light) ps.stats->add_sums(part, sums.finish(), nc * m_ * P);
      for (int64_t j = 0; ps.stats && !light && j < nc; ++j) ps.stats->add(part, ps.y + (nb + j) * m_ * P, m_ * P);
    }
  }

  // With light, dY's light statistics come from tmp too (backward_images leaves them).
  void backward_batched(const Pass& ps, int64_t part, int64_t n0, int64_t n1, float* dw_sum, bool light) const {
    const int64_t cg = c_ / group_, mg = m_ / group_, kk = bkk_, P = win_.out_size(), rows = win_.out[0] * win_.out[1];
    const Window& lw = live_.win;
    float* col = part_col(part);
    float* tmp = part_tmp(part);
    float* dwl = tmp + mg * batch_imgs_ * P;  // the live taps' dW_g (LiveTaps), then added into dW
    for (int64_t nb = n0; nb < n1; nb += batch_imgs_) {
      const int64_t nc = std::min(batch_imgs_, n1 - nb), cols = nc * P;
      simd::LightSums sums;
      for (int64_t g = 0; g < group_; ++g) {
        each_image(nc, mg * cols, [&](int64_t j) {
          image_to_batched(ps.dy + ((nb + j) * m_ + g * mg) * P, mg, cols, j, P, tmp);
        });
        if (light) light_rows(tmp, mg, cols, nullptr, sums);
        if (ps.dw) {
          each_image(nc, kk * cols, [&](int64_t j) {
            im2col(lw, live_.origins, cg, 0, rows, ps.x + ((nb + j) * c_ + g * cg) * win_.in_size(), col + j * P,
                   cols);
          });
          if (live_.reduced) {
            gemm(mg, kk, cols, 1.0f, {tmp, cols, false}, {col, cols, true}, dwl, kk, false);
            if (ps.set_dw && nb == n0) live_.scatter_set(dwl, mg, cg, dw_sum + g * mg * kk_);
            else live_.scatter_add(dwl, mg, cg, dw_sum + g * mg * kk_);
          } else {
            gemm(mg, kk, cols, 1.0f, {tmp, cols, false}, {col, cols, true}, dw_sum + g * mg * kk, kk, true);
          }
        }
        if (ps.dx) {
          gemm(kk, cols, mg, 1.0f, {ps.wb + g * mg * kk, kk, true}, {tmp, cols, false}, col, cols, false);
          each_image(nc, kk * cols, [&](int64_t j) {
            col2im_add(lw, live_.origins, cg, 0, rows, col + j * P, ps.dx + ((nb + j) * c_ + g * cg) * win_.in_size(),
                       cols);
          });
        }
      }
      if (light) ps.stats->add_sums(part, sums.finish(), nc * m_ * P);
    }
  }

  // f(j) for each of a batch's nc images (each writes its own columns or planes), on the
  // compute threads when the batch moves kParallelCopy floats or more: with one image
  // part (resnet18's 8x8 and smaller maps at 32x32) the GEMMs split across the threads
  // but the copies around them ran on one. Inside a part that runs on a helper (parts_ >
  // 1), serially (runtime/parallel.h).
  template <class F>
  void each_image(int64_t nc, int64_t floats, F f) const {
    parallel_blocks(nc, loop_threads(floats, kParallelCopy),
                    [](const void* p, int64_t j) { (*static_cast<const F*>(p))(j); }, &f);
  }

  // f(first output row, end row, first output position, positions) per tile of whole
  // output rows (flattened (od, oh)).
  template <class F>
  void for_each_tile(F f) const {
    const int64_t rows = win_.out[0] * win_.out[1];
    for (int64_t r0 = 0; r0 < rows; r0 += tile_rows_) {
      const int64_t r1 = std::min(rows, r0 + tile_rows_);
      f(r0, r1, r0 * win_.out[2], (r1 - r0) * win_.out[2]);
    }
  }

  static constexpr int64_t kBlockedParallelValues = int64_t{1} << 14, kParallelCopy = int64_t{1} << 16;
  static_assert(kMaxParts <= ValueSink::kParts, "a part reports its statistics as one sink part");

  WindowAttrs attrs_;
  int64_t group_ = 1;
  Window win_;
  int64_t batch_ = 0, c_ = 0, m_ = 0, kk_ = 0;
  int64_t tile_rows_ = 1;   // output rows (flattened (od, oh)) per im2col tile
  int64_t parts_ = 1;       // image ranges (see run_parts)
  int64_t col_size_ = 0;    // floats per part's column buffer (0: pointwise or per-plane depthwise, no im2col)
  int64_t batch_imgs_ = 1;  // images per GEMM (more than 1: small output maps, see the top of the file)
  int64_t tmp_size_ = 0;    // floats per part's product buffer (batched images only)
  int64_t bkk_ = 0;         // the batched path's GEMM depth: C/group * live taps
  LiveTaps live_;           // the batched path's kernel taps (all of them but on maps smaller than the kernel's reach)
  bool depthwise_ = false;  // one input channel per group (and more than one group): the direct kernel
  bool blocked_ = false;    // depthwise with one map per group on short rows: the channel-blocked kernels
  bool direct1_ = false;    // one input channel, one group: forward and dW by runtime/ops/conv_direct.h
  RowOrigins origins_;
  PoolTaps taps_;  // the depthwise kernel's tap ranges
  mutable std::vector<float> col_;        // im2col scratch per part: (C/group * kernel size) x (tile_rows_ * out W)
  mutable std::vector<float> wl_;         // W's live-tap columns (M x bkk_), when live_.reduced
  mutable std::vector<float> tmp_;        // per part: Y_g or dY_g of a batch of images (Mg x batch_imgs_ * P)
  mutable std::vector<float> part_sums_;  // per part: dW (M x C/group * kernel size), then dB (M)
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<Conv>(node); }

}  // namespace

OpInfo op_info_conv() { return {"Conv", {1, 11}, make, conv_samples}; }

}  // namespace dl::rt
