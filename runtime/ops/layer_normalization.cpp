// LayerNormalization (since 17): each row of X over the axes from `axis` on (the
// normalized part, D values) becomes Y = (X - mean) / sqrt(var + epsilon) * Scale + B,
// with the row's mean and population variance. Scale and the optional B hold D values
// (shape X[axis:], leading 1s allowed). The optional outputs Mean and InvStdDev have X's
// shape with the normalized axes set to 1. stash_type 1 (float32) only: statistics are
// accumulated in double and kept in float32 either way.
//
// A parameterised normalisation layer like BatchNormalization: Scale and B are its
// trainable scale and bias (traits), and it keeps no running statistics.
#include <cmath>

#include "runtime/attrs.h"
#include "runtime/ops/shape_util.h"
#include "runtime/sink_chunks.h"

namespace dl::rt {
namespace {

// sum of term(k) for k < n in double, in 8 interleaved lanes combined pairwise: a fixed
// order (independent of the buffer's address and of the batch) that vectorises, where a
// serial double sum waited on each add (the forward was 3 ns per value).
template <class Term>
double lane_sum_d(int64_t n, Term term) {
  constexpr int kL = 8;
  double acc[kL] = {};
  int64_t k = 0;
  for (; k + kL <= n; k += kL)
    for (int j = 0; j < kL; ++j) acc[j] += term(k + j);
  for (int j = 0; k < n; ++k, ++j) acc[j] += term(k);
  for (int w = kL / 2; w > 0; w /= 2)
    for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
  return acc[0];
}

class LayerNormalization : public Op {
 public:
  explicit LayerNormalization(const ir::Node& node) : Op(node) {
    Attrs a(node);
    axis_attr_ = a.i("axis", -1);
    epsilon_ = a.f("epsilon", 1e-5f);
    if (a.i("stash_type", 1) != 1) a.fail("stash_type", "must be 1 (float32): other stash types are not supported");
    a.finish();
  }

  void infer(InferCtx& ctx) override {
    check_inputs(ctx, 2, 3, 2, where());
    for (const Tensor* t : ctx.in)
      if (t && t->dtype() != DType::kFloat32) throw ShapeError(where() + ": inputs must be float32");
    const Tensor& x = *ctx.in[0];
    if (x.rank() == 0) throw ShapeError(where() + ": X must have rank >= 1, got a scalar");
    const size_t axis = static_cast<size_t>(normalize_axis(axis_attr_, x.rank(), where(), "axis"));
    const Shape norm(x.shape().begin() + static_cast<std::ptrdiff_t>(axis), x.shape().end());
    rows_ = 1;
    for (size_t k = 0; k < axis; ++k) rows_ *= x.shape()[k];
    d_ = shape_numel(norm);
    static const char* kNames[] = {"X", "Scale", "B"};
    for (size_t i = 1; i < ctx.in.size(); ++i)
      if (ctx.in[i] && !fits(ctx.in[i]->shape(), norm))
        throw ShapeError(where() + ": " + kNames[i] + " " + shape_str(ctx.in[i]->shape()) + " must have shape " +
                         shape_str(norm) + " (X " + shape_str(x.shape()) + " from axis " +
                         std::to_string(axis_attr_) + ")");
    has_b_ = ctx.in.size() > 2 && ctx.in[2];
    ctx.out[0]->plan(DType::kFloat32, x.shape());
    if (ctx.out.size() > 3) throw ShapeError(where() + ": has " + std::to_string(ctx.out.size()) + " outputs, at most 3");
    Shape stat = x.shape();
    for (size_t k = axis; k < stat.size(); ++k) stat[k] = 1;
    for (size_t k = 1; k < ctx.out.size(); ++k)
      if (ctx.out[k]) ctx.out[k]->plan(DType::kFloat32, stat);
    mean_.assign(static_cast<size_t>(rows_), 0.0f);
    invstd_.assign(static_cast<size_t>(rows_), 0.0f);
    row_scale_.assign(static_cast<size_t>(rows_), 0.0f);
  }

