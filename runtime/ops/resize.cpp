// Resize (since 10, 11, 13): nearest, (multi)linear or cubic interpolation of X to `sizes`, or
// to floor(in * scales), on any axes (torch exports nn.Upsample / F.interpolate as a
// Resize of the spatial axes of N, C, H, W). roi, scales and sizes must be known at plan
// time (constants or shape arithmetic, as torch exports them): they decide the output
// shape. Version 10 has only X and scales, and the asymmetric transformation; nearest
// then rounds down (torch's nearest, which its opset-10 export targets).
//
// Backward to X scatter-adds dy with the interpolation weights (interp.h).
#include <cmath>

#include "runtime/attrs.h"
#include "runtime/ops/interp.h"
#include "runtime/ops/shape_util.h"

namespace dl::rt {
namespace {

class Resize : public Op {
 public:
  explicit Resize(const ir::Node& node) : Op(node), v10_(node.since_version == 10) {
    Attrs a(node);
    const std::string kind = a.s("mode", "nearest");
    if (!parse_interp_kind(kind, mode_.kind)) a.fail("mode", "must be nearest, linear or cubic, got '" + kind + "'");
    if (v10_ && mode_.kind == InterpMode::Kind::kCubic) a.fail("mode", "cubic needs Resize-11 or later");
    if (v10_) {
      mode_.coord = InterpMode::Coord::kAsymmetric;
      mode_.round = InterpMode::Round::kFloor;
    } else {
      const std::string coord = a.s("coordinate_transformation_mode", "half_pixel");
      if (!parse_interp_coord(coord, mode_.coord))
        a.fail("coordinate_transformation_mode",
               "must be half_pixel, pytorch_half_pixel, align_corners, asymmetric or tf_crop_and_resize, got '" +
                   coord + "'");
      const std::string round = a.s("nearest_mode", "round_prefer_floor");
      if (!parse_interp_round(round, mode_.round))
        a.fail("nearest_mode", "must be round_prefer_floor, round_prefer_ceil, floor or ceil, got '" + round + "'");
      mode_.cubic_a = a.finite("cubic_coeff_a", -0.75f);
      // Nearest and linear taps clamp to the edge already: exclude_outside changes only cubic.
      mode_.exclude_outside = a.i("exclude_outside", 0) != 0;
      mode_.extrapolation = a.finite("extrapolation_value", 0.0f);
    }
    a.finish();
  }

  void infer(InferCtx& ctx) override {
    const size_t n_in = v10_ ? 2 : 4;
    check_inputs(ctx, 2, n_in, 1, where());
    const Tensor& x = *ctx.in[0];
    if (x.dtype() != DType::kFloat32) throw ShapeError(where() + ": X must be float32, got " + dtype_name(x.dtype()));
    const size_t rank = static_cast<size_t>(x.rank());
    const size_t i_scales = v10_ ? 1 : 2, i_sizes = 3, i_roi = 1;
    const Tensor* scales = present(ctx, i_scales);
    const Tensor* sizes = v10_ ? nullptr : present(ctx, i_sizes);
    if (!scales == !sizes)
      throw ShapeError(where() + ": exactly one of 'scales' and 'sizes' must be given (non-empty)");
    std::vector<double> roi;
    if (mode_.coord == InterpMode::Coord::kTfCropAndResize) {
      const Tensor* r = present(ctx, i_roi);
      if (!r) throw ShapeError(where() + ": tf_crop_and_resize needs input 'roi'");
      roi = known_floats(ctx, i_roi, "roi", 2 * rank);
    }
    Shape out(rank);
    std::vector<double> scale(rank);
    if (sizes) {
      const std::vector<int64_t> s = known_ints(ctx, i_sizes, where(), "sizes");
      if (s.size() != rank)
        throw ShapeError(where() + ": 'sizes' has " + std::to_string(s.size()) + " values for X " +
                         shape_str(x.shape()));
      for (size_t a = 0; a < rank; ++a) {
        if (s[a] < 1 || x.shape()[a] < 1)
          throw ShapeError(where() + ": sizes " + shape_str(s) + " for X " + shape_str(x.shape()) +
                           ": every size must be positive");
        out[a] = s[a];
        scale[a] = double(s[a]) / double(x.shape()[a]);
      }
    } else {
      const std::vector<double> s = known_floats(ctx, i_scales, "scales", rank);
      for (size_t a = 0; a < rank; ++a) {
        if (!(s[a] > 0) || !std::isfinite(s[a]))
          throw ShapeError(where() + ": scale " + attr_number(float(s[a])) + " of axis " + std::to_string(a) +
                           " must be positive");
        const double crop = roi.empty() ? 1.0 : roi[rank + a] - roi[a];
        const double length = std::floor(double(x.shape()[a]) * crop * s[a]);
        if (length > 0x1p62)
          throw ResourceError(where() + ": scale " + attr_number(float(s[a])) + " makes axis " + std::to_string(a) +
                              " of X " + shape_str(x.shape()) + " longer than can be addressed");
        out[a] = length >= 1 ? static_cast<int64_t>(length) : 0;  // NaN (a NaN roi) too
        if (out[a] < 1)
          throw ShapeError(where() + ": scale " + attr_number(float(s[a])) + " leaves no output along axis " +
                           std::to_string(a) + " of X " + shape_str(x.shape()));
        scale[a] = s[a];
      }
    }
    // The interpolation tables hold, per output coordinate of each axis, up to 4 taps of
    // an int64 offset and a float weight: sized by the attributes, so checked first.
    const double taps = mode_.kind == InterpMode::Kind::kNearest ? 1 : mode_.kind == InterpMode::Kind::kLinear ? 2 : 4;
    double tables = 0;
    for (size_t a = 0; a < rank; ++a) tables += double(out[a]) * (taps * 12 + 1);
    ctx.reserve(where(), tables, "its interpolation tables for output " + shape_str(out),
                double(shape_numel(out)) * sizeof(float));
    interp_.plan(mode_, x.shape(), out, scale, roi);
    ctx.out[0]->plan(DType::kFloat32, out);
  }

