// Pad (since 2, 11, 13): pads (or, with negative pads, crops) every axis of `data`.
// pads = [x1_begin, x2_begin, ..., x1_end, x2_end, ...]: the `pads` attribute before 11,
// an int64 input from 11 that must be known at plan time (it fixes the output shape).
// mode "constant" fills with `value` (attribute) / `constant_value` (optional scalar
// input, read at forward time); "edge" repeats the border element; "reflect" mirrors
// about the border element without repeating it, exactly as numpy.pad does (the spec's
// reference): pads as large as the axis reflect the padded values again (the spec's
// example 2 pads an axis of 2 by 2), a size-1 axis is repeated. Negative pads crop
// first and the positive pads then pad the cropped region (onnxruntime's order), so
// edge/reflect copy from the cropped data.
//
// Every output element is either the constant or one input element, found through a
// per-axis index map built at plan time; backward scatters dy through the same maps, so
// the elements that edge/reflect replicated accumulate into their source.
#include "runtime/attrs.h"
#include "runtime/data/io.h"
#include "runtime/ops/shape_util.h"

namespace dl::rt {
namespace {

enum class Mode { kConstant, kReflect, kEdge };

class PadOp : public Op {
 public:
  PadOp(const ir::Node& node, bool pads_are_inputs, std::vector<int64_t> pads, float value, Mode mode)
      : Op(node), pads_are_inputs_(pads_are_inputs), pads_attr_(std::move(pads)), value_(value), mode_(mode) {}

  void infer(InferCtx& ctx) override {
    check_inputs(ctx, 1, pads_are_inputs_ ? 3 : 1, pads_are_inputs_ ? 2 : 1, where());
    const Tensor& x = *ctx.in[0];
    const std::vector<int64_t> pads = pads_are_inputs_ ? known_ints(ctx, 1, where(), "pads") : pads_attr_;
    if (const Tensor* c = ctx.in.size() > 2 ? ctx.in[2] : nullptr) {
      if (c->numel() != 1)
        throw ShapeError(where() + ": constant_value must be a scalar, got shape " + shape_str(c->shape()));
      if (c->dtype() != x.dtype())
        throw ShapeError(where() + ": constant_value is " + std::string(dtype_name(c->dtype())) +
                         " but data is " + dtype_name(x.dtype()));
    }
    const size_t r = static_cast<size_t>(x.rank());
    if (pads.size() != 2 * r)
      throw ShapeError(where() + ": pads " + shape_str(pads) + " must hold 2 * rank = " + std::to_string(2 * r) +
                       " values for data " + shape_str(x.shape()));
    Shape out(r);
    // The output shape first, overflow-checked, and its size and the index maps (one
    // int64 per output index of each axis) against the memory cap: huge pads are refused
    // before anything is allocated.
    int64_t map_entries = 0;
    for (size_t d = 0; d < r; ++d) {
      const int64_t n = x.shape()[d];
      int64_t crop = 0;
      if (pads[d] == std::numeric_limits<int64_t>::min() || pads[d + r] == std::numeric_limits<int64_t>::min() ||
          __builtin_add_overflow(std::max<int64_t>(-pads[d], 0), std::max<int64_t>(-pads[d + r], 0), &crop) ||
          crop > n)
        throw ShapeError(where() + ": pads " + shape_str(pads) + " crop axis " + std::to_string(d) + " of data " +
                         shape_str(x.shape()) + " below zero");
      if (__builtin_add_overflow(n, pads[d], &out[d]) || __builtin_add_overflow(out[d], pads[d + r], &out[d]) ||
          __builtin_add_overflow(map_entries, out[d], &map_entries))
        throw ShapeError(where() + ": pads " + shape_str(pads) + " make axis " + std::to_string(d) + " of data " +
                         shape_str(x.shape()) + " too large");
    }
    const int64_t numel = shape_numel(out);  // ResourceError when not addressable
    const double needed = double(map_entries) * 8 + double(numel) * (x.dtype() == DType::kFloat32 ? 4 : 8);
    if (needed > double(ctx.max_bytes))
      throw ResourceError(where() + ": output of shape " + shape_str(out) + " needs " + data::human_bytes(needed) +
                          " with its index maps, over what the memory cap leaves (" +
                          data::human_bytes(double(ctx.max_bytes)) + "; raise it with --max-memory)");
    ctx.charge(map_entries * 8, "its index maps");
    map_.clear();
    map_at_.assign(r + 1, 0);
    in_strides_.assign(r, 1);
    for (size_t d = r; d-- > 1;) in_strides_[d - 1] = in_strides_[d] * x.shape()[d];
    for (size_t d = 0; d < r; ++d) {
      const int64_t n = x.shape()[d];
      build_map(d, n, pads[d], pads[d + r], pads);
      map_at_[d + 1] = static_cast<int64_t>(map_.size());
    }
    counter_.assign(r, 0);
    ctx.out[0]->plan(x.dtype(), std::move(out));
  }