  void forward(FwdCtx& ctx) override {
    const float* x = ctx.in[0]->f();
    const float* scale = ctx.in[1]->f();
    const float* b = has_b_ ? ctx.in[2]->f() : nullptr;
    float* y = ctx.out[0]->f();
    float* scale_of_row = ctx.feature_stats ? row_scale_.data() : nullptr;
    ChunkReporter report(ctx.out_stats, y, rows_ * d_);  // Y, as its rows are done
    for (int64_t r = 0; r < rows_; ++r) {
      const float* xr = x + r * d_;
      // Two passes: the variance from deviations, not E[x^2] - mean^2.
      const double s = lane_sum_d(d_, [xr](int64_t k) { return double(xr[k]); });
      const double mean = d_ > 0 ? s / double(d_) : 0.0;
      const double ss = lane_sum_d(d_, [xr, mean](int64_t k) { return (xr[k] - mean) * (xr[k] - mean); });
      const double var = d_ > 0 ? ss / double(d_) : 0.0;
      mean_[r] = static_cast<float>(mean);
      invstd_[r] = static_cast<float>(1.0 / std::sqrt(var + epsilon_));
      if (scale_of_row) scale_of_row[r] = var > 0 ? static_cast<float>(std::sqrt(var / (var + epsilon_))) : 0.0f;
      float* yr = y + r * d_;
      for (int64_t k = 0; k < d_; ++k) yr[k] = (xr[k] - mean_[r]) * invstd_[r] * scale[k] + (b ? b[k] : 0.0f);
      report.upto((r + 1) * d_);
    }
    report.finish();
    if (scale_of_row) ctx.feature_stats->add(0, scale_of_row, rows_);
    if (ctx.out.size() > 1 && ctx.out[1]) std::copy(mean_.begin(), mean_.end(), ctx.out[1]->f());
    if (ctx.out.size() > 2 && ctx.out[2]) std::copy(invstd_.begin(), invstd_.end(), ctx.out[2]->f());
  }

  // With xhat = (x - mean) * invstd and g = dy * scale:
  // dx = invstd * (g - mean(g) - xhat * mean(g * xhat)), dScale += dy * xhat, dB += dy.
  void backward(BwdCtx& ctx) override {
    if (!ctx.dout[0]) return;
    const float* x = ctx.in[0]->f();
    const float* scale = ctx.in[1]->f();
    const float* dy = ctx.dout[0]->f();
    float* dx = ctx.din[0] ? ctx.din[0]->f() : nullptr;
    float* dscale = ctx.din.size() > 1 && ctx.din[1] ? ctx.din[1]->f() : nullptr;
    float* db = ctx.din.size() > 2 && ctx.din[2] ? ctx.din[2]->f() : nullptr;
    ChunkReporter report(ctx.dout_stats, dy, rows_ * d_);  // dY, as its rows are read
    // First writers (BwdCtx::assigns): dX's rows and the first row's dScale and dB terms
    // go in as 0 + the term, the bits of adding onto zeros, without reading them.
    const bool assign_x = ctx.assigns(0), assign_scale = ctx.assigns(1), assign_b = ctx.assigns(2);
    for (int64_t r = 0; r < rows_; ++r) {
      const float* xr = x + r * d_;
      const float* g = dy + r * d_;
      const float m = mean_[r], is = invstd_[r];
      const double sg = lane_sum_d(d_, [g, scale](int64_t k) { return double(g[k] * scale[k]); });
      const double sgx = lane_sum_d(d_, [=](int64_t k) { return double(g[k] * scale[k]) * ((xr[k] - m) * is); });
      if (dscale && r == 0 && assign_scale)
        for (int64_t k = 0; k < d_; ++k) dscale[k] = 0.0f + g[k] * ((xr[k] - m) * is);
      else if (dscale)
        for (int64_t k = 0; k < d_; ++k) dscale[k] += g[k] * ((xr[k] - m) * is);
      if (db) add_elems(g, db, d_, r == 0 && assign_b);
      if (dx) {
        const float mg = static_cast<float>(sg / double(d_)), mgx = static_cast<float>(sgx / double(d_));
        float* dxr = dx + r * d_;
        if (assign_x)
          for (int64_t k = 0; k < d_; ++k) dxr[k] = 0.0f + is * (g[k] * scale[k] - mg - (xr[k] - m) * is * mgx);
        else
          for (int64_t k = 0; k < d_; ++k) dxr[k] += is * (g[k] * scale[k] - mg - (xr[k] - m) * is * mgx);
      }
      report.upto((r + 1) * d_);
    }
    report.finish();
  }

