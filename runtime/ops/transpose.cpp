// Transpose (since 1, 13): output axis k is input axis perm[k]; perm defaults to the
// reversed axes.
//
// The walk drops size-1 axes and merges axes that stay adjacent, then takes one of two
// fast paths: contiguous runs when the last axis stays last (attention's head split and
// merge, perm [1, 0, 2]: row copies), else tiles of one vector's lanes square of the two
// axes that are innermost in the output and in the input ([1, 2, 0], a weight's [1, 0]),
// so both sides are read and written a vector at a time (whole tiles transposed in
// registers). Backward walks the inverse permutation
// (dX in its own order). When a probe wants dY and both sides are runs: as dX's first
// writer it reports the values it writes (dY's, permuted: the same statistics up to the
// order of the sums), else it walks dY's order and reports dY as read. A permutation
// writes every element once, so the order does not change any value (backward: each dX
// element gets its one dY element added).
#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "runtime/attrs.h"
#include "runtime/ops/shape_util.h"
#include "runtime/simd_transpose.h"
#include "runtime/sink_chunks.h"

namespace dl::rt {
namespace {

class PermuteWalk {
 public:
  // out_dims and in_strides (the input stride of each output axis) of a permutation.
  void set(const Shape& out_dims, const std::vector<int64_t>& in_strides) {
    axes_.clear();
    total_ = shape_numel(out_dims);
    int64_t out_stride = 1;
    std::vector<Axis> rev;  // innermost first
    for (size_t k = out_dims.size(); k-- > 0;) {
      if (out_dims[k] == 1) continue;
      if (!rev.empty() && in_strides[k] == rev.back().in * rev.back().n) {
        rev.back().n *= out_dims[k];  // stays adjacent: one axis
      } else {
        rev.push_back({out_dims[k], in_strides[k], out_stride});
      }
      out_stride *= out_dims[k];
    }
    axes_.assign(rev.rbegin(), rev.rend());
    tile_axis_ = -1;
    if (!axes_.empty() && axes_.back().in != 1)
      for (size_t k = 0; k + 1 < axes_.size(); ++k)
        if (axes_[k].in == 1) tile_axis_ = static_cast<int>(k);
  }

  // Whether the last output axis is the last input axis too: runs() can walk it.
  bool has_runs() const { return total_ == 0 || axes_.empty() || axes_.back().in == 1; }
  // f(output offset, input offset, n) for every run of n elements contiguous on both
  // sides, in output order (has_runs() only).
  // Tiles of one native vector's lanes square: a whole one goes through an in-register
  // transpose (runtime/simd_transpose.h), 2.5x faster than element by element (a
  // transformer's weight [1, 0] and key [1, 2, 0] transposes, bench/README.md run 43).
  static constexpr int64_t kTile = simd::kLanes;

  template <class F>
  void runs(F f) const {
    if (total_ == 0) return;
    if (axes_.empty()) {
      f(int64_t{0}, int64_t{0}, int64_t{1});
      return;
    }
    const int64_t n = axes_.back().n;
    outer(axes_.size() - 1, -1, [&](int64_t o, int64_t i) { f(o, i, n); });
  }

  // f(output offset, input offset) for every element.
  // walk(f), handing each whole kTile x kTile tile of the tiled path to block(o, i,
  // output stride of the tile's rows, input stride of its columns) instead: element (a, b)
  // of the tile is output o + a * os + b, input i + a + b * is.
  template <class F, class B>
  void walk(F f, B block) const {
    if (total_ == 0) return;
    if (axes_.empty()) {
      f(int64_t{0}, int64_t{0});
      return;
    }
    const Axis inner = axes_.back();
    if (inner.in == 1) {
      outer(axes_.size() - 1, -1, [&](int64_t o, int64_t i) {
        for (int64_t j = 0; j < inner.n; ++j) f(o + j, i + j);
      });
      return;
    }
    if (tile_axis_ < 0) {
      outer(axes_.size() - 1, -1, [&](int64_t o, int64_t i) {
        for (int64_t j = 0; j < inner.n; ++j) f(o + j, i + j * inner.in);
      });
      return;
    }
    const Axis t = axes_[static_cast<size_t>(tile_axis_)];  // input stride 1
    outer(axes_.size() - 1, tile_axis_, [&](int64_t o, int64_t i) {
      for (int64_t a0 = 0; a0 < t.n; a0 += kTile)
        for (int64_t b0 = 0; b0 < inner.n; b0 += kTile) {
          const int64_t a1 = std::min(t.n, a0 + kTile), b1 = std::min(inner.n, b0 + kTile);
          if constexpr (!std::is_same_v<B, std::nullptr_t>) {
            if (a1 - a0 == kTile && b1 - b0 == kTile) {
              block(o + a0 * t.out + b0, i + a0 + b0 * inner.in, t.out, inner.in);
              continue;
            }
          }
          for (int64_t a = a0; a < a1; ++a)
            for (int64_t b = b0; b < b1; ++b) f(o + a * t.out + b, i + a + b * inner.in);
        }
    });
  }

