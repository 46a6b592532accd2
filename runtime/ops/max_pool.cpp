// MaxPool (since 1, 8, 10, 11, 12): the maximum over each window, padding excluded
// (padded positions act as -inf). 1 to 3 spatial axes; ceil_mode, dilations, auto_pad.
// The optional Indices output (int64) holds flat indices into X: row-major, or for
// storage_order 1 column-major within each (n, c) plane (1-D and 2-D inputs only).
//
// Forward records each output's argmax (plane-local) in a member buffer sized in
// infer(); backward routes the gradient there.
#include <limits>

#include "runtime/attrs.h"
#include "runtime/ops/row_vec.h"
#include "runtime/ops/shape_util.h"
#include "runtime/ops/window.h"
#include "runtime/parallel.h"

namespace dl::rt {
namespace {

class MaxPool : public Op {
 public:
  explicit MaxPool(const ir::Node& node) : Op(node) {
    Attrs a(node);
    attrs_ = read_window_attrs(a, true, true);
    storage_order_ = a.i("storage_order", 0);
    if (storage_order_ != 0 && storage_order_ != 1) a.fail("storage_order", "must be 0 or 1");
    a.finish();
  }

  void infer(InferCtx& ctx) override {
    check_inputs(ctx, 1, 1, 1, where());
    const Tensor& x = *ctx.in[0];
    if (x.dtype() != DType::kFloat32) throw ShapeError(where() + ": input must be float32");
    win_ = plan_window(where(), attrs_, x.shape(), attrs_.kernel);
    // argmax_ (an int32 per output element) and the tap tables
    reserve_window_output(ctx, where(), win_, x.dim(0), x.dim(1), double(x.dim(0)) * double(x.dim(1)) * 4 + 48,
                          "its argmax and tap tables");
    const Shape out = win_.out_shape(x.dim(0), x.dim(1));
    ctx.out[0]->plan(DType::kFloat32, out);
    if (ctx.out.size() > 1 && ctx.out[1]) {
      if (storage_order_ == 1 && win_.spatial == 3)
        throw ShapeError(where() +
                         ": attribute 'storage_order' 1 (column-major Indices) is supported for 1-D and "
                         "2-D pooling only, got input " +
                         shape_str(x.shape()));
      ctx.out[1]->plan(DType::kInt64, out);
    }
    planes_ = x.dim(0) * x.dim(1);
    if (win_.in_size() > std::numeric_limits<int32_t>::max())  // argmax_ holds plane-local int32
      throw ShapeError(where() + ": spatial size of " + shape_str(x.shape()) + " exceeds 2^31 elements");
    taps_.plan(win_);
    argmax_.assign(static_cast<size_t>(shape_numel(out)), 0);
    // Every window wholly inside the input, no dilation (LeNet's 2x2 stride 2 pools):
    // a direct loop per output, window values in registers.
    inside_ = true;
    for (int a = 0; a < 3; ++a)
      inside_ = inside_ && win_.dil[a] == 1 && win_.pad_begin[a] == 0 &&
                (win_.out[a] - 1) * win_.stride[a] + win_.k[a] <= win_.in[a];
    // (Depth 1 throughout: one depth slice in and out, no padding along it.)
    rows_3x3s2_ = !inside_ && win_.in[0] == 1 && win_.k[0] == 1 && win_.out[0] == 1 && win_.pad_begin[0] == 0 &&
                  win_.k[1] == 3 && win_.k[2] == 3 && win_.stride[1] == 2 && win_.stride[2] == 2 && win_.dil[1] == 1 &&
                  win_.dil[2] == 1;
  }

  void forward(FwdCtx& ctx) override {
    const float* x = ctx.in[0]->f();
    float* y = ctx.out[0]->f();
    if (inside_) {
      forward_inside(x, y, ctx.out_stats);
      if (ctx.out.size() > 1 && ctx.out[1]) write_indices(ctx.out[1]->i());
      return;
    }
    const Parts c{this, x, y, ctx.out_stats};
    c.run(planes_ * win_.out_size() * win_.k_size(), [](const Parts& c, int64_t pl0, int64_t pl1) {
      if (c.op->rows_3x3s2_) c.op->planes_3x3s2(c.x, c.y, pl0, pl1);
      else c.op->general_planes(c.x, c.y, pl0, pl1);
      if (c.stats) c.stats->add(c.part, c.y + pl0 * c.op->win_.out_size(), (pl1 - pl0) * c.op->win_.out_size());
    });
    if (ctx.out.size() > 1 && ctx.out[1]) write_indices(ctx.out[1]->i());
  }