  void forward(FwdCtx& ctx) override {
    const Tensor& x = *ctx.in[0];
    Tensor& y = *ctx.out[0];
    const Tensor* c = ctx.in.size() > 2 ? ctx.in[2] : nullptr;
    if (x.dtype() == DType::kFloat32)
      fill(x.f(), y.f(), c ? c->f()[0] : (pads_are_inputs_ ? 0.0f : value_), y.numel());
    else
      fill(x.i(), y.i(), c ? c->i()[0] : int64_t(pads_are_inputs_ ? 0 : value_), y.numel());
  }

  void backward(BwdCtx& ctx) override {
    if (!ctx.din[0] || !ctx.dout[0]) return;
    const float* dy = ctx.dout[0]->f();
    float* dx = ctx.din[0]->f();
    walk(ctx.dout[0]->numel(), [&](int64_t o, int64_t base, const int64_t* src, int64_t n, bool all_constant) {
      if (all_constant) return;
      for (int64_t k = 0; k < n; ++k)
        if (src[k] >= 0) dx[base + src[k]] += dy[o + k];
    });
  }

  OpTraits traits() const override { return shape_traits(); }
  bool differentiable_input(size_t i) const override { return i == 0; }

 private:
  // Appends axis d's map: for each output index, the input index it copies or -1 (constant).
  void build_map(size_t d, int64_t n, int64_t begin, int64_t end, const std::vector<int64_t>& pads) {
    const int64_t lo = begin < 0 ? -begin : 0;  // the cropped region [lo, hi) of the input axis
    const int64_t hi = end < 0 ? n + end : n;
    const int64_t c = hi - lo;
    const int64_t left = std::max<int64_t>(begin, 0), right = std::max<int64_t>(end, 0);
    if (left + right > 0 && mode_ != Mode::kConstant && c == 0)
      throw ShapeError(where() + ": cannot " + (mode_ == Mode::kEdge ? "edge" : "reflect") + "-pad axis " +
                       std::to_string(d) + " of size 0 (after cropping) with pads " + shape_str(pads));
    const size_t at = map_.size();
    const int64_t m = c + left + right;
    map_.resize(at + static_cast<size_t>(m), -1);
    int64_t* a = map_.data() + at;
    for (int64_t k = 0; k < c; ++k) a[left + k] = lo + k;
    if (mode_ == Mode::kEdge || (mode_ == Mode::kReflect && c == 1)) {  // numpy: a size-1 axis reflects as edge
      for (int64_t k = 0; k < left; ++k) a[k] = lo;
      for (int64_t k = left + c; k < m; ++k) a[k] = hi - 1;
    } else if (mode_ == Mode::kReflect) {
      reflect(a, m, left, right);
    }
  }

  // numpy.pad's reflect, on indices: mirror chunks no longer than the filled region minus
  // its border element, alternating sides, until the pads are filled. For pads smaller
  // than the axis this is the plain mirror; larger pads reflect the already padded values.
  static void reflect(int64_t* a, int64_t m, int64_t left, int64_t right) {
    while (left > 0 || right > 0) {
      const int64_t old = m - left - right - 1;
      if (left > 0) {
        const int64_t chunk = std::min(old, left);
        for (int64_t j = 0; j < chunk; ++j) a[left - chunk + j] = a[left + chunk - j];
        left -= chunk;
      }
      if (right > 0) {
        const int64_t chunk = std::min(old, right);
        for (int64_t j = 0; j < chunk; ++j) a[m - right + j] = a[m - right - 2 - j];
        right -= chunk;
      }
    }
  }

  template <class T>
  void fill(const T* x, T* y, T value, int64_t total) {
    walk(total, [&](int64_t o, int64_t base, const int64_t* src, int64_t n, bool all_constant) {
      if (all_constant) {
        std::fill(y + o, y + o + n, value);
        return;
      }
      for (int64_t k = 0; k < n; ++k) y[o + k] = src[k] >= 0 ? x[base + src[k]] : value;
    });
  }

