// LSTM (since 7, 14): gates in ONNX order i, o, f, c with activations f (i, o, f), g (c)
// and h (the cell output), defaults Sigmoid, Tanh, Tanh:
//   i = f(Xi Wi^T + H Ri^T + Wbi + Rbi + Pi . C_prev)    f likewise with Pf
//   c~ = g(Xc Wc^T + H Rc^T + Wbc + Rbc)                  C = f . C_prev + i . c~
//   o = f(Xo Wo^T + H Ro^T + Wbo + Rbo + Po . C)          H = o . h(C)
// input_forget = 1 couples the gates: f = 1 - i (onnxruntime's reading of the spec). The
// time loop, directions, layouts and sequence_lens are RnnOp's (runtime/ops/rnn_common.h);
// this cell adds initial_c, the peepholes P [D, 3H] (order i, o, f) and Y_c.
#include "runtime/ops/gemm_kernel.h"
#include "runtime/ops/rnn_common.h"
#include "runtime/ops/shape_util.h"

namespace dl::rt {
namespace {

using rnn::RnnOp;

class Lstm : public RnnOp {
 public:
  Lstm(const ir::Node& node, Attrs& a) : RnnOp(node, a, 4, 8, 3, {"Sigmoid", "Tanh", "Tanh"},
                                                 {{"i", 0}, {"o", 0}, {"f", 0}, {"c", 1}, {"output", 2}}) {
    input_forget_ = a.i("input_forget", 0) != 0;
    // clip bounds the gate inputs, not the cell state h() reads (as onnxruntime does).
    for (size_t k = 2; k < acts_.size(); k += 3) acts_[k].clip = INFINITY;
  }

 protected:
  int64_t state_act() const override { return 2; }  // H = o . h(C)
  void check_cell_inputs(const InferCtx& ctx) override {
    const Shape state = layout_ == 0 ? Shape{dirs_, batch_, hidden_} : Shape{batch_, dirs_, hidden_};
    if (ctx.in.size() > 6 && ctx.in[6] && ctx.in[6]->shape() != state)
      throw ShapeError(where() + ": input 'initial_c' " + shape_str(ctx.in[6]->shape()) + " must have shape " +
                       shape_str(state));
    if (ctx.in.size() > 7 && ctx.in[7] && ctx.in[7]->shape() != Shape{dirs_, 3 * hidden_})
      throw ShapeError(where() + ": input 'P' " + shape_str(ctx.in[7]->shape()) + " must have shape " +
                       shape_str({dirs_, 3 * hidden_}));
  }

  void plan_cell(InferCtx& ctx, int64_t& floats) override {
    if (ctx.out.size() > 2 && ctx.out[2])
      ctx.out[2]->plan(DType::kFloat32, layout_ == 0 ? Shape{dirs_, batch_, hidden_} : Shape{batch_, dirs_, hidden_});
    const int64_t cells = dirs_ * (seq_ + 1) * batch_ * hidden_;
    floats += cells + 2 * batch_ * hidden_;
    cs_.assign(static_cast<size_t>(cells), 0.0f);
    dc_.assign(static_cast<size_t>(batch_ * hidden_), 0.0f);
    dc_prev_.assign(dc_.size(), 0.0f);
    tc_.assign(static_cast<size_t>(hidden_), 0.0f);
  }

  void begin_forward(const FwdCtx& ctx, const Dir& dir) override {
    p_ = ctx.in.size() > 7 && ctx.in[7] ? ctx.in[7]->f() + dir.d * 3 * hidden_ : nullptr;
    const Tensor* c0 = ctx.in.size() > 6 ? ctx.in[6] : nullptr;
    float* c = cells(dir);
    for (int64_t b = 0; b < batch_; ++b)
      for (int64_t j = 0; j < hidden_; ++j) c[b * hidden_ + j] = c0 ? c0->f()[state_at(dir.d, b) + j] : 0.0f;
  }

