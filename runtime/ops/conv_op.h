// The Conv op's class (runtime/ops/conv.cpp: what it computes and how; its shape checks,
// planning and passes there, the image loops in runtime/ops/conv_images.cpp).
#pragma once

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

namespace dl::rt::conv_detail {

class Conv : public Op, private ConvLimits {
 public:
  explicit Conv(const ir::Node& node) : Op(node) {
    Attrs a(node);
    attrs_ = read_conv_attrs(a, group_);
    a.finish();
  }

  void infer(InferCtx& ctx) override;

  // The bias is written into Y first and the products accumulate onto it.
  void forward(FwdCtx& ctx) override;

  void backward(BwdCtx& ctx) override;

  bool assigns_gradient(size_t i) const override { return i < 3; }
  // (dY's light sums with dB's (sum_rows_light) or from the batched copy of dY.)
  bool sums_output_gradient() const override { return has_bias_ || batch_imgs_ > 1; }

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

  // The batched path's weights: W itself, or its live taps' columns (LiveTaps), which
  // forward gathers and backward reuses: a step's weights do not change between its
  // forward and its backward (which reads forward's state anyway). A backward without a
  // forward of this W since infer() gathers them itself.
  const float* batched_weights(const float* wt, bool reuse) const {
    if (batch_imgs_ <= 1 || !live_.reduced) return wt;
    if (!(reuse && wl_of_ == wt)) live_.gather(wt, m_, c_ / group_, wl_.data());
    wl_of_ = wt;
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

  void forward_images(const Pass& ps, int64_t part) const;
  // dX of the part's images, and the part's own dW and dB sums (part_dw), which
  // backward() adds up in part order.
  void backward_images(const Pass& ps, int64_t part) const;
  // Forward of images [n0, n1) in batches of batch_imgs_: col (kk x nc*P) holds image j's
  // columns at column j*P, tmp (Mg x nc*P) = W_g * col, then Y = tmp (+ B) per image.
  void forward_batched(const Pass& ps, int64_t part, int64_t n0, int64_t n1) const;
  // col (bkk_ x nc*P) = the live taps' columns of images [nb, nb + nc), group g.
  void batch_im2col(const Pass& ps, int64_t nb, int64_t nc, int64_t g, float* col) const;
  // With light, dY's light statistics come from tmp too (backward_images leaves them).
  void backward_batched(const Pass& ps, int64_t part, int64_t n0, int64_t n1, float* dw_sum, bool light) const;

  // f(j) for each of a batch's nc images (each writes its own planes), on the compute
  // threads when the batch moves kParallelCopy floats or more: with one image part
  // (resnet18's 8x8 and smaller maps at 32x32) the GEMMs split across the threads but the
  // copies around them ran on one. Inside a part that runs on a helper (parts_ > 1),
  // serially (runtime/parallel.h).
  template <class F>
  void each_image(int64_t nc, int64_t floats, F f) const {
    parallel_blocks(nc, loop_threads(floats, kParallelCopy),
                    [](const void* p, int64_t j) { (*static_cast<const F*>(p))(j); }, &f);
  }
  // f(r0, r1, j0, j1) over blocks of a batch's `rows` channels (or maps) x its nc images:
  // each block handles its rows of the batch's column or product buffer for its images.
  // By rows first, so that no two threads write one cache line: by image, as each_image,
  // every row of the buffer took a few floats from each image (16 at 4x4 maps, 4 at 2x2, 1
  // at 1x1), and at 2 threads im2col and col2im took 2 to 3 times the CPU of 1 thread on
  // resnet18 (bench/README.md, run 49). With fewer rows than kRowBlocks (an RGB input's 3
  // channels), images too, where an image's P columns fill a cache line (P >= 16 floats).
  // On the compute threads when the batch moves kParallelCopy floats or more; the same
  // values for any split.
  template <class F>
  void batch_blocks(int64_t rows, int64_t nc, int64_t P, int64_t floats, F f) const {
    const int threads = loop_threads(floats, kParallelCopy);
    if (threads <= 1 || rows * nc <= 1) return f(int64_t{0}, rows, int64_t{0}, nc);
    struct Blocks {
      const F* f;
      int64_t rows, nc, row_blocks, image_blocks;
    } b{&f, rows, nc, std::min(rows, kRowBlocks), 1};
    if (P >= 16) b.image_blocks = std::min(nc, (kRowBlocks + b.row_blocks - 1) / b.row_blocks);
    parallel_blocks(b.row_blocks * b.image_blocks, threads, [](const void* p, int64_t k) {
      const Blocks& b = *static_cast<const Blocks*>(p);
      int64_t r0, r1, j0, j1;
      even_range(b.rows, b.row_blocks, k / b.image_blocks, r0, r1);
      even_range(b.nc, b.image_blocks, k % b.image_blocks, j0, j1);
      (*b.f)(r0, r1, j0, j1);
    }, &b);
  }

  // f(first output row, end row, first output position, positions) per tile of whole
  // output rows (flattened (od, oh)).
  template <class F>
  void for_each_tile(F f) const { for_each_row_tile(win_, tile_rows_, f); }

  static constexpr int64_t kBlockedParallelValues = int64_t{1} << 14, kParallelCopy = int64_t{1} << 16;
  static constexpr int64_t kRowBlocks = 8;  // batch_blocks' row blocks (claimed by the threads as they come)
  static_assert(kMaxParts <= ValueSink::kParts, "a part reports its statistics as one sink part");

  WindowAttrs attrs_;
  int64_t group_ = 1;
  Window win_;
  int64_t batch_ = 0, c_ = 0, m_ = 0, kk_ = 0;
  int64_t tile_rows_ = 1;   // output rows (flattened (od, oh)) per im2col tile
  int64_t parts_ = 1;       // image ranges (see run_parts)
  int64_t col_size_ = 0;    // floats per part's column buffer (0: pointwise or per-plane depthwise, no im2col)
  bool has_bias_ = false;  // (infer: a bias input B)
  int64_t batch_imgs_ = 1;  // images per GEMM (more than 1: small output maps, see the top of the file)
  int64_t tmp_size_ = 0;    // floats per part's product buffer (batched images only)
  int64_t bkk_ = 0;         // the batched path's GEMM depth: C/group * live taps
  LiveTaps live_;           // the batched path's kernel taps (all of them but on maps smaller than the kernel's reach)
  bool depthwise_ = false;  // one input channel per group (and more than one group): the direct kernel
  bool blocked_ = false;    // depthwise with one map per group on short rows: the channel-blocked kernels
  bool direct1_ = false;    // one input channel, one group: forward and dW by runtime/ops/conv_direct.h
  RowOrigins origins_;
  PoolTaps taps_;  // the depthwise kernel's tap ranges
  // Scratch per part: im2col's (C/group * kernel size) x (tile_rows_ * out W), or the
  // blocked depthwise kernels' (depthwise_blocked_scratch).
  mutable std::vector<float> col_;
  mutable std::vector<float> wl_;         // W's live-tap columns (M x bkk_), when live_.reduced
  mutable const float* wl_of_ = nullptr;  // the W that forward gathered wl_ from (backward reuses it)
  mutable std::vector<float> tmp_;        // per part: Y_g or dY_g of a batch of images (Mg x batch_imgs_ * P)
  mutable std::vector<float> part_sums_;  // per part: dW (M x C/group * kernel size), then dB (M)
};

}  // namespace dl::rt::conv_detail
