// GRU (since 7, 14): gates in ONNX order z, r, h with activations f (z, r) and g (h),
// defaults Sigmoid, Tanh:
//   z = f(Xz Wz^T + H Rz^T + Wbz + Rbz)       r likewise
//   h~ = g(Xh Wh^T + (r . H) Rh^T + Rbh + Wbh)          linear_before_reset = 0
//   h~ = g(Xh Wh^T + r . (H Rh^T + Rbh) + Wbh)          linear_before_reset = 1 (PyTorch)
//   H' = (1 - z) . h~ + z . H
// The time loop, directions, layouts and sequence_lens are RnnOp's
// (runtime/ops/rnn_common.h). Per step one GEMM with all of R (linear_before_reset) or
// one with Rz, Rr and one with Rh after the reset gate.
#include "runtime/ops/gemm_kernel.h"
#include "runtime/ops/rnn_common.h"
#include "runtime/ops/shape_util.h"

namespace dl::rt {
namespace {

using rnn::RnnOp;

class Gru : public RnnOp {
 public:
  Gru(const ir::Node& node, Attrs& a) : RnnOp(node, a, 3, 6, 2, {"Sigmoid", "Tanh"}, {{"z", 0}, {"r", 0}, {"h", 1}}) {
    linear_before_reset_ = a.i("linear_before_reset", 0) != 0;
  }

 protected:
  void plan_cell(InferCtx&, int64_t& floats) override {
    const int64_t n = dirs_ * seq_ * batch_ * hidden_;
    floats += n;
    rh_.assign(static_cast<size_t>(n), 0.0f);
  }

  // Rbh multiplies with r under linear_before_reset, so it stays out of xw_.
  int64_t folded_bias_gates() const override { return linear_before_reset_ ? 2 : 3; }
  int64_t state_act() const override { return 1; }  // H = (1 - z) . g(...) + z . H_prev

  void begin_forward(const FwdCtx&, const Dir& dir) override { rbh_ = dir.b ? dir.b + 5 * hidden_ : nullptr; }

  void step_forward(const Dir& dir, int64_t s) override {
    const int64_t h = hidden_, n = gh();
    const float* h_prev = dir.hs + s * batch_ * h;
    float* h_next = dir.hs + (s + 1) * batch_ * h;
    float* g = step_gates(dir, s);
    float* rh = step_rh(dir, s);
    const rnn::Gate& fa = dir.acts[0];
    const rnn::Gate& ga = dir.acts[1];
    gemm(batch_, linear_before_reset_ ? n : 2 * h, h, 1.0f, {h_prev, h, false}, {dir.r, h, true}, g, n, false);
    for (int64_t b = 0; b < batch_; ++b) {
      const int64_t t = time_of(dir, s, b);
      if (t < 0) {  // zero: dR's GEMM multiplies these rows by zero gradients
        std::fill(rh + b * h, rh + (b + 1) * h, 0.0f);
        continue;
      }
      float* gb = g + b * n;
      const float* xw = dir.xw + x_row(t, b) * n;
      for (int64_t j = 0; j < 2 * h; ++j) gb[j] += xw[j];
      rnn::apply_row(fa, gb, 2 * h);  // z and r: a row of packet math (runtime/ops/rnn_act.cpp)
      for (int64_t j = 0; j < h; ++j) {
        // linear_before_reset: H Rh^T + Rbh, kept for backward; else r . H, the next GEMM's input
        rh[b * h + j] = linear_before_reset_ ? gb[2 * h + j] + (rbh_ ? rbh_[j] : 0.0f) : gb[h + j] * h_prev[b * h + j];
      }
    }
    if (!linear_before_reset_)
      gemm(batch_, h, h, 1.0f, {rh, h, false}, {dir.r + 2 * h * h, h, true}, g + 2 * h, n, false);
    for (int64_t b = 0; b < batch_; ++b) {
      const int64_t t = time_of(dir, s, b);
      if (t < 0) {
        std::copy(h_prev + b * h, h_prev + (b + 1) * h, h_next + b * h);
        continue;
      }
      float* gb = g + b * n;
      const float* xw = dir.xw + x_row(t, b) * n;
      for (int64_t j = 0; j < h; ++j)
        gb[2 * h + j] = (linear_before_reset_ ? gb[h + j] * rh[b * h + j] : gb[2 * h + j]) + xw[2 * h + j];
      rnn::apply_row(ga, gb + 2 * h, h);
      for (int64_t j = 0; j < h; ++j) {
        const float z = gb[j], hh = gb[2 * h + j];
        h_next[b * h + j] = (1.0f - z) * hh + z * h_prev[b * h + j];
      }
    }
  }

