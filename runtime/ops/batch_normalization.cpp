// BatchNormalization (since 7, 9, 14, 15): Y = (X - mean) / sqrt(var + epsilon) * scale + B per
// channel (axis 1) of X (N, C, D1, ...). Version 7 only with spatial = 1 (version 9's semantics).
//
// Batch statistics (mean and population variance over every axis but 1) are used when
// the node says so (training_mode = 1; in versions 7 and 9, when their training outputs
// are requested) or when the graph runs in training mode (ctx.training: the trainer trains
// like Keras, where BatchNormalization layers normalise with the batch). Otherwise the
// given input_mean / input_var are used.
//
// With batch statistics, running = input * momentum + current * (1 - momentum)
// (onnx/backend/test/case/node/batchnorm.py, _batchnorm_training_mode) goes to the
// optional outputs (versions 7 and 9: mean, var, then saved_mean / saved_var = the batch
// statistics). Without batch statistics the optional outputs repeat the inputs.
//
// Model state: when ctx.training, forward ALSO writes the running statistics into
// input_mean / input_var themselves (ctx.in[3], ctx.in[4]). Those are the model's
// initializers, owned by the graph's ParamStore and never trained by gradient
// (differentiable_input is false for them), so this is how the moving averages a
// trained model exports evolve during training. Nothing else reads them in the step.
// They follow tf.keras: for a 4-D or 5-D X (Keras' fused kernel, FusedBatchNormV3) the
// moving variance takes the Bessel-corrected batch variance, var * n / (n - 1) with n the
// values per channel (as torch.nn.BatchNorm2d does too); for 2-D/3-D X (Keras' non-fused
// path, tf.nn.moments) the population variance. The ONNX outputs keep the spec's rule.
#include <cmath>

#include "runtime/attrs.h"
#include "runtime/ops/batch_norm_short.h"
#include "runtime/ops/batch_norm_sums.h"
#include "runtime/ops/eigen_map.h"
#include "runtime/ops/shape_util.h"
#include "runtime/parallel.h"

namespace dl::rt {

std::vector<OpSample> batch_normalization_samples();  // batch_normalization_samples.cpp

namespace {

class BatchNormalization : public Op {
 public:
  explicit BatchNormalization(const ir::Node& node) : Op(node), version_(node.since_version) {
    Attrs a(node);
    epsilon_ = a.finite("epsilon", 1e-5f);
    if (!(epsilon_ > 0.0f)) a.fail("epsilon", "is " + attr_number(epsilon_) + "; must be positive");
    momentum_ = a.in_range("momentum", 0.9f, 0.0f, 1.0f);
    if (version_ == 0 || version_ >= 14) training_mode_ = a.i("training_mode", 0) != 0;
    if (version_ == 7 && a.i("spatial", 1) != 1)
      a.fail("spatial", "0 (per-activation statistics) is not supported; flatten to (N, C*D1*...) instead");
    a.finish();
  }

  void infer(InferCtx& ctx) override {
    check_inputs(ctx, 5, 5, 5, where());
    for (const Tensor* t : ctx.in)
      if (t->dtype() != DType::kFloat32) throw ShapeError(where() + ": inputs must be float32");
    const Tensor& x = *ctx.in[0];
    if (x.rank() < 2) throw ShapeError(where() + ": X must be (N, C, ...), got " + shape_str(x.shape()));
    c_ = x.dim(1);
    inner_ = 1;
    for (int64_t d = 2; d < x.rank(); ++d) inner_ *= x.dim(d);
    outer_ = x.dim(0);
    const double n = static_cast<double>(outer_ * inner_);
    state_var_scale_ = (x.rank() == 4 || x.rank() == 5) && n > 1 ? static_cast<float>(n / (n - 1.0)) : 1.0f;
    static const char* kNames[] = {"X", "scale", "B", "input_mean", "input_var"};
    for (size_t i = 1; i < 5; ++i)
      if (ctx.in[i]->shape() != Shape{c_})
        throw ShapeError(where() + ": " + kNames[i] + " " + shape_str(ctx.in[i]->shape()) + " must have shape [" +
                         std::to_string(c_) + "] for X " + shape_str(x.shape()));
    ctx.out[0]->plan(DType::kFloat32, x.shape());
    const size_t max_out = version_ > 0 && version_ < 14 ? 5 : 3;
    if (ctx.out.size() > max_out)
      throw ShapeError(where() + ": has " + std::to_string(ctx.out.size()) + " outputs, at most " +
                       std::to_string(max_out) + " are defined");
    legacy_training_ = false;
    for (size_t k = 1; k < ctx.out.size(); ++k)
      if (ctx.out[k]) {
        ctx.out[k]->plan(DType::kFloat32, {c_});
        legacy_training_ = version_ > 0 && version_ < 14;
      }
    for (auto* v : {&mean_, &invstd_, &var_, &coef_[0], &coef_[1], &coef_[2]}) v->assign(static_cast<size_t>(c_), 0.0f);
    for (auto& v : wide_) v.assign(static_cast<size_t>(c_), 0.0);
    for (auto* v : {&out_sums_, &in_sums_}) v->assign(static_cast<size_t>(c_), stats::Sums{});
  }

