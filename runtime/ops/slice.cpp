// Slice (since 1, 10, 11, 13): out = data[starts:ends:steps] along the listed axes.
// Version 1 reads starts/ends/axes from attributes; 10+ from inputs (starts, ends, axes,
// steps), which must be known at plan time. Negative starts/ends count from the end;
// they are then clamped as the spec says: to [0, dim] for a positive step, to
// [-1, dim - 1] (start to [0, dim - 1]) for a negative one, so INT64_MAX means "to the
// end" and INT64_MIN "past the beginning". Negative axes from 11 (accepted in 10, as
// onnxruntime does). Backward scatter-adds dy into the elements read.
#include <limits>

#include "runtime/attrs.h"
#include "runtime/ops/shape_util.h"
#include "runtime/ops/strided.h"

namespace dl::rt {
namespace {

class Slice : public StridedViewOp {
 public:
  explicit Slice(const ir::Node& node) : StridedViewOp(node), attr_form_(node.since_version == 1) {
    Attrs a(node);
    if (attr_form_) {
      if (!a.has("starts") || !a.has("ends")) a.fail(a.has("starts") ? "ends" : "starts", "is required");
      starts_ = a.ints("starts");
      ends_ = a.ints("ends");
      axes_ = a.ints("axes");
    }
    a.finish();
  }

  void infer(InferCtx& ctx) override {
    std::vector<int64_t> starts = starts_, ends = ends_, axes = axes_, steps;
    if (attr_form_) {
      check_inputs(ctx, 1, 1, 1, where());
    } else {
      check_inputs(ctx, 3, 5, 3, where());
      starts = known_ints(ctx, 1, where(), "starts");
      ends = known_ints(ctx, 2, where(), "ends");
      if (ctx.in.size() > 3 && ctx.in[3]) axes = known_ints(ctx, 3, where(), "axes");
      if (ctx.in.size() > 4 && ctx.in[4]) steps = known_ints(ctx, 4, where(), "steps");
    }
    const Tensor& x = *ctx.in[0];
    const int64_t r = x.rank();
    if (r == 0) throw ShapeError(where() + ": cannot slice a scalar");
    if (ends.size() != starts.size())
      throw ShapeError(where() + ": starts " + shape_str(starts) + " and ends " + shape_str(ends) +
                       " differ in length");
    if (axes.empty())
      for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (axes.size() != starts.size() || steps.size() != starts.size())
      throw ShapeError(where() + ": axes " + shape_str(axes) + " and steps " + shape_str(steps) +
                       " must have as many entries as starts " + shape_str(starts));
    const Shape& in = x.shape();
    const std::vector<int64_t> in_strides = row_major_strides(in);
    Shape out = in;
    std::vector<int64_t> strides = in_strides;
    box_begin_.assign(in.size(), 0);
    box_end_ = in;
    box_ = true;
    std::vector<bool> seen(static_cast<size_t>(r), false);
    int64_t base = 0;
    for (size_t k = 0; k < starts.size(); ++k) {
      const size_t ax = static_cast<size_t>(normalize_axis(axes[k], r, where(), "axis"));
      if (seen[ax]) throw ShapeError(where() + ": axis " + std::to_string(axes[k]) + " is listed twice");
      seen[ax] = true;
      const int64_t step = steps[k], d = in[ax];
      if (step == 0) throw ShapeError(where() + ": steps " + shape_str(steps) + " has a 0");
      int64_t s = starts[k], e = ends[k];
      if (s < 0) s = s < std::numeric_limits<int64_t>::min() + d ? std::numeric_limits<int64_t>::min() : s + d;
      if (e < 0) e = e < std::numeric_limits<int64_t>::min() + d ? std::numeric_limits<int64_t>::min() : e + d;
      if (step > 0) {
        s = std::clamp<int64_t>(s, 0, d);
        e = std::clamp<int64_t>(e, 0, d);
      } else {
        s = std::clamp<int64_t>(s, 0, d - 1);
        e = std::clamp<int64_t>(e, -1, d - 1);
      }
      const int64_t span = step > 0 ? e - s : s - e, mag = step > 0 ? step : -step;
      out[ax] = span <= 0 ? 0 : (span + mag - 1) / mag;
      base += out[ax] > 0 ? s * in_strides[ax] : 0;
      box_ = box_ && step == 1;
      box_begin_[ax] = s;
      box_end_[ax] = s + out[ax];
      strides[ax] = out[ax] > 1 ? step * in_strides[ax] : 0;  // (|step| <= d then: no overflow)
    }
    walk_.set(out, strides, base);
    ctx.out[0]->plan(x.dtype(), std::move(out));
  }

  bool selects_box(Shape& begin, Shape& end) const override {
    if (!box_) return false;
    begin = box_begin_;
    end = box_end_;
    return true;
  }

 private:
  bool attr_form_;
  bool box_ = false;  // every step 1: out[0] is in[0]'s box [box_begin_, box_end_)
  Shape box_begin_, box_end_;
  std::vector<int64_t> starts_, ends_, axes_;
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<Slice>(node); }

std::vector<OpSample> samples() {
  std::vector<float> v(24);
  for (size_t k = 0; k < v.size(); ++k) v[k] = 0.11f * float(k) - 1.3f;
  const int64_t big = std::numeric_limits<int64_t>::max();
  OpSample a;
  a.label = "slice 2x3x4 axes [2, 1], starts [1, 0], ends [big, -1], steps [2, 1]";
  a.node = sample_node("Slice", 5, 1, {}, 13);
  a.inputs = {Tensor::floats({2, 3, 4}, v), Tensor::ints({2}, {1, 0}), Tensor::ints({2}, {big, -1}),
              Tensor::ints({2}, {2, 1}), Tensor::ints({2}, {2, 1})};
  a.check_grad = {true, false, false, false, false};
  OpSample b;
  b.label = "slice 2x3x4 negative step on the last axis, default axes";
  b.node = sample_node("Slice", 5, 1, {}, 13);
  b.inputs = {Tensor::floats({2, 3, 4}, v), Tensor::ints({3}, {0, 2, -1}), Tensor::ints({3}, {2, 0, -big}),
              Tensor::ints({3}, {0, 1, 2}), Tensor::ints({3}, {1, -1, -2})};
  b.check_grad = {true, false, false, false, false};
  OpSample c;
  c.label = "slice version 1 attributes, int64 data";
  c.node = sample_node("Slice", 1, 1, {{"starts", attr_ints({1})}, {"ends", attr_ints({3})}}, 1);
  c.inputs = {Tensor::ints({4}, {8, 3, 5, 5})};
  c.check_grad = {false};
  return {a, b, c};
}

}  // namespace

OpInfo op_info_slice() { return {"Slice", {1, 10, 11, 13}, make, samples}; }

}  // namespace dl::rt
