// Shared machinery for the linear reductions ReduceSum and ReduceMean: axes from the
// attribute or (ReduceSum 13+) the optional second input, keepdims, and
// noop_with_empty_axes; forward y = scale * sum over the axes, backward broadcasts
// scale * dy back.
//
// infer() collapses the input shape into alternating runs of kept and reduced axes
// (size-1 axes dropped), so a reduction walks memory once in order: the innermost run
// is either summed (reduced) or added element-wise into a contiguous output row (kept).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/attrs.h"
#include "runtime/ops/eigen_map.h"
#include "runtime/ops/shape_util.h"

namespace dl::rt {

class LinearReduceOp : public Op {
 public:
  // mean: divide by the number of reduced elements. axes_input: axes come from input 1
  // (ReduceSum 13), and noop_with_empty_axes is read.
  LinearReduceOp(const ir::Node& node, bool mean, bool axes_input) : Op(node), mean_(mean), axes_input_(axes_input) {
    Attrs a(node);
    if (!axes_input_) axes_ = a.ints("axes");
    keepdims_ = a.i("keepdims", 1) != 0;
    if (axes_input_) noop_empty_ = a.i("noop_with_empty_axes", 0) != 0;
    a.finish();
  }

  void infer(InferCtx& ctx) override {
    check_inputs(ctx, 1, axes_input_ ? 2 : 1, 1, where());
    const Tensor& x = *ctx.in[0];
    if (x.dtype() != DType::kFloat32) throw ShapeError(where() + ": data must be float32");
    std::vector<int64_t> axes = axes_;
    if (ctx.in.size() > 1 && ctx.in[1]) {
      if (ctx.in[1]->dtype() != DType::kInt64 || (ctx.known.size() > 1 && !ctx.known[1]))
        throw ShapeError(where() +
                         ": input 'axes' must be an int64 tensor known when the graph is planned; "
                         "reduce axes computed at run time (data-dependent) are not supported");
      axes = known_ints(ctx, 1, where(), "axes");
    }
    const int64_t r = x.rank();
    std::vector<bool> red(static_cast<size_t>(r), axes.empty() && !noop_empty_);
    for (int64_t ax : axes) red[static_cast<size_t>(normalize_axis(ax, r, where(), "axis"))] = true;
    Shape out;
    count_ = 1;
    dims_.clear();
    reduced_.clear();
    for (int64_t d = 0; d < r; ++d) {
      const int64_t n = x.dim(d);
      const bool rd = red[static_cast<size_t>(d)];
      if (rd) count_ *= n;
      if (!rd || keepdims_) out.push_back(rd ? 1 : n);
      if (n == 1) continue;
      if (!dims_.empty() && reduced_.back() == rd) {
        dims_.back() *= n;
      } else {
        dims_.push_back(n);
        reduced_.push_back(rd);
      }
    }
    if (dims_.empty()) {  // every axis has size 1: a copy
      dims_.push_back(1);
      reduced_.push_back(false);
    }
    ystride_.assign(dims_.size(), 0);
    for (size_t k = dims_.size(), s = 1; k-- > 0;)
      if (!reduced_[k]) {
        ystride_[k] = static_cast<int64_t>(s);
        s *= static_cast<size_t>(dims_[k]);
      }
    total_ = x.numel();
    idx_.assign(dims_.size(), 0);
    ctx.out[0]->plan(DType::kFloat32, out);
  }

  void forward(FwdCtx& ctx) override {
    const float* x = ctx.in[0]->f();
    float* y = ctx.out[0]->f();
    std::fill(y, y + ctx.out[0]->numel(), 0.0f);
    walk([&](int64_t xi, int64_t yi, int64_t n, bool inner_reduced) {
      if (inner_reduced) {
        y[yi] += sum_of(x + xi, n);
      } else {
        for (int64_t k = 0; k < n; ++k) y[yi + k] += x[xi + k];
      }
    });
    const float scale = mean_ ? 1.0f / static_cast<float>(count_) : 1.0f;
    if (scale != 1.0f)
      for (int64_t k = 0; k < ctx.out[0]->numel(); ++k) y[k] *= scale;
  }

  void backward(BwdCtx& ctx) override {
    if (!ctx.dout[0] || !ctx.din[0]) return;
    const float* dy = ctx.dout[0]->f();
    float* dx = ctx.din[0]->f();
    const float scale = mean_ ? 1.0f / static_cast<float>(count_) : 1.0f;
    walk([&](int64_t xi, int64_t yi, int64_t n, bool inner_reduced) {
      if (inner_reduced) {
        const float g = dy[yi] * scale;
        for (int64_t k = 0; k < n; ++k) dx[xi + k] += g;
      } else {
        for (int64_t k = 0; k < n; ++k) dx[xi + k] += dy[yi + k] * scale;
      }
    });
  }

  OpTraits traits() const override {
    OpTraits t;
    t.linear = true;
    return t;
  }
  bool differentiable_input(size_t i) const override { return i == 0; }

 private:
  // Calls f(x_offset, y_offset, n, inner_reduced) for each innermost run of n inputs, in
  // memory order (an odometer over the outer runs; y advances only along kept runs).
  template <class F>
  void walk(F f) {
    const size_t last = dims_.size() - 1;
    const int64_t n = dims_[last];
    std::fill(idx_.begin(), idx_.end(), 0);
    int64_t yi = 0;
    for (int64_t xi = 0; xi < total_; xi += n) {
      f(xi, yi, n, reduced_[last]);
      for (size_t d = last; d-- > 0;) {
        yi += ystride_[d];
        if (++idx_[d] < dims_[d]) break;
        yi -= ystride_[d] * dims_[d];
        idx_[d] = 0;
      }
    }
  }

  bool mean_, axes_input_;
  bool keepdims_ = true, noop_empty_ = false;
  std::vector<int64_t> axes_;
  int64_t count_ = 1;             // reduced elements per output
  std::vector<int64_t> dims_;     // collapsed runs, outermost first
  std::vector<bool> reduced_;     // run k is reduced
  std::vector<int64_t> ystride_;  // output stride of run k (0 for reduced runs)
  int64_t total_ = 0;             // input elements
  std::vector<int64_t> idx_;      // odometer scratch (sized in infer)
};

}  // namespace dl::rt