  // Channels are independent: each is computed whole by one thread, in the same order
  // whatever the thread count, so the bits do not depend on it.
  //
  // Light probe sinks (ValueSink::light) get the light sums of Y (out_stats) and X
  // (FwdCtx::in_stats, the previous step's output): with batch statistics, derived from
  // each channel's sums and extremes of X (runtime/ops/batch_norm_sums.h) where rows are
  // a vector long or more (derives_sums()); without, from the registers of the loop that
  // writes Y, where channels are long (fuses_sums()). Each channel's are merged in channel
  // order afterwards (the same for any thread count). The values computed are the same
  // with or without (a unit test).
  void forward(FwdCtx& ctx) override {
    batch_stats_ = training_mode_ || legacy_training_ || ctx.training;
    Pass pass{this, ctx.in[0]->f(), ctx.in[1]->f(), ctx.in[2]->f(), ctx.in[3]->f(), ctx.in[4]->f(),
              ctx.out[0]->f()};
    const bool reports = (batch_stats_ && derives_sums()) || fuses_sums();
    const bool out_light = reports && ctx.out_stats && ctx.out_stats->light();
    const bool in_light = reports && ctx.in_stats && ctx.in_stats->light();
    pass.sums = out_light ? out_sums_.data() : nullptr;
    pass.in_sums = in_light ? in_sums_.data() : nullptr;
    // (Short rows report no light sums: neither derives_sums() nor fuses_sums().)
    over_channels(pass, &BatchNormalization::forward_short, &BatchNormalization::forward_channel);
    if (out_light) bn_sums::report(out_sums_, ctx.out_stats, outer_ * c_ * inner_);
    if (in_light) bn_sums::report(in_sums_, ctx.in_stats, outer_ * c_ * inner_);
    write_statistics(ctx);
  }
  // (With batch statistics its output's light sums cost next to nothing: a later step
  // should not reduce it instead.)
  bool reports_output() const override { return derives_sums(); }
  bool reports_input() const override { return true; }

  // dY's light sums come from the pass that sums it where channels are long
  // (fuses_sums(); as forward: per channel, merged in channel order). Full sinks are left
  // to the probe's own pass: reporting BN's rows by parts of channels (copied into a chunk
  // buffer) cost shufflenet_v2 3 points of probe overhead more (bench/README.md run 29).
  // dX's light sums (BwdCtx::din_stats) likewise, from each channel's rows while in L1.
  void backward(BwdCtx& ctx) override {
    if (!ctx.dout[0]) return;
    Pass pass{this, ctx.in[0]->f(), ctx.in[1]->f(), nullptr, nullptr, nullptr, nullptr};
    pass.dy = ctx.dout[0]->f();
    pass.dx = ctx.din[0] ? ctx.din[0]->f() : nullptr;
    pass.dscale = ctx.din[1] ? ctx.din[1]->f() : nullptr;
    pass.dbias = ctx.din[2] ? ctx.din[2]->f() : nullptr;
    pass.assign = ctx.assign;
    const bool light = fuses_sums() && ctx.dout_stats && ctx.dout_stats->light();
    pass.sums = light ? out_sums_.data() : nullptr;
    const bool din = fuses_sums() && ctx.din_stats && ctx.din_stats->light() && pass.dx;
    pass.in_sums = din ? in_sums_.data() : nullptr;
    over_channels(pass, &BatchNormalization::backward_short, &BatchNormalization::backward_channel);
    if (light) bn_sums::report(out_sums_, ctx.dout_stats, outer_ * c_ * inner_);
    if (pass.in_sums) bn_sums::report(in_sums_, ctx.din_stats, outer_ * c_ * inner_);
  }
  bool reports_input_gradient() const override { return true; }
  bool sums_output_gradient() const override { return fuses_sums(); }
  bool assigns_gradient(size_t i) const override { return i < 3; }  // X, scale, B: every channel

