// Conv's image loops (runtime/ops/conv_op.h): per-image GEMMs, the direct kernels, and
// the batched path of small maps (see runtime/ops/conv.cpp).
#include "runtime/ops/conv_op.h"

namespace dl::rt::conv_detail {

void Conv::forward_images(const Pass& ps, int64_t part) const {
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

void Conv::backward_images(const Pass& ps, int64_t part) const {
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

void Conv::batch_im2col(const Pass& ps, int64_t nb, int64_t nc, int64_t g, float* col) const {
  const int64_t cg = c_ / group_, P = win_.out_size(), cols = nc * P, K = live_.win.k_size();
  batch_blocks(cg, nc, P, bkk_ * cols, [&](int64_t c0, int64_t c1, int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j)
      im2col(live_.win, live_.origins, c1 - c0, 0, win_.out[0] * win_.out[1],
             ps.x + ((nb + j) * c_ + g * cg + c0) * win_.in_size(), col + c0 * K * cols + j * P, cols);
  });
}

void Conv::forward_batched(const Pass& ps, int64_t part, int64_t n0, int64_t n1) const {
  const int64_t mg = m_ / group_, kk = bkk_, P = win_.out_size();
  float* col = part_col(part);
  float* tmp = part_tmp(part);
  const bool light = ps.stats && ps.stats->light();  // Y's light statistics from tmp (light_rows)
  for (int64_t nb = n0; nb < n1; nb += batch_imgs_) {
    const int64_t nc = std::min(batch_imgs_, n1 - nb), cols = nc * P;
    simd::LightSums sums;
    for (int64_t g = 0; g < group_; ++g) {
      batch_im2col(ps, nb, nc, g, col);
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

void Conv::backward_batched(const Pass& ps, int64_t part, int64_t n0, int64_t n1, float* dw_sum, bool light) const {
  const int64_t cg = c_ / group_, mg = m_ / group_, kk = bkk_, P = win_.out_size(), rows = win_.out[0] * win_.out[1];
  const Window& lw = live_.win;
  float* col = part_col(part);
  float* tmp = part_tmp(part);
  float* dwl = tmp + mg * batch_imgs_ * P;  // the live taps' dW_g (LiveTaps), then added into dW
  for (int64_t nb = n0; nb < n1; nb += batch_imgs_) {
    const int64_t nc = std::min(batch_imgs_, n1 - nb), cols = nc * P;
    simd::LightSums sums;
    for (int64_t g = 0; g < group_; ++g) {
      batch_blocks(mg, nc, P, mg * cols, [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
        for (int64_t j = j0; j < j1; ++j)
          image_to_batched(ps.dy + ((nb + j) * m_ + g * mg + i0) * P, i1 - i0, cols, j, P, tmp + i0 * cols);
      });
      if (light) light_rows(tmp, mg, cols, nullptr, sums);
      if (ps.dw) {
        batch_im2col(ps, nb, nc, g, col);
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
        const int64_t K = lw.k_size();
        batch_blocks(cg, nc, P, kk * cols, [&](int64_t c0, int64_t c1, int64_t j0, int64_t j1) {
          for (int64_t j = j0; j < j1; ++j)
            col2im_add(lw, live_.origins, c1 - c0, 0, rows, col + c0 * K * cols + j * P,
                       ps.dx + ((nb + j) * c_ + g * cg + c0) * win_.in_size(), cols);
        });
      }
    }
    if (light) ps.stats->add_sums(part, sums.finish(), nc * m_ * P);
  }
}

}  // namespace dl::rt::conv_detail