  // Calls f(output offset, input base offset, inner map, inner length, all_constant) for
  // each run of the innermost output axis, walking the outer axes as an odometer.
  // all_constant: an outer index maps to the constant, so the whole run is constant.
  template <class F>
  void walk(int64_t total, F f) {
    const size_t r = counter_.size();
    if (total == 0) return;
    if (r == 0) {
      const int64_t zero = 0;
      f(0, 0, &zero, 1, false);
      return;
    }
    std::fill(counter_.begin(), counter_.end(), 0);
    const int64_t* inner = map_.data() + map_at_[r - 1];
    const int64_t inner_n = map_at_[r] - map_at_[r - 1];
    for (int64_t o = 0; o < total; o += inner_n) {
      int64_t base = 0;
      bool constant = false;
      for (size_t d = 0; d + 1 < r; ++d) {
        const int64_t s = map_[static_cast<size_t>(map_at_[d] + counter_[d])];
        constant = constant || s < 0;
        base += s * in_strides_[d];
      }
      f(o, base, inner, inner_n, constant);
      for (size_t d = r - 1; d-- > 0;) {  // advance the outer odometer
        if (++counter_[d] < map_at_[d + 1] - map_at_[d]) break;
        counter_[d] = 0;
      }
    }
  }

  bool pads_are_inputs_;
  std::vector<int64_t> pads_attr_;  // before 11
  float value_;                     // before 11
  Mode mode_;
  std::vector<int64_t> map_;      // per-axis index maps, concatenated
  std::vector<int64_t> map_at_;   // axis d's map is map_[map_at_[d], map_at_[d + 1])
  Shape in_strides_;
  std::vector<int64_t> counter_;  // odometer over output axes
};

std::unique_ptr<Op> make(const ir::Node& node) {
  Attrs a(node);
  const bool inputs = node.since_version == 0 || node.since_version >= 11;
  std::vector<int64_t> pads;
  float value = 0.0f;
  if (!inputs) {
    if (!a.has("pads")) a.fail("pads", "is required");
    pads = a.ints("pads");
    value = a.f("value", 0.0f);
  }
  const std::string m = a.s("mode", "constant");
  Mode mode = Mode::kConstant;
  if (m == "reflect")
    mode = Mode::kReflect;
  else if (m == "edge")
    mode = Mode::kEdge;
  else if (m != "constant")
    a.fail("mode", "must be \"constant\", \"reflect\" or \"edge\", got \"" + m + "\"");
  a.finish();
  return std::make_unique<PadOp>(node, inputs, std::move(pads), value, mode);
}

std::vector<OpSample> samples() {
  std::vector<float> v(24);
  for (size_t k = 0; k < v.size(); ++k) v[k] = 0.13f * float(k) - 1.5f;
  std::vector<OpSample> out(4);
  out[0].label = "opset 13 constant 2x3x4, pads [0,1,2, 1,0,1], constant_value 0.5";
  out[0].node = sample_node("Pad", 3, 1, {}, 13);
  out[0].inputs = {Tensor::floats({2, 3, 4}, v), Tensor::ints({6}, {0, 1, 2, 1, 0, 1}), Tensor::floats({}, {0.5f})};
  out[0].check_grad = {true, false, false};
  out[1].label = "opset 13 reflect 2x3x4, pads [1,2,3, 1,0,2]";
  out[1].node = sample_node("Pad", 2, 1, {{"mode", attr_s("reflect")}}, 13);
  out[1].inputs = {Tensor::floats({2, 3, 4}, v), Tensor::ints({6}, {1, 2, 3, 1, 0, 2})};
  out[1].check_grad = {true, false};
  out[2].label = "opset 11 edge 3x8 with cropping, pads [2,-2, -1,3]";
  out[2].node = sample_node("Pad", 2, 1, {{"mode", attr_s("edge")}}, 11);
  out[2].inputs = {Tensor::floats({3, 8}, v), Tensor::ints({4}, {2, -2, -1, 3})};
  out[2].check_grad = {true, false};
  out[3].label = "opset 2 attributes, constant value -1, pads [-1,1, 0,-2]";
  out[3].node = sample_node("Pad", 1, 1, {{"pads", attr_ints({-1, 1, 0, -2})}, {"value", attr_f(-1.0f)}}, 2);
  out[3].inputs = {Tensor::floats({4, 6}, v)};
  out[3].check_grad = {true};
  return out;
}

}  // namespace

OpInfo op_info_pad() { return {"Pad", {2, 11, 13}, make, samples}; }

}  // namespace dl::rt