  // Each plane's gradient goes to its own plane of dX: planes in parts on the compute
  // threads, each part reporting its share of dY to the probe's sink.
  void backward(BwdCtx& ctx) override {
    if (!ctx.dout[0] || !ctx.din[0]) return;
    const Parts c{this, ctx.dout[0]->f(), ctx.din[0]->f(), ctx.dout_stats};
    c.run(planes_ * win_.out_size(), [](const Parts& c, int64_t pl0, int64_t pl1) {
      const int64_t S = c.op->win_.in_size(), P = c.op->win_.out_size();
      for (int64_t pl = pl0; pl < pl1; ++pl) {
        const int32_t* am = c.op->argmax_.data() + pl * P;
        const float* dy = c.x + pl * P;
        float* dx = c.y + pl * S;
        for (int64_t o = 0; o < P; ++o)
          if (am[o] >= 0) dx[am[o]] += dy[o];
      }
      if (c.stats) c.stats->add(c.part, c.x + pl0 * P, (pl1 - pl0) * P);
    });
  }

  OpTraits traits() const override { return {}; }

 private:
  // The same result as the general loop (maximum from -inf, strictly greater replaces,
  // so NaN is skipped and the first maximum in row-major tap order wins). Planes go in
  // parts on the compute threads (each output depends on its plane only). 2-D windows of
  // 2x2 (LeNet) get a loop with the taps fixed at compile time.
  void forward_inside(const float* x, float* y, ValueSink* stats) {
    const Parts c{this, x, y, stats};
    c.run(planes_ * win_.out_size() * win_.k_size(), [](const Parts& c, int64_t pl0, int64_t pl1) {
      const Window& w = c.op->win_;
      if (w.in[0] == 1 && w.k[1] == 2 && w.k[2] == 2 && w.stride[1] == 2 && w.stride[2] == 2)  // 2-D (depth 1)
        c.op->planes_2x2(c.x, c.y, pl0, pl1);
      else
        c.op->inside_planes(c.x, c.y, pl0, pl1);
      if (c.stats) c.stats->add(c.part, c.y + pl0 * w.out_size(), (pl1 - pl0) * w.out_size());
    });
  }

  void inside_planes(const float* x, float* y, int64_t pl0, int64_t pl1) {
    const Window& w = win_;
    const int64_t S = w.in_size(), P = w.out_size(), H = w.in[1], W = w.in[2];
    const int64_t kd_n = w.k[0], kh_n = w.k[1], kw_n = w.k[2];
    for (int64_t pl = pl0; pl < pl1; ++pl) {
      const float* __restrict xp = x + pl * S;
      float* __restrict yp = y + pl * P;
      int32_t* __restrict ap = argmax_.data() + pl * P;
      int64_t o = 0;
      for (int64_t od = 0; od < w.out[0]; ++od)
        for (int64_t oh = 0; oh < w.out[1]; ++oh)
          for (int64_t ow = 0; ow < w.out[2]; ++ow, ++o) {
            const int64_t base = ((od * w.stride[0]) * H + oh * w.stride[1]) * W + ow * w.stride[2];
            float best = -std::numeric_limits<float>::infinity();
            int64_t arg = base;
            for (int64_t kd = 0; kd < kd_n; ++kd)
              for (int64_t kh = 0; kh < kh_n; ++kh) {
                const int64_t row = base + (kd * H + kh) * W;
                for (int64_t kw = 0; kw < kw_n; ++kw) {
                  const float v = xp[row + kw];
                  const bool take = v > best;
                  best = take ? v : best;
                  arg = take ? row + kw : arg;
                }
              }
            yp[o] = best;
            ap[o] = static_cast<int32_t>(arg);
          }
    }
  }