 private:
  struct Axis {
    int64_t n, in, out;  // size, input stride, output stride
  };

  // g(output offset, input offset) for every index of axes [0, end) other than `skip`.
  template <class G>
  void outer(size_t end, int skip, G g) const {
    std::vector<int64_t> idx(end, 0);
    int64_t o = 0, i = 0;
    for (;;) {
      g(o, i);
      size_t k = end;
      for (; k-- > 0;) {
        if (static_cast<int>(k) == skip) continue;
        o += axes_[k].out;
        i += axes_[k].in;
        if (++idx[k] < axes_[k].n) break;
        o -= axes_[k].out * axes_[k].n;
        i -= axes_[k].in * axes_[k].n;
        idx[k] = 0;
      }
      if (k == static_cast<size_t>(-1)) return;
    }
  }

  std::vector<Axis> axes_;  // merged output axes, outermost first
  int64_t total_ = 0;
  int tile_axis_ = -1;  // an axis of input stride 1 when the innermost one is not
};

class Transpose : public Op {
 public:
  explicit Transpose(const ir::Node& node) : Op(node) {
    Attrs a(node);
    has_perm_ = a.has("perm");
    perm_ = a.ints("perm");
    a.finish();
  }

  void infer(InferCtx& ctx) override {
    check_inputs(ctx, 1, 1, 1, where());
    const Shape& in = ctx.in[0]->shape();
    const size_t r = in.size();
    std::vector<int64_t> perm = perm_;
    if (!has_perm_)
      for (size_t k = 0; k < r; ++k) perm.push_back(static_cast<int64_t>(r - 1 - k));
    if (perm.size() != r)
      throw ShapeError(where() + ": perm " + shape_str(perm) + " does not match input rank " + std::to_string(r) +
                       " (input " + shape_str(in) + ")");
    std::vector<bool> seen(r, false);
    Shape in_strides(r, 1);
    for (size_t k = r; k-- > 1;) in_strides[k - 1] = in_strides[k] * in[k];
    Shape out_dims(r, 0);
    std::vector<int64_t> strides(r, 0);  // input stride of each output axis
    for (size_t k = 0; k < r; ++k) {
      const int64_t p = perm[k];
      if (p < 0 || p >= static_cast<int64_t>(r) || seen[static_cast<size_t>(p)])
        throw ShapeError(where() + ": perm " + shape_str(perm) + " is not a permutation of the input's " +
                         std::to_string(r) + " axes");
      seen[static_cast<size_t>(p)] = true;
      out_dims[k] = in[static_cast<size_t>(p)];
      strides[k] = in_strides[static_cast<size_t>(p)];
    }
    walk_.set(out_dims, strides);
    // Backward walks dX in its own order (so its writes are the contiguous side): input
    // axis perm[k] reads dY with output axis k's stride.
    std::vector<int64_t> dy_strides(r, 0);
    int64_t s = 1;
    for (size_t k = r; k-- > 0;) {
      dy_strides[static_cast<size_t>(perm[k])] = s;
      s *= out_dims[k];
    }
    grad_walk_.set(in, dy_strides);
    ctx.out[0]->plan(ctx.in[0]->dtype(), out_dims);
  }

  void forward(FwdCtx& ctx) override {
    const Tensor& x = *ctx.in[0];
    Tensor& y = *ctx.out[0];
    if (x.dtype() == DType::kFloat32) {
      const float* src = x.f();
      float* dst = y.f();
      walk_.walk([&](int64_t o, int64_t i) { dst[o] = src[i]; },
                 [&](int64_t o, int64_t i, int64_t os, int64_t is) { move_block(src + i, is, dst + o, os, 0); });
    } else {
      const int64_t* src = x.i();
      int64_t* dst = y.i();
      walk_.walk([&](int64_t o, int64_t i) { dst[o] = src[i]; }, nullptr);
    }
  }