  void forward(FwdCtx& ctx) override { interp_.forward(ctx.in[0]->f(), ctx.out[0]->f()); }

  void backward(BwdCtx& ctx) override {
    if (!ctx.din[0] || !ctx.dout[0]) return;
    interp_.backward(ctx.dout[0]->f(), ctx.din[0]->f());
  }

  OpTraits traits() const override {
    OpTraits t;
    t.linear = true;  // a fixed linear map of X
    return t;
  }
  bool differentiable_input(size_t i) const override { return i == 0; }
  bool plan_time_input(size_t i) const override { return i > 0; }

 private:
  // Input i when given and non-empty (torch writes an empty scales next to sizes).
  static const Tensor* present(const InferCtx& ctx, size_t i) {
    return i < ctx.in.size() && ctx.in[i] && ctx.in[i]->numel() > 0 ? ctx.in[i] : nullptr;
  }

  std::vector<double> known_floats(const InferCtx& ctx, size_t i, const char* name, size_t count) const {
    const Tensor& t = *ctx.in[i];
    if (t.dtype() != DType::kFloat32)
      throw ShapeError(where() + ": input '" + name + "' must be float32, got " + dtype_name(t.dtype()));
    if (i >= ctx.known.size() || !ctx.known[i])
      throw ShapeError(where() + ": input '" + name +
                       "' is computed at run time; a data-dependent output shape is not supported");
    if (static_cast<size_t>(t.numel()) != count)
      throw ShapeError(where() + ": input '" + name + "' has " + std::to_string(t.numel()) + " values, expected " +
                       std::to_string(count));
    return std::vector<double>(t.f(), t.f() + t.numel());
  }

  bool v10_;
  InterpMode mode_;
  Interp interp_;
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<Resize>(node); }

std::vector<float> ramp(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[size_t(k)] = 0.3f * static_cast<float>((k * 7) % 11) - 1.4f;
  return v;
}

std::vector<OpSample> samples() {
  std::vector<OpSample> out;
  auto add = [&](const std::string& label, std::map<std::string, ir::Attribute> attrs, Shape x,
                 std::vector<float> scales, std::vector<int64_t> sizes) {
    OpSample s;
    s.label = label;
    s.node = sample_node("Resize", 4, 1, std::move(attrs), 13);
    s.inputs = {Tensor::floats(x, ramp(shape_numel(x))), Tensor::floats({0}, {}),
                Tensor::floats({int64_t(scales.size())}, scales), Tensor::ints({int64_t(sizes.size())}, sizes)};
    s.check_grad = {true, false, false, false};
    out.push_back(std::move(s));
  };
  add("resize nearest x2 (torch nn.Upsample)",
      {{"mode", attr_s("nearest")},
       {"nearest_mode", attr_s("floor")},
       {"coordinate_transformation_mode", attr_s("asymmetric")}},
      {1, 2, 2, 3}, {1, 1, 2, 2}, {});
  add("resize linear half_pixel x2", {{"mode", attr_s("linear")}}, {1, 1, 3, 3}, {1, 1, 2, 2}, {});
  add("resize linear align_corners to sizes 5x4",
      {{"mode", attr_s("linear")}, {"coordinate_transformation_mode", attr_s("align_corners")}}, {2, 1, 3, 2}, {},
      {2, 1, 5, 4});
  add("resize linear pytorch_half_pixel downsample to 2x3",
      {{"mode", attr_s("linear")}, {"coordinate_transformation_mode", attr_s("pytorch_half_pixel")}}, {1, 2, 4, 5}, {},
      {1, 2, 2, 3});
  add("resize cubic A -0.5, exclude_outside, to sizes 3x5",
      {{"mode", attr_s("cubic")}, {"cubic_coeff_a", attr_f(-0.5f)}, {"exclude_outside", attr_i(1)}}, {1, 1, 2, 3}, {},
      {1, 1, 3, 5});
  add("resize cubic align_corners x2",
      {{"mode", attr_s("cubic")}, {"coordinate_transformation_mode", attr_s("align_corners")}}, {1, 2, 3, 3},
      {1, 1, 2, 2}, {});
  add("resize nearest round_prefer_ceil scales 1.5", {{"nearest_mode", attr_s("round_prefer_ceil")}}, {1, 1, 2, 4},
      {1, 1, 1.5f, 1.5f}, {});
  return out;
}

}  // namespace

OpInfo op_info_resize() { return {"Resize", {10, 11, 13}, make, samples}; }

}  // namespace dl::rt