  void step_forward(const Dir& dir, int64_t s) override {
    const int64_t h = hidden_, n = gh();
    const float* h_prev = dir.hs + s * batch_ * h;
    float* h_next = dir.hs + (s + 1) * batch_ * h;
    const float* c_prev = cells(dir) + s * batch_ * h;
    float* c_next = cells(dir) + (s + 1) * batch_ * h;
    float* g = step_gates(dir, s);
    gemm(batch_, n, h, 1.0f, {h_prev, h, false}, {dir.r, h, true}, g, n, false);
    const rnn::Gate& fa = dir.acts[0];
    const rnn::Gate& ga = dir.acts[1];
    const rnn::Gate& ha = dir.acts[2];
    for (int64_t b = 0; b < batch_; ++b) {
      const int64_t t = time_of(dir, s, b);
      if (t < 0) {
        std::copy(h_prev + b * h, h_prev + (b + 1) * h, h_next + b * h);
        std::copy(c_prev + b * h, c_prev + (b + 1) * h, c_next + b * h);
        continue;
      }
      // Pre-activations first, then each gate's activation over its whole row (packet
      // math, runtime/ops/rnn_act.cpp).
      float* gb = g + b * n;
      const float* xw = dir.xw + x_row(t, b) * n;
      const float* cp = c_prev + b * h;
      for (int64_t j = 0; j < n; ++j) gb[j] += xw[j];
      if (p_)
        for (int64_t j = 0; j < h; ++j) gb[j] += p_[j] * cp[j], gb[2 * h + j] += p_[2 * h + j] * cp[j];
      const bool o_now = !p_ && !input_forget_;  // i, o, f contiguous and all known: one row
      rnn::apply_row(fa, gb, o_now ? 3 * h : h);
      if (!o_now && !input_forget_) rnn::apply_row(fa, gb + 2 * h, h);
      rnn::apply_row(ga, gb + 3 * h, h);
      float* cn = c_next + b * h;
      float* hn = h_next + b * h;
      for (int64_t j = 0; j < h; ++j) {
        const float i = gb[j];
        const float f = input_forget_ ? 1.0f - i : gb[2 * h + j];
        if (input_forget_) gb[2 * h + j] = f;
        hn[j] = cn[j] = f * cp[j] + i * gb[3 * h + j];
      }
      if (!o_now) {
        if (p_)
          for (int64_t j = 0; j < h; ++j) gb[h + j] += p_[h + j] * cn[j];
        rnn::apply_row(fa, gb + h, h);
      }
      rnn::apply_row(ha, hn, h);  // h(C), then H = o . h(C)
      for (int64_t j = 0; j < h; ++j) hn[j] *= gb[h + j];
    }
  }

  void end_forward(FwdCtx& ctx, const Dir& dir) override {
    Tensor* yc = ctx.out.size() > 2 ? ctx.out[2] : nullptr;
    if (!yc) return;
    const float* last = cells(dir) + seq_ * batch_ * hidden_;
    for (int64_t b = 0; b < batch_; ++b)
      std::copy(last + b * hidden_, last + (b + 1) * hidden_, yc->f() + state_at(dir.d, b));
  }

  void begin_backward(const BwdCtx& ctx, const Dir& dir) override {
    p_ = ctx.in.size() > 7 && ctx.in[7] ? ctx.in[7]->f() + dir.d * 3 * hidden_ : nullptr;
    dp_ = ctx.din.size() > 7 && ctx.din[7] ? ctx.din[7]->f() + dir.d * 3 * hidden_ : nullptr;
    const float* dyc = ctx.dout.size() > 2 && ctx.dout[2] ? ctx.dout[2]->f() : nullptr;
    for (int64_t b = 0; b < batch_; ++b)
      for (int64_t j = 0; j < hidden_; ++j) dc_[b * hidden_ + j] = dyc ? dyc[state_at(dir.d, b) + j] : 0.0f;
  }