  // Windows that reach into padding or dilate (on x86, 2-D 3x3 stride 2 windows take
  // planes_3x3s2 instead, which falls back to general_output at the row's edges): per
  // output, its in-range taps (PoolTaps) in row-major order, the maximum from -inf and
  // only a strictly greater value replacing it (NaN is skipped, the first maximum wins),
  // in registers. The argmax starts at the window's first in-range input (so an all -inf
  // window still points at one); a window wholly in padding keeps -1 and gives the lowest
  // float, as ONNX Runtime.
  void general_planes(const float* x, float* y, int64_t pl0, int64_t pl1) {
    const Window& w = win_;
    const int64_t S = w.in_size(), P = w.out_size();
    for (int64_t pl = pl0; pl < pl1; ++pl) {
      int64_t o = 0;
      for (int64_t od = 0; od < w.out[0]; ++od)
        for (int64_t oh = 0; oh < w.out[1]; ++oh)
          for (int64_t ow = 0; ow < w.out[2]; ++ow, ++o)
            general_output(x + pl * S, od, oh, ow, y + pl * P + o, argmax_.data() + pl * P + o);
    }
  }
  void general_output(const float* __restrict xp, int64_t od, int64_t oh, int64_t ow, float* yp, int32_t* ap) const {
    const Window& w = win_;
    const int64_t H = w.in[1], W = w.in[2];
    const PoolTaps::Axis dt = taps_.axis[0][size_t(od)], ht = taps_.axis[1][size_t(oh)], wt = taps_.axis[2][size_t(ow)];
    float best = -std::numeric_limits<float>::infinity();
    int64_t arg = -1;
    if (dt.lo < dt.hi && ht.lo < ht.hi && wt.lo < wt.hi)
      arg = ((dt.first + dt.lo * w.dil[0]) * H + ht.first + ht.lo * w.dil[1]) * W + wt.first + wt.lo * w.dil[2];
    for (int64_t td = dt.lo; td < dt.hi; ++td)
      for (int64_t th = ht.lo; th < ht.hi; ++th) {
        const int64_t row = ((dt.first + td * w.dil[0]) * H + ht.first + th * w.dil[1]) * W + wt.first;
        for (int64_t tw = wt.lo; tw < wt.hi; ++tw) {
          const int64_t i = row + tw * w.dil[2];
          const float v = xp[i];
          const bool take = v > best;
          best = take ? v : best;
          arg = take ? i : arg;
        }
      }
    *yp = arg < 0 ? std::numeric_limits<float>::lowest() : best;
    *ap = static_cast<int32_t>(arg);
  }

  // 2-D 3x3 windows, stride 2, no dilation (the stem pools of resnet18 and shufflenet_v2,
  // padding 1): kLanes outputs of a row at a time. Taps kw = 0 and 1 of the outputs are
  // the even and odd lanes of the 2 kLanes columns from the first one's first tap, tap 2
  // the even lanes from two columns on; a lane whose column is outside the row does not
  // take (PoolTaps::row). The same taps in the same order, the maximum from -inf, a
  // strictly greater value replacing it and the argmax from the window's first in-range
  // tap: general_output's result. Outputs whose tap 0 is outside the row (in the
  // padding) and rows wholly in padding go to general_output.
  void planes_3x3s2(const float* x, float* y, int64_t pl0, int64_t pl1) {
    const Window& w = win_;
    const int64_t S = w.in_size(), P = w.out_size(), ow_n = w.out[2];
    // The vector loop's outputs [ow_a, ow_b): those whose tap 0 is in the row (PoolTaps::row;
    // tap 0's range starts and ends last of the three).
    const PoolTaps::RowTap* rt = taps_.row.data();
    const int64_t ow_a = rt[0].lo, ow_b = std::max(ow_a, rt[0].hi);
    for (int64_t pl = pl0; pl < pl1; ++pl)
      for (int64_t oh = 0; oh < w.out[1]; ++oh) {
        const PoolTaps::Axis ht = taps_.axis[1][size_t(oh)];
        const float* xp = x + pl * S;
        float* yr = y + pl * P + oh * ow_n;
        int32_t* ar = argmax_.data() + pl * P + oh * ow_n;
        const bool vec = rowvec::kRowVec && ht.lo < ht.hi;
        for (int64_t ow = 0; ow < (vec ? ow_a : ow_n); ++ow) general_output(xp, 0, oh, ow, yr + ow, ar + ow);
        if (!vec) continue;
#if defined(DL_ROW_VEC)
        using namespace rowvec;
        const int64_t W = w.in[2], off = -w.pad_begin[2];
        for (int64_t ow = ow_a; ow < ow_b; ow += kLanes) {
          const int64_t n = std::min<int64_t>(kLanes, ow_b - ow), c0 = 2 * ow + off;  // tap 0's column, lane 0
          Mask valid[3];
          for (int t = 0; t < 3; ++t) valid[t] = both(head(n), lanes(rt[t].lo - ow, rt[t].hi - ow));
          // The columns each load may read (the same in every row), and tap 0's columns.
          const Mask m0 = lanes(-c0, W - c0), m1 = lanes(-c0 - kLanes, W - c0 - kLanes);
          const Mask m2 = lanes(-c0 - 2, W - c0 - 2), m3 = lanes(-c0 - 2 - kLanes, W - c0 - 2 - kLanes);
          const VecI cols = iota(static_cast<int32_t>(c0), 2);
          // The window's first in-range tap: tap 0 of row ht.lo (tap 0 is in the row here).
          VecI arg = add(cols, static_cast<int32_t>((ht.first + ht.lo) * W));
          Vec best = set1(-std::numeric_limits<float>::infinity());
          for (int64_t th = ht.lo; th < ht.hi; ++th) {
            const int64_t row = (ht.first + th) * W;
            const float* p = xp + row + c0;
            Vec v[3], skip;
            deinterleave(load(m0, p), load(m1, p + kLanes), v[0], v[1]);
            deinterleave(load(m2, p + 2), load(m3, p + 2 + kLanes), v[2], skip);
            for (int t = 0; t < 3; ++t) {
              const Mask take = both(greater(v[t], best), valid[t]);
              best = select(take, v[t], best);
              arg = select(take, add(cols, static_cast<int32_t>(row + t)), arg);
            }
          }
          store(yr + ow, head(n), best);
          store(ar + ow, head(n), arg);
        }
#endif
        for (int64_t ow = ow_b; ow < ow_n; ++ow) general_output(xp, 0, oh, ow, yr + ow, ar + ow);
      }
  }