  OpTraits traits() const override {
    OpTraits t;
    t.role = OpTraits::Role::kParameterized;
    return t;
  }
  bool differentiable_input(size_t i) const override { return i < 3; }
  ParamRole param_role(size_t i, const Shape&) const override {
    using K = ParamRole::Kind;
    static const K kinds[] = {K::kNone, K::kScale, K::kBias, K::kRunningMean, K::kRunningVar};
    return param_role_of(i < 5 ? kinds[i] : K::kNone);
  }

 private:
  static constexpr int64_t kParallelWork = int64_t{1} << 16;  // values from which channels go to helpers
  // Rows (one image's plane of a channel) shorter than sum_of's 16 lanes take
  // forward_short and backward_short (mobilenet_v2's last maps are 2x2 and 1x1).
  static constexpr int64_t kShortRow = 16;

  // The sum over images of a channel's rows (first at `x`, one every c_ * inner_) by row().
  template <class Row>
  double rows_sum(const float* x, Row row) const {
    double s = 0.0;
    for (int64_t n = 0; n < outer_; ++n) s += row(x + n * c_ * inner_, inner_);
    return s;
  }
  // Without batch statistics, light sinks are served from the channel loops only where
  // each channel holds many values in long rows: each channel's sums cost a set-up and a
  // finish (folding 16-lane vectors in double), and rows shorter than a vector go value by
  // value. Elsewhere the probe's own pass (light, vectorised) reduces the tensors.
  static constexpr int64_t kFusedChannelValues = 4096;
  // With batch statistics from rows of kShortRow values or more: for shorter ones a min
  // and max more per value cost more than the probes' vector passes (bench/README.md run 29).
  bool derives_sums() const { return inner_ >= kShortRow; }
  bool fuses_sums() const { return outer_ * inner_ >= kFusedChannelValues && inner_ >= 4 * simd::kLanes; }
  struct Pass {
    const BatchNormalization* op;
    const float *x, *scale, *bias, *in_mean, *in_var;
    float* y;
    const float* dy = nullptr;
    float *dx = nullptr, *dscale = nullptr, *dbias = nullptr;
    stats::Sums* sums = nullptr;     // per channel: Y's (forward) or dY's (backward) light sums, or null
    stats::Sums* in_sums = nullptr;  // per channel: X's (forward) or dX's (backward), or null
    uint32_t assign = 0;             // backward: BwdCtx::assign
  };

  // Rows shorter than kShortRow: all channels at once (whole), else by channel (each) in
  // 16 ranges on the compute threads (a block per channel: forward_channel 1.7x the CPU on 2, run 49).
  static constexpr int64_t kChannelBlocks = 16;
  void over_channels(Pass& pass, void (BatchNormalization::*whole)(const Pass&) const,
                     void (BatchNormalization::*each)(const Pass&, int64_t) const) const {
    if (inner_ < kShortRow) return (this->*whole)(pass);
    parallel_ranges(c_, std::min(c_, kChannelBlocks), loop_threads(outer_ * c_ * inner_, kParallelWork),
                    [&](int64_t lo, int64_t hi) {
                      for (int64_t c = lo; c < hi; ++c) (this->*each)(pass, c);
                    });
  }