  void step_backward(const Dir& dir, int64_t s, const float* dh, float* dh_prev) override {
    const int64_t h = hidden_, n = gh();
    const float* c_prev = cells(dir) + s * batch_ * h;
    const float* c_next = cells(dir) + (s + 1) * batch_ * h;
    const float* g = step_gates(dir, s);
    float* dg = step_dgates(dir, s);
    const rnn::Gate& fa = dir.acts[0];
    const rnn::Gate& ga = dir.acts[1];
    const rnn::Gate& ha = dir.acts[2];
    const bool plain = !p_ && !dp_ && !input_forget_ && fa.act == rnn::Act::kSigmoid && ga.act == rnn::Act::kTanh &&
                       ha.act == rnn::Act::kTanh && !std::isfinite(fa.clip) && !std::isfinite(ga.clip);
    for (int64_t b = 0; b < batch_; ++b) {
      const int64_t t = time_of(dir, s, b);
      float* dgb = dg + b * n;
      if (t < 0) {  // the state passed through this step
        std::fill(dgb, dgb + n, 0.0f);
        std::copy(dh + b * h, dh + (b + 1) * h, dh_prev + b * h);
        std::copy(dc_.data() + b * h, dc_.data() + (b + 1) * h, dc_prev_.data() + b * h);
        continue;
      }
      const float* gb = g + b * n;
      float* dxw = dir.xw + x_row(t, b) * n;
      float* tcs = tc_.data();
      std::copy(c_next + b * h, c_next + (b + 1) * h, tcs);
      rnn::apply_row(ha, tcs, h);  // h(C) as forward computed it
      if (plain) {
        plain_backward_row(h, gb, c_prev + b * h, tcs, dh + b * h, dc_.data() + b * h, dc_prev_.data() + b * h,
                           dgb, dxw);
        std::fill(dh_prev + b * h, dh_prev + (b + 1) * h, 0.0f);
        continue;
      }
      for (int64_t j = 0; j < h; ++j) {
        const float i = gb[j], o = gb[h + j], f = gb[2 * h + j], cc = gb[3 * h + j];
        const float cp = c_prev[b * h + j], c = c_next[b * h + j];
        const float dhj = dh[b * h + j];
        const float tc = tcs[j];
        const float dpo = dhj * tc * fa.grad(o);
        const float dc = dc_[b * h + j] + dhj * o * ha.grad(tc) + (p_ ? dpo * p_[h + j] : 0.0f);
        float di = dc * cc;
        const float df = dc * cp;
        if (input_forget_) di -= df;
        const float dpi = di * fa.grad(i);
        const float dpf = input_forget_ ? 0.0f : df * fa.grad(f);
        const float dpc = dc * i * ga.grad(cc);
        dc_prev_[b * h + j] = dc * f + (p_ ? dpi * p_[j] + dpf * p_[2 * h + j] : 0.0f);
        if (dp_) dp_[j] += dpi * cp, dp_[h + j] += dpo * c, dp_[2 * h + j] += dpf * cp;
        dgb[j] = dxw[j] = dpi;
        dgb[h + j] = dxw[h + j] = dpo;
        dgb[2 * h + j] = dxw[2 * h + j] = dpf;
        dgb[3 * h + j] = dxw[3 * h + j] = dpc;
        dh_prev[b * h + j] = 0.0f;
      }
    }
    gemm(batch_, h, n, 1.0f, {dg, n, false}, {dir.r, h, false}, dh_prev, h, true);
    dc_.swap(dc_prev_);
  }

  void end_backward(BwdCtx& ctx, const Dir& dir) override {
    float* dc0 = ctx.din.size() > 6 && ctx.din[6] ? ctx.din[6]->f() : nullptr;
    if (!dc0) return;
    for (int64_t b = 0; b < batch_; ++b)
      for (int64_t j = 0; j < hidden_; ++j) dc0[state_at(dir.d, b) + j] += dc_[b * hidden_ + j];
  }