  // X, Scale and B: every row of dX; dScale and dB from the first row on (rows_ >= 1).
  bool assigns_gradient(size_t i) const override { return i < 3 && rows_ > 0; }

  OpTraits traits() const override {
    OpTraits t;
    t.role = OpTraits::Role::kParameterized;
    return t;
  }
  // Each row's sqrt(var / (var + epsilon)): ~1 when the row is normalised, 0 when it is
  // constant (a single value per row) or epsilon swamps its variance.
  OpFeatureInfo feature() const override {
    OpFeatureInfo f;
    f.kind = an::OpFeature::kNormalizedScale;
    f.rows = rows_;
    f.row_length = d_;
    return f;
  }
  ParamRole param_role(size_t i, const Shape&) const override {
    if (i == 1) return param_role_of(ParamRole::Kind::kScale);
    if (i == 2) return param_role_of(ParamRole::Kind::kBias);
    return {};
  }

 private:
  // Scale/B: the normalized shape, or it with fewer (or 1-sized) leading axes.
  static bool fits(const Shape& s, const Shape& norm) {
    if (shape_numel(s) != shape_numel(norm)) return false;
    size_t i = s.size(), j = norm.size();
    while (i > 0 && j > 0) {
      if (s[i - 1] != norm[j - 1]) return false;
      --i, --j;
    }
    for (; i > 0; --i)
      if (s[i - 1] != 1) return false;
    for (; j > 0; --j)
      if (norm[j - 1] != 1) return false;
    return true;
  }

  int64_t axis_attr_ = -1;
  float epsilon_ = 1e-5f;
  bool has_b_ = false;
  int64_t rows_ = 0, d_ = 0;
  std::vector<float> mean_, invstd_;  // per row, from the last forward (read by backward)
  std::vector<float> row_scale_;      // per row: Op::feature, when a probe asks
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<LayerNormalization>(node); }

std::vector<OpSample> samples() {
  std::vector<float> x(24);
  for (size_t k = 0; k < x.size(); ++k) x[k] = 0.37f * static_cast<float>((k * 5) % 13) - 2.1f;
  OpSample a;
  a.label = "layernorm 2x3x4 axis -1 with bias, Mean and InvStdDev outputs";
  a.node = sample_node("LayerNormalization", 3, 3, {}, 17);
  a.inputs = {Tensor::floats({2, 3, 4}, x), Tensor::floats({4}, {1.2f, -0.7f, 0.9f, 1.5f}),
              Tensor::floats({4}, {0.1f, -0.3f, 0.5f, 0.2f})};
  a.check_grad = {true, true, true};
  OpSample b;
  b.label = "layernorm 2x3x4 axis 1, no bias, epsilon 1e-3";
  b.node = sample_node("LayerNormalization", 2, 1, {{"axis", attr_i(1)}, {"epsilon", attr_f(1e-3f)}}, 17);
  std::vector<float> sc(12);
  for (size_t k = 0; k < sc.size(); ++k) sc[k] = 0.8f + 0.1f * float(k % 5) - 0.05f * float(k);
  b.inputs = {Tensor::floats({2, 3, 4}, x), Tensor::floats({3, 4}, sc)};
  b.check_grad = {true, true};
  return {a, b};
}

}  // namespace

OpInfo op_info_layer_normalization() { return {"LayerNormalization", {17}, make, samples}; }

}  // namespace dl::rt