  void backward(BwdCtx& ctx) override {
    if (!ctx.din[0] || !ctx.dout[0]) return;
    const float* dy = ctx.dout[0]->f();
    float* dx = ctx.din[0]->f();
    const bool assign = ctx.assigns(0);  // (first writer: dX = 0 + dY, not read)
    if (ctx.dout_stats && assign && grad_walk_.has_runs()) {
      // A probe wants dY: as dX's first writer this step writes dY's values, permuted, into
      // dX, walked in dX's order (the writes contiguous), run by run; dX reported chunk by
      // chunk as it is written: the same values as dY, summed in another order.
      ChunkReporter report(ctx.dout_stats, dx, ctx.din[0]->numel());
      grad_walk_.runs([&](int64_t o, int64_t i, int64_t n) {
        for (int64_t j = 0; j < n; ++j) dx[o + j] = 0.0f + dy[i + j];
        report.upto(o + n);
      });
      report.finish();
      return;
    }
    if (ctx.dout_stats && walk_.has_runs()) {
      // dX is added to: walked in dY's order (both sides are runs), dY reported chunk by
      // chunk as it is read.
      ChunkReporter report(ctx.dout_stats, dy, ctx.dout[0]->numel());
      walk_.runs([&](int64_t o, int64_t i, int64_t n) {
        for (int64_t j = 0; j < n; ++j) dx[i + j] += dy[o + j];
        report.upto(o + n);
      });
      report.finish();
      return;
    }
    const int mode = assign ? 1 : 2;
    grad_walk_.walk([&](int64_t o, int64_t i) { dx[o] = (assign ? 0.0f : dx[o]) + dy[i]; },
                    [&](int64_t o, int64_t i, int64_t os, int64_t is) { move_block(dy + i, is, dx + o, os, mode); });
  }
  bool assigns_gradient(size_t i) const override { return i == 0; }  // (a permutation: every element)

  OpTraits traits() const override { return shape_traits(); }
  bool copies_input() const override { return true; }  // reordered

 private:
  // One kTile x kTile tile: dst[a * os + b] = (mode 0) src[a + b * is], (1) 0 + that (a
  // first writer's bits), (2) dst[...] + that.
  static void move_block(const float* src, int64_t is, float* dst, int64_t os, int mode) {
    simd::VecF r[kTile];
    for (int64_t b = 0; b < kTile; ++b) r[b] = simd::loadv(src + b * is);
    simd::transpose(r);
    for (int64_t a = 0; a < kTile; ++a) {
      float* d = dst + a * os;
      simd::storev(d, mode == 0 ? r[a] : (mode == 1 ? simd::VecF{} : simd::loadv(d)) + r[a]);
    }
  }
  static constexpr int64_t kTile = PermuteWalk::kTile;

  bool has_perm_ = false;
  std::vector<int64_t> perm_;
  PermuteWalk walk_, grad_walk_;  // Y from X; dX from dY (the inverse permutation)
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<Transpose>(node); }

std::vector<OpSample> samples() {
  std::vector<float> v(24);
  for (size_t k = 0; k < v.size(); ++k) v[k] = 0.13f * float(k) - 1.5f;
  OpSample a;
  a.label = "transpose 2x3x4 default (reverse)";
  a.node = sample_node("Transpose", 1);
  a.inputs = {Tensor::floats({2, 3, 4}, v)};
  a.check_grad = {true};
  OpSample b;
  b.label = "transpose 2x3x4 perm [1, 2, 0]";
  b.node = sample_node("Transpose", 1, 1, {{"perm", attr_ints({1, 2, 0})}});
  b.inputs = {Tensor::floats({2, 3, 4}, v)};
  b.check_grad = {true};
  OpSample c;  // whole tiles of 16 (AVX-512), 8 or 4 lanes square, and partial ones
  c.label = "transpose 17x18 perm [1, 0] (in-register tiles)";
  c.node = sample_node("Transpose", 1, 1, {{"perm", attr_ints({1, 0})}});
  std::vector<float> w(17 * 18);
  for (size_t k = 0; k < w.size(); ++k) w[k] = 0.01f * float((k * 37) % 101) - 0.5f;
  c.inputs = {Tensor::floats({17, 18}, w)};
  c.check_grad = {true};
  return {a, b, c};
}

}  // namespace

OpInfo op_info_transpose() { return {"Transpose", {1, 13}, make, samples}; }

}  // namespace dl::rt