  void forward_channel(const Pass& ps, int64_t c) const {
    const double count = static_cast<double>(outer_ * inner_);
    double mean = ps.in_mean[c], var = ps.in_var[c];
    const bool derive = batch_stats_ && (ps.sums || ps.in_sums);  // light sums from the moments
    bn_sums::Channel ch;
    if (batch_stats_) {  // two passes: the variance from deviations, not E[x^2] - mean^2
      double s;
      if (derive) {  // the same sums, and X's extremes from the same loads
        simd::Extremes ext;
        s = rows_sum(ps.x + c * inner_,
                     [&ext](const float* r, int64_t len) { return double(sum_of_light(r, len, ext)); });
        ch.lo = ext.lo(), ch.hi = ext.hi();
      } else {
        s = rows_sum(ps.x + c * inner_, [](const float* r, int64_t len) { return double(sum_of(r, len)); });
      }
      mean = count > 0 ? s / count : 0.0;
      const float m = float(mean);
      const double ss =
          rows_sum(ps.x + c * inner_, [m](const float* r, int64_t len) { return double(sum_sq_dev(r, len, m)); });
      var = count > 0 ? ss / count : 0.0;
      ch.n = count, ch.s = s, ch.ss = ss, ch.m = m;
    }
    float a, b;
    coefficients(ps, c, mean, var, a, b);
    if (derive) {
      if (ps.in_sums) ps.in_sums[c] = bn_sums::of_x(ch);
      if (ps.sums) ps.sums[c] = bn_sums::of_y(ch, a, b);
    }
    const bool out_here = ps.sums && !derive;
    const bool in_here = ps.in_sums && !derive;  // no batch statistics: X's sums here
    if (out_here || in_here)
      return bn_sums::normalize_summing(ps.x + c * inner_, ps.y + c * inner_, outer_, c_ * inner_, inner_, a, b,
                                        out_here ? &ps.sums[c] : nullptr, in_here ? &ps.in_sums[c] : nullptr);
    for (int64_t n = 0; n < outer_; ++n) {
      const float* xp = ps.x + (n * c_ + c) * inner_;
      float* yp = ps.y + (n * c_ + c) * inner_;
      for (int64_t k = 0; k < inner_; ++k) yp[k] = xp[k] * a + b;
    }
  }
  void backward_channel(const Pass& ps, int64_t c) const {
    float s = 0.0f, sx = 0.0f;  // sum dy, sum dy * xhat
    const float m = mean_[c];
    // Rows of kShortRow or more (else backward_short). dY's light sums, when ps.sums, in a
    // local accumulator (its vectors stay in registers through the row loops).
    const auto rows = [&](auto&& row_sum) {
      for (int64_t n = 0; n < outer_; ++n) {
        const int64_t off = (n * c_ + c) * inner_;
        s += row_sum(ps.dy + off);
        sx += dot_dev(ps.dy + off, ps.x + off, inner_, m);
      }
    };
    if (ps.sums) {
      simd::LightSums acc;
      rows([&](const float* p) { return sum_of_light(p, inner_, acc); });
      ps.sums[c] = acc.finish();
    } else {
      rows([&](const float* p) { return sum_of(p, inner_); });
    }
    float a, ms, msx;
    grad_coefficients(ps, c, s, sx, a, ms, msx);
    if (!ps.dx) return;
    for (int64_t n = 0; n < outer_; ++n) {
      const float* xp = ps.x + (n * c_ + c) * inner_;
      const float* g = ps.dy + (n * c_ + c) * inner_;
      float* d = ps.dx + (n * c_ + c) * inner_;
      if (ps.assign & 1u)
        for (int64_t k = 0; k < inner_; ++k) d[k] = 0.0f + a * (g[k] - ms - (xp[k] - mean_[c]) * msx);
      else
        for (int64_t k = 0; k < inner_; ++k) d[k] += a * (g[k] - ms - (xp[k] - mean_[c]) * msx);
    }
    if (!ps.in_sums) return;  // dX's sums: the channel's rows again, from L1 (right after its stores a row stalls)
    simd::LightSums acc;
    for (int64_t n = 0; n < outer_; ++n) acc.put_row(ps.dx + (n * c_ + c) * inner_, inner_);
    ps.in_sums[c] = acc.finish();
  }

  // Rows shorter than kShortRow: all channels at once (runtime/ops/batch_norm_short.h; the
  // bits of the former per-channel loops, which a unit test keeps, but for the last bit of
  // dX added onto another gradient), on one thread: small tensors (16 x 1280 at most here).
  void forward_short(const Pass& ps) const {
    const bn_short::Dims d{outer_, c_, inner_};
    double *mean = wide_[0].data(), *var = wide_[1].data();
    if (batch_stats_) bn_short::with_inner(inner_, [&](auto k) { bn_short::moments<k()>(ps.x, d, mean, var); });
    else for (int64_t c = 0; c < c_; ++c) mean[c] = ps.in_mean[c], var[c] = ps.in_var[c];
    float *a = coef_[0].data(), *b = coef_[1].data();
    for (int64_t c = 0; c < c_; ++c) coefficients(ps, c, mean[c], var[c], a[c], b[c]);
    bn_short::with_inner(inner_, [&](auto k) { bn_short::normalize<k()>(ps.x, d, a, b, ps.y); });
  }
  void backward_short(const Pass& ps) const {
    const bn_short::Dims d{outer_, c_, inner_};
    double *s = wide_[0].data(), *sx = wide_[1].data();
    bn_short::with_inner(inner_, [&](auto k) { bn_short::grad_sums<k()>(ps.dy, ps.x, d, mean_.data(), s, sx); });
    float *a = coef_[0].data(), *ms = coef_[1].data(), *msx = coef_[2].data();
    for (int64_t c = 0; c < c_; ++c) grad_coefficients(ps, c, float(s[c]), float(sx[c]), a[c], ms[c], msx[c]);
    if (ps.dx)
      bn_short::with_inner(inner_, [&](auto k) {
        bn_short::input_grad<k()>(ps.dy, ps.x, d, a, ms, msx, mean_.data(), ps.dx, ps.assign & 1u);
      });
  }