 private:
  // One row of step_backward for the LSTM torch and Keras export (Sigmoid, Tanh, Tanh; no
  // peepholes, clip or coupled gates), in a loop the compiler vectorises (the general
  // loop's branches per value kept it scalar: 16% of the LSTM classifier's step).
  static void plain_backward_row(int64_t h, const float* __restrict gb, const float* __restrict cp,
                                 const float* __restrict tc, const float* __restrict dh, const float* __restrict dc_in,
                                 float* __restrict dc_prev, float* __restrict dgb, float* __restrict dxw) {
    for (int64_t j = 0; j < h; ++j) {
      const float i = gb[j], o = gb[h + j], f = gb[2 * h + j], cc = gb[3 * h + j];
      const float dpo = dh[j] * tc[j] * (o * (1.0f - o));
      const float dc = dc_in[j] + dh[j] * o * (1.0f - tc[j] * tc[j]);
      const float dpi = dc * cc * (i * (1.0f - i));
      const float dpf = dc * cp[j] * (f * (1.0f - f));
      const float dpc = dc * i * (1.0f - cc * cc);
      dc_prev[j] = dc * f;
      dgb[j] = dxw[j] = dpi;
      dgb[h + j] = dxw[h + j] = dpo;
      dgb[2 * h + j] = dxw[2 * h + j] = dpf;
      dgb[3 * h + j] = dxw[3 * h + j] = dpc;
    }
  }

  float* cells(const Dir& dir) { return cs_.data() + dir.d * (seq_ + 1) * batch_ * hidden_; }

  bool input_forget_ = false;
  std::vector<float> cs_;        // [D][T+1][batch][H]: cs_[d][0] initial, [s+1] after step s
  std::vector<float> dc_, dc_prev_;
  std::vector<float> tc_;        // [H]: one row's h(C) in backward
  const float* p_ = nullptr;     // this direction's peepholes, or nullptr
  float* dp_ = nullptr;          // their gradient
};

std::unique_ptr<Op> make(const ir::Node& node) {
  Attrs a(node);
  auto op = std::make_unique<Lstm>(node, a);
  a.finish();
  return op;
}

using rnn::ramp;

// T = 3, batch 2, input 3, hidden 2: every gate, both directions, both layouts, the
// optional inputs, sequence lengths shorter than T.
std::vector<OpSample> samples() {
  const int64_t t = 3, b = 2, in = 3, h = 2;
  auto lstm = [&](const std::string& label, std::map<std::string, ir::Attribute> attrs, int64_t d, size_t inputs,
                  int64_t layout) {
    OpSample s;
    s.label = label;
    attrs["hidden_size"] = attr_i(h);
    if (layout) attrs["layout"] = attr_i(layout);
    s.node = sample_node("LSTM", inputs, 3, attrs, 14);
    const Shape state = layout ? Shape{b, d, h} : Shape{d, b, h};
    s.inputs = {ramp(layout ? Shape{b, t, in} : Shape{t, b, in}, 0.25f, -1.0f), ramp({d, 4 * h, in}, 0.1f, -0.4f),
                ramp({d, 4 * h, h}, 0.12f, -0.5f), ramp({d, 8 * h}, 0.05f, -0.2f),
                Tensor::ints({b}, {t, t - 1}), ramp(state, 0.2f, -0.7f), ramp(state, 0.15f, -0.5f),
                ramp({d, 3 * h}, 0.1f, -0.3f)};
    s.inputs.resize(inputs);
    s.check_grad.assign(inputs, true);
    if (inputs > 4) s.check_grad[4] = false;
    return s;
  };
  return {
      lstm("lstm forward, B, sequence_lens, initial h and c, peepholes", {}, 1, 8, 0),
      lstm("lstm bidirectional, no initial states", {{"direction", attr_s("bidirectional")}}, 2, 4, 0),
      lstm("lstm reverse, layout 1, initial states", {{"direction", attr_s("reverse")}}, 1, 7, 1),
      lstm("lstm bidirectional, layout 1, peepholes", {{"direction", attr_s("bidirectional")}}, 2, 8, 1),
      lstm("lstm input_forget, Relu cell, clip 5",
           {{"input_forget", attr_i(1)}, {"clip", attr_f(5.0f)},
            {"activations", attr_strings({"Sigmoid", "Relu", "Tanh"})}},
           1, 4, 0),
  };
}

}  // namespace

OpInfo op_info_lstm() { return {"LSTM", {7, 14}, make, samples}; }

}  // namespace dl::rt
