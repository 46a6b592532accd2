// An affine walk over a strided view of a tensor: output element o (row-major over
// `dims`) reads input element base + sum_k idx_k * strides[k]. Transpose (permuted
// strides), Slice (start offset, step strides), Expand (stride 0 on broadcast axes) and
// Tile (each axis split into (repeat, size) with the repeat's stride 0) are all such
// views, so their forward is a copy along the walk and their backward a scatter-add.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/op.h"
#include "runtime/ops/shape_util.h"
#include "runtime/sink_chunks.h"

namespace dl::rt {

class StridedWalk {
 public:
  // Sizes the view once (planning); strides.size() == dims.size(). Axes of size 1 are
  // dropped and an axis is merged into the one outside it when that one's stride spans
  // it (a run contiguous over both, or both broadcast): the same elements in the same
  // order, in longer runs (a channel Slice of [N, C, H, W] walks N runs of C'HW values,
  // not N C' H runs of W: shufflenet_v2's Slices, bench/README.md run 57).
  void set(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, int64_t base = 0) {
    total_ = shape_numel(dims);  // ResourceError past int64 (an Expand to a shape of 2^63 values)
    base_ = base;
    dims_.clear();
    strides_.clear();
    for (size_t k = 0; k < dims.size() && total_ > 0; ++k) {  // (empty: nothing walked, no sizes multiplied)
      if (dims[k] == 1) continue;
      if (!dims_.empty() && strides_.back() == strides[k] * dims[k]) {
        dims_.back() *= dims[k];
        strides_.back() = strides[k];
        continue;
      }
      dims_.push_back(dims[k]);
      strides_.push_back(strides[k]);
    }
    counter_.assign(dims_.size(), 0);
  }

  // Calls f(output offset, input offset) for every element in output order: an odometer
  // over the outer axes, a strided run over the innermost one; after each run, and
  // within a long run after every kChunk outputs, done(output offset past them) (so a
  // ChunkReporter reports each chunk while it is in cache, however long the merged run).
  template <class F, class Done>
  void walk(F f, Done done) {
    const size_t r = dims_.size();
    if (total_ == 0) return;
    if (r == 0) {  // (one element: a scalar, or every axis of size 1)
      f(int64_t{0}, base_);
      done(int64_t{1});
      return;
    }
    std::fill(counter_.begin(), counter_.end(), 0);
    const int64_t inner = dims_[r - 1], inner_stride = strides_[r - 1];
    int64_t at = base_;
    for (int64_t o = 0; o < total_; o += inner) {
      for (int64_t k0 = 0; k0 < inner; k0 += kChunk) {
        const int64_t k1 = std::min(inner, k0 + kChunk);
        if (inner_stride == 1) {
          for (int64_t k = k0; k < k1; ++k) f(o + k, at + k);  // a contiguous run: vectorised
        } else {
          for (int64_t k = k0; k < k1; ++k) f(o + k, at + k * inner_stride);
        }
        done(o + k1);
      }
      for (size_t ax = r - 1; ax-- > 0;) {
        at += strides_[ax];
        if (++counter_[ax] < dims_[ax]) break;
        at -= strides_[ax] * dims_[ax];
        counter_[ax] = 0;
      }
    }
  }

  template <class F>
  void walk(F f) {
    walk(f, [](int64_t) {});
  }

  // y[o] = x[view(o)] for float32 or int64 tensors of the same dtype; a float y goes to
  // `sink` (may be null) chunk by chunk as it is written (runtime/sink_chunks.h).
  void gather(const Tensor& x, Tensor& y, ValueSink* sink = nullptr) {
    if (x.dtype() == DType::kFloat32) {
      const float* src = x.f();
      float* dst = y.f();
      ChunkReporter report(sink, dst, total_);
      walk([&](int64_t o, int64_t i) { dst[o] = src[i]; }, [&](int64_t end) { report.upto(end); });
      report.finish();
    } else {
      const int64_t* src = x.i();
      int64_t* dst = y.i();
      walk([&](int64_t o, int64_t i) { dst[o] = src[i]; });
    }
  }

  // dx[view(o)] += dy[o]: the gradient of gather(); dy goes to `sink` (may be null) as read.
  void scatter_add(const float* dy, float* dx, ValueSink* sink = nullptr) {
    ChunkReporter report(sink, dy, total_);
    walk([&](int64_t o, int64_t i) { dx[i] += dy[o]; }, [&](int64_t end) { report.upto(end); });
    report.finish();
  }

 private:
  std::vector<int64_t> dims_, strides_, counter_;
  int64_t base_ = 0, total_ = 0;
};

// An op whose output is a strided view of its data input 0 (Slice, Expand, Tile): infer()
// sets walk_; forward gathers through it and backward scatter-adds the gradient back.
class StridedViewOp : public Op {
 public:
  using Op::Op;
  void forward(FwdCtx& ctx) override { walk_.gather(*ctx.in[0], *ctx.out[0], ctx.out_stats); }
  void backward(BwdCtx& ctx) override {
    if (!ctx.din[0] || !ctx.dout[0]) return;
    walk_.scatter_add(ctx.dout[0]->f(), ctx.din[0]->f(), ctx.dout_stats);
  }
  OpTraits traits() const override {
    OpTraits t;
    t.linear = true;
    t.rearranges = true;
    return t;
  }
  bool differentiable_input(size_t i) const override { return i == 0; }

 protected:
  StridedWalk walk_;
};

// Row-major strides of a shape.
inline std::vector<int64_t> row_major_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t k = s.size(); k-- > 1;) st[k - 1] = st[k] * s[k];
  return st;
}

}  // namespace dl::rt