  void step_backward(const Dir& dir, int64_t s, const float* dh, float* dh_prev) override {
    const int64_t h = hidden_, n = gh();
    const float* h_prev = dir.hs + s * batch_ * h;
    const float* g = step_gates(dir, s);
    const float* rh = step_rh(dir, s);
    float* dg = step_dgates(dir, s);
    float* drh = scratch_.data();  // d(r . H) (default) or unused
    const rnn::Gate& fa = dir.acts[0];
    const rnn::Gate& ga = dir.acts[1];
    for (int64_t b = 0; b < batch_; ++b) {
      const int64_t t = time_of(dir, s, b);
      float* dgb = dg + b * n;
      if (t < 0) {  // the state passed through this step
        std::fill(dgb, dgb + n, 0.0f);
        std::copy(dh + b * h, dh + (b + 1) * h, dh_prev + b * h);
        continue;
      }
      const float* gb = g + b * n;
      float* dxw = dir.xw + x_row(t, b) * n;
      for (int64_t j = 0; j < h; ++j) {
        const float z = gb[j], r = gb[h + j], hh = gb[2 * h + j], hp = h_prev[b * h + j];
        const float dhj = dh[b * h + j];
        const float dpz = dhj * (hp - hh) * fa.grad(z);
        const float dph = dhj * (1.0f - z) * ga.grad(hh);
        dh_prev[b * h + j] = dhj * z;
        dgb[j] = dxw[j] = dpz;
        dxw[2 * h + j] = dph;
        if (linear_before_reset_) {
          const float dpr = dph * rh[b * h + j] * fa.grad(r);
          dgb[h + j] = dxw[h + j] = dpr;
          dgb[2 * h + j] = dph * r;  // d(H Rh^T + Rbh)
        } else {
          dgb[2 * h + j] = dph;
        }
      }
    }
    if (linear_before_reset_) {
      gemm(batch_, h, n, 1.0f, {dg, n, false}, {dir.r, h, false}, dh_prev, h, true);
      return;
    }
    gemm(batch_, h, h, 1.0f, {dg + 2 * h, n, false}, {dir.r + 2 * h * h, h, false}, drh, h, false);
    for (int64_t b = 0; b < batch_; ++b) {
      const int64_t t = time_of(dir, s, b);
      if (t < 0) continue;
      const float* gb = g + b * n;
      float* dgb = dg + b * n;
      float* dxw = dir.xw + x_row(t, b) * n;
      for (int64_t j = 0; j < h; ++j) {
        const float r = gb[h + j], d = drh[b * h + j];
        dgb[h + j] = dxw[h + j] = d * h_prev[b * h + j] * fa.grad(r);
        dh_prev[b * h + j] += d * r;
      }
    }
    gemm(batch_, h, 2 * h, 1.0f, {dg, n, false}, {dir.r, h, false}, dh_prev, h, true);
  }

  // Without linear_before_reset Rh multiplies r . H, not H.
  void grad_recurrent(const Dir& dir, float* dr) override {
    if (linear_before_reset_) return RnnOp::grad_recurrent(dir, dr);
    const int64_t h = hidden_, n = gh(), rows = seq_ * batch_;
    gemm(2 * h, h, rows, 1.0f, {dir.dgates, n, true}, {dir.hs, h, false}, dr, h, true);
    gemm(h, h, rows, 1.0f, {dir.dgates + 2 * h, n, true}, {step_rh(dir, 0), h, false}, dr + 2 * h * h, h, true);
  }

 private:
  float* step_rh(const Dir& dir, int64_t s) { return rh_.data() + (dir.d * seq_ + s) * batch_ * hidden_; }

  bool linear_before_reset_ = false;
  std::vector<float> rh_;  // [D][T][batch][H]: r . H (default) or H Rh^T + Rbh (linear_before_reset)
  const float* rbh_ = nullptr;
};

std::unique_ptr<Op> make(const ir::Node& node) {
  Attrs a(node);
  auto op = std::make_unique<Gru>(node, a);
  a.finish();
  return op;
}

using rnn::ramp;

// T = 3, batch 2, input 3, hidden 2: both reset placements, both directions, both
// layouts, with and without initial state, sequence lengths shorter than T.
std::vector<OpSample> samples() {
  const int64_t t = 3, b = 2, in = 3, h = 2;
  auto gru = [&](const std::string& label, std::map<std::string, ir::Attribute> attrs, int64_t d, size_t inputs,
                 int64_t layout) {
    OpSample s;
    s.label = label;
    attrs["hidden_size"] = attr_i(h);
    if (layout) attrs["layout"] = attr_i(layout);
    s.node = sample_node("GRU", inputs, 2, attrs, 14);
    s.inputs = {ramp(layout ? Shape{b, t, in} : Shape{t, b, in}, 0.25f, -1.0f), ramp({d, 3 * h, in}, 0.1f, -0.4f),
                ramp({d, 3 * h, h}, 0.12f, -0.5f), ramp({d, 6 * h}, 0.05f, -0.2f), Tensor::ints({b}, {t - 1, t}),
                ramp(layout ? Shape{b, d, h} : Shape{d, b, h}, 0.2f, -0.7f)};
    s.inputs.resize(inputs);
    s.check_grad.assign(inputs, true);
    if (inputs > 4) s.check_grad[4] = false;
    return s;
  };
  const auto lbr = attr_i(1);
  return {
      gru("gru forward, sequence_lens, initial h", {}, 1, 6, 0),
      gru("gru linear_before_reset, forward, sequence_lens, initial h", {{"linear_before_reset", lbr}}, 1, 6, 0),
      gru("gru bidirectional, no initial state", {{"direction", attr_s("bidirectional")}}, 2, 4, 0),
      gru("gru linear_before_reset, bidirectional, layout 1, initial h",
          {{"linear_before_reset", lbr}, {"direction", attr_s("bidirectional")}}, 2, 6, 1),
      gru("gru reverse, layout 1, no bias", {{"direction", attr_s("reverse")}}, 1, 3, 1),
  };
}

}  // namespace

OpInfo op_info_gru() { return {"GRU", {7, 14}, make, samples}; }

}  // namespace dl::rt