  // 2-D 2x2 windows (depth 1), stride 2, inside the input: per output row, the two input rows are
  // split into even and odd columns, and the four taps compared in row-major order
  // (runtime/ops/row_vec.h: 16 or 8 outputs at a time, masked at the row's end).
  void planes_2x2(const float* x, float* y, int64_t pl0, int64_t pl1) {
    const Window& w = win_;
    const int64_t S = w.in_size(), P = w.out_size(), W = w.in[2], oh_n = w.out[1], ow_n = w.out[2];
    for (int64_t pl = pl0; pl < pl1; ++pl)
      for (int64_t oh = 0; oh < oh_n; ++oh) {
        const int32_t r0 = static_cast<int32_t>(2 * oh * W), r1 = r0 + static_cast<int32_t>(W);
        const float* __restrict a = x + pl * S + r0;
        float* __restrict yr = y + pl * P + oh * ow_n;
        int32_t* __restrict ar = argmax_.data() + pl * P + oh * ow_n;
        int64_t ow = 0;
#if defined(DL_ROW_VEC)
        using namespace rowvec;
        for (; ow < ow_n; ow += kLanes) {
          const int64_t n = std::min<int64_t>(kLanes, ow_n - ow);
          const int64_t in_n = std::min<int64_t>(2 * kLanes, W - 2 * ow);  // inputs of these windows in each row
          const Mask lo = head(in_n), hi = lanes(0, in_n - kLanes);
          const float* p0 = a + 2 * ow;
          const float* p1 = p0 + W;
          Vec e0, o0, e1, o1;  // the even and odd columns of the two rows
          deinterleave(load(lo, p0), load(hi, p0 + kLanes), e0, o0);
          deinterleave(load(lo, p1), load(hi, p1 + kLanes), e1, o1);
          const VecI arg_r0 = iota(static_cast<int32_t>(r0 + 2 * ow), 2), arg_r1 = add(arg_r0, r1 - r0);
          // From -inf with the first tap's index, as the general loop (a NaN tap is skipped).
          Vec best = set1(-std::numeric_limits<float>::infinity());
          VecI arg = arg_r0;
          Mask t = greater(e0, best);
          best = select(t, e0, best);
          t = greater(o0, best);
          best = select(t, o0, best);
          arg = select(t, add(arg_r0, 1), arg);
          t = greater(e1, best);
          best = select(t, e1, best);
          arg = select(t, arg_r1, arg);
          t = greater(o1, best);
          best = select(t, o1, best);
          arg = select(t, add(arg_r1, 1), arg);
          if (n == kLanes) {
            store(yr + ow, best);
            store(ar + ow, arg);
          } else {
            const Mask m = head(n);
            store(yr + ow, m, best);
            store(ar + ow, m, arg);
          }
        }
#endif
        for (; ow < ow_n; ++ow) {
          const int32_t c = static_cast<int32_t>(2 * ow);
          float best = -std::numeric_limits<float>::infinity();
          int32_t arg = r0 + c;
          const float taps[4] = {a[c], a[c + 1], a[W + c], a[W + c + 1]};
          const int32_t at[4] = {r0 + c, r0 + c + 1, r1 + c, r1 + c + 1};
          for (int k = 0; k < 4; ++k) {
            const bool take = taps[k] > best;
            best = take ? taps[k] : best;
            arg = take ? at[k] : arg;
          }
          yr[ow] = best;
          ar[ow] = arg;
        }
      }
  }