  // Channel c's statistics (mean_, var_, invstd_) and Y = X * a + b, from its mean and
  // variance (the batch's or the running ones).
  void coefficients(const Pass& ps, int64_t c, double mean, double var, float& a, float& b) const {
    mean_[c] = static_cast<float>(mean);
    var_[c] = static_cast<float>(var);
    invstd_[c] = static_cast<float>(1.0 / std::sqrt(var + epsilon_));
    a = ps.scale[c] * invstd_[c];
    b = ps.bias[c] - mean_[c] * a;
  }
  // From channel c's sums s = sum dY and sx = sum dY * (X - mean): dScale and dB, and
  // dX = a * (dY - ms - (X - mean) * msx). With batch statistics mean and variance depend
  // on X: dx = a * (dy - mean(dy) - xhat * mean(dy * xhat)).
  void grad_coefficients(const Pass& ps, int64_t c, float s, float sx, float& a, float& ms, float& msx) const {
    const float count = static_cast<float>(outer_ * inner_);
    sx *= invstd_[c];
    // (First writers, BwdCtx::assign: 0 + the term, the bits of adding onto zeros.)
    if (ps.dscale) ps.dscale[c] = ((ps.assign & 2u) ? 0.0f : ps.dscale[c]) + sx;
    if (ps.dbias) ps.dbias[c] = ((ps.assign & 4u) ? 0.0f : ps.dbias[c]) + s;
    a = ps.scale[c] * invstd_[c];
    ms = batch_stats_ && count > 0 ? s / count : 0.0f;
    msx = batch_stats_ && count > 0 ? sx / count * invstd_[c] : 0.0f;
  }

  void write_statistics(FwdCtx& ctx) {
    const float* in_mean = ctx.in[3]->f();
    const float* in_var = ctx.in[4]->f();
    auto out = [&](size_t k) { return k < ctx.out.size() && ctx.out[k] ? ctx.out[k]->f() : nullptr; };
    float* rm = out(1);
    float* rv = out(2);
    for (int64_t c = 0; c < c_; ++c) {
      const float m = batch_stats_ ? in_mean[c] * momentum_ + mean_[c] * (1.0f - momentum_) : in_mean[c];
      const float v = batch_stats_ ? in_var[c] * momentum_ + var_[c] * (1.0f - momentum_) : in_var[c];
      if (rm) rm[c] = m;
      if (rv) rv[c] = v;
      if (float* sm = out(3)) sm[c] = mean_[c];
      if (float* sv = out(4)) sv[c] = var_[c];
      if (ctx.training) {  // the model's state: see the file comment
        const_cast<Tensor*>(ctx.in[3])->f()[c] = m;
        const_cast<Tensor*>(ctx.in[4])->f()[c] =
            batch_stats_ ? in_var[c] * momentum_ + var_[c] * state_var_scale_ * (1.0f - momentum_) : v;
      }
    }
  }

  int version_ = 0;
  float epsilon_ = 1e-5f, momentum_ = 0.9f;
  float state_var_scale_ = 1.0f;  // Keras' Bessel correction of the moving variance (file comment)
  bool training_mode_ = false;
  bool legacy_training_ = false;  // versions 7/9 with training outputs requested
  bool batch_stats_ = false;      // forward used batch statistics (read by backward)
  int64_t c_ = 0, outer_ = 0, inner_ = 0;
  // The statistics the last forward normalised with; each channel's entry is written by
  // the thread that computes the channel.
  mutable std::vector<float> mean_, invstd_, var_;
  // forward_short's and backward_short's per-channel sums and coefficients.
  mutable std::vector<double> wide_[2];
  mutable std::vector<float> coef_[3];
  // Per channel: the light sums of Y or dY, and of X or dX, for the probe's sinks.
  std::vector<stats::Sums> out_sums_, in_sums_;
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<BatchNormalization>(node); }

}  // namespace

OpInfo op_info_batch_normalization() { return {"BatchNormalization", {7, 9, 14, 15}, make, batch_normalization_samples}; }

}  // namespace dl::rt