  // Planes in up to kParts fixed parts (from the plane count alone), run on the compute
  // threads when the loop has kParallelWork values or more. f(ctx, first plane, end
  // plane) runs once per part, with ctx.part set.
  static constexpr int64_t kParts = ValueSink::kParts, kParallelWork = int64_t{1} << 16;
  struct Parts {
    MaxPool* op;
    const float* x;
    float* y;
    ValueSink* stats;
    int64_t part = 0;
    void (*f)(const Parts&, int64_t, int64_t) = nullptr;
    void run(int64_t work, void (*fn)(const Parts&, int64_t, int64_t)) const {
      Parts c = *this;
      c.f = fn;
      const int64_t parts = std::min<int64_t>(op->planes_, kParts);
      parallel_blocks(parts, loop_threads(work, kParallelWork), [](const void* p, int64_t part) {
        Parts c = *static_cast<const Parts*>(p);
        c.part = part;
        int64_t pl0, pl1;
        even_range(c.op->planes_, std::min<int64_t>(c.op->planes_, kParts), part, pl0, pl1);
        c.f(c, pl0, pl1);
      }, &c);
    }
  };

  void write_indices(int64_t* ind) const {
    const int64_t S = win_.in_size(), P = win_.out_size(), H = win_.in[1], W = win_.in[2];
    for (int64_t pl = 0; pl < planes_; ++pl)
      for (int64_t o = 0; o < P; ++o) {
        int64_t a = argmax_[static_cast<size_t>(pl * P + o)];
        if (a >= 0 && storage_order_ == 1) a = (a % W) * H + a / W;  // 2-D view: (h, w) -> w * H + h
        ind[pl * P + o] = a < 0 ? -1 : pl * S + a;
      }
  }

  WindowAttrs attrs_;
  int64_t storage_order_ = 0;
  PoolTaps taps_;
  Window win_;
  int64_t planes_ = 0;
  std::vector<int32_t> argmax_;  // per output: plane-local flat input index, -1 if none
  bool inside_ = false;          // every window inside the input, no dilation: forward_inside
  bool rows_3x3s2_ = false;      // 2-D 3x3 windows, stride 2, no dilation: planes_3x3s2
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<MaxPool>(node); }

// Distinct values at least 0.2 apart in a shuffled order: no ties inside any window.
std::vector<float> distinct(int64_t n, int64_t mult) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k)
    v[static_cast<size_t>(k)] = 0.2f * static_cast<float>((k * mult) % n) - 0.1f * static_cast<float>(n);
  return v;
}

std::vector<OpSample> samples() {
  OpSample a;
  a.label = "maxpool 2-D 3x3 stride 2, pads 1, ceil_mode";
  a.node = sample_node("MaxPool", 1, 1,
                       {{"kernel_shape", attr_ints({3, 3})},
                        {"strides", attr_ints({2, 2})},
                        {"pads", attr_ints({1, 1, 0, 0})},
                        {"ceil_mode", attr_i(1)}},
                       12);
  a.inputs = {Tensor::floats({1, 2, 5, 6}, distinct(60, 7))};
  a.check_grad = {true};
  OpSample b;
  b.label = "maxpool 2-D 2x2 dilations 2, SAME_UPPER, with Indices";
  b.node = sample_node(
      "MaxPool", 1, 2,
      {{"kernel_shape", attr_ints({2, 2})}, {"dilations", attr_ints({2, 2})}, {"auto_pad", attr_s("SAME_UPPER")}}, 12);
  b.inputs = {Tensor::floats({2, 1, 4, 4}, distinct(32, 5))};
  b.check_grad = {true};
  OpSample c;
  c.label = "maxpool 1-D kernel 3 stride 2";
  c.node = sample_node("MaxPool", 1, 1, {{"kernel_shape", attr_ints({3})}, {"strides", attr_ints({2})}}, 12);
  c.inputs = {Tensor::floats({1, 2, 9}, distinct(18, 5))};
  c.check_grad = {true};
  return {a, b, c};
}

}  // namespace

OpInfo op_info_max_pool() { return {"MaxPool", {1, 8, 10, 11, 12}, make, samples}; }

}  // namespace dl::rt
