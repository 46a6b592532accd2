// Shared machinery of the recurrent ops (RNN, GRU, LSTM; ONNX since 7 and 14): the
// attributes they have in common, the gate activations, and RnnOp, the time loop all
// three run. A cell (runtime/ops/lstm.cpp, gru.cpp, rnn.cpp) supplies one step forward
// and one step backward; RnnOp does the rest.
//
// Inputs X, W [D, G*H, I], R [D, G*H, H], B [D, 2*G*H], sequence_lens [batch],
// initial_h [D, batch, H] (cells may take more: LSTM's initial_c and P), with layout 0
// X [T, batch, I], Y [T, D, batch, H], Y_h [D, batch, H], or layout 1 (opset 14)
// X [batch, T, I], Y [batch, T, D, H], Y_h [batch, D, H]. D = 2 for bidirectional
// (direction 0 forward, 1 reverse), G the number of gates.
//
// Forward, per direction: one GEMM projects every time step's input (xw_ = X W^T + the
// biases that can be folded there), then per step the cell runs its GEMM with R and the
// fused gate activations. Steps are numbered s = 0..T-1 in processing order; batch row b
// with length L_b processes time t = s (forward) or t = L_b - 1 - s (reverse) while
// s < L_b, and is inactive afterwards: its state passes through unchanged, so the final
// state hs_[d][T] is Y_h for every row, and Y is zero at t >= L_b. Every step's gates and
// states are kept (planned once in infer) for backward through time.
//
// Backward, per direction, s = T-1..0: the cell turns dh (and its own carried state
// gradient) into the gradients of its gates' pre-activations: the W side (what the
// input projection saw) goes into xw_ at the row of X it came from, the R side into
// dgates_ in step order. Then dX, dW, dB come from one GEMM / column sum each over all
// steps, dR from one GEMM of dgates_ with the states that entered each step.
#pragma once

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "runtime/attrs.h"
#include "runtime/op.h"
#include "runtime/value_simd.h"

namespace dl::rt::rnn {

// The gate activations the recurrent ops run (those PyTorch and Keras export). Others
// in the ONNX list (Affine, LeakyRelu, HardSigmoid, ...) are refused by name.
enum class Act { kSigmoid, kTanh, kRelu };
const char* act_name(Act a);  // "Sigmoid", "Tanh", "Relu"

// A cell's gate as users know it (LSTM's i, o, f, c) and which of a direction's
// activations it runs; for describe().
struct GateName {
  const char* name;
  size_t act;
};

// Whether the activation is bounded with flat ends (its outputs can saturate).
inline bool saturates(Act a) { return a != Act::kRelu; }

// Sigmoid and Tanh on packet math (runtime/ops/rnn_act.cpp: a few ulp from the exact
// values, the same bits for a value wherever it sits); Relu exact.
float act_apply(Act a, float x);

// The derivative, from the activation's output y.
inline float act_grad(Act a, float y) {
  switch (a) {
    case Act::kSigmoid: return y * (1.0f - y);
    case Act::kTanh: return 1.0f - y * y;
    case Act::kRelu: return y > 0.0f ? 1.0f : 0.0f;
  }
  return 1.0f;
}

// An activation of one gate in one direction, with the cell clip applied to its input
// (the ONNX `clip` attribute; infinite when absent).
struct Gate {
  Act act = Act::kSigmoid;
  float clip = INFINITY;
  float lo = 0.0f, hi = 0.0f;  // act(-clip), act(clip): the outputs of a clipped input

  // std::max/min keep a NaN input (fmax/fmin would replace it by the bound).
  float operator()(float x) const { return act_apply(act, std::min(std::max(x, -clip), clip)); }
  // d out / d x from the output. A clipped input has zero gradient; it is recognised by
  // its output (activations are monotone, so only inputs beyond the clip, or where the
  // activation is flat in float32 and the gradient vanishes anyway, give act(+-clip)).
  float grad(float y) const {
    if (std::isfinite(clip) && (y == lo || y == hi)) return 0.0f;
    return act_grad(act, y);
  }
};

// x[0..n) = g(x[0..n)) in place: the bits act_apply (with the clip) gives each value,
// a packet at a time.
void apply_row(const Gate& g, float* x, int64_t n);

// The statistics of one part of InnerStats (gates or candidates of a saturating
// activation `a`) from rows of values: add_rows() each group of rows (kept by pointer
// until finish()), then finish() adds them to the part. The sums are grouped as the probes'
// light pass groups them (float within blocks, double across; the rounding of that
// grouping); a NaN or Inf redoes the part value by value (runtime/ops/rnn_inner.cpp).
class PartReducer {
 public:
  PartReducer(Act a, float margin);
  // rows rows of n values, row r at p + r * stride; in order.
  void add_rows(const float* p, int64_t rows, int64_t stride, int64_t n);
  void add_row(const float* p, int64_t n) { add_rows(p, 1, n, n); }
  void finish(InnerStats::Part& into);

 private:
  struct Rows {
    const float* p;
    int64_t rows, stride, n;
  };
  Act act_;
  float margin_;
  std::optional<simd::LightSums> sums_{std::in_place};  // (optional: re-made from add_rows' local copy)
  int64_t n_ = 0, sat_ = 0;
  std::vector<Rows> rows_;
};

class RnnOp : public Op {
 public:
  // gates: G; inputs: how many the op takes at most (RNN/GRU 6, LSTM 8); outputs likewise
  // (2, 3); default_acts: the activations of one direction when the attribute is absent.
  // gate_names: the gates in ONNX order, then "output" for the activation of the state
  // (LSTM's h), each with its activation's index.
  RnnOp(const ir::Node& node, Attrs& a, int64_t gates, size_t inputs, size_t outputs,
        std::vector<std::string> default_acts, std::vector<GateName> gate_names);

  void infer(InferCtx& ctx) final;
  void forward(FwdCtx& ctx) final;
  void backward(BwdCtx& ctx) final;
  OpTraits traits() const override;
  // "hidden 6, forward; gates i, o, f Sigmoid, c Tanh, output Tanh"
  std::string describe() const override;
  // sequence_lens is an index, not differentiable.
  bool differentiable_input(size_t i) const override { return i != 4; }
  // W [D, G*H, I] and R [D, G*H, H] feed I (or H) inputs into G*H gate units; B and
  // LSTM's peepholes P are biases; the initial states are state, not parameters (a
  // fixed-batch export folds torch's zero h0 into an initializer, which must not train).
  ParamRole param_role(size_t i, const Shape& s) const override {
    if ((i == 1 || i == 2) && s.size() == 3) return weight_role(s[2], s[1]);
    if (i == 3 || i == 7) return param_role_of(ParamRole::Kind::kBias);
    return {};
  }

 protected:
  struct Dir {  // one direction's view of the inputs and its slices of the buffers
    int d = 0;
    bool reverse = false;
    const float* w = nullptr;  // [G*H, I]
    const float* r = nullptr;  // [G*H, H]
    const float* b = nullptr;  // [2*G*H] or nullptr (zeros)
    float* xw = nullptr;       // [T*batch, G*H] by X row; the W-side gradient in backward
    float* gates = nullptr;    // [T][batch][G*H] what the cell keeps of each step
    float* dgates = nullptr;   // [T][batch][G*H] R-side gradient of each step
    float* hs = nullptr;       // [T+1][batch][H]: hs[0] initial, hs[s+1] after step s
    const Gate* acts = nullptr;  // this direction's activations, in attribute order
  };
  // Whether row b takes part in step s, and at which time step.
  int64_t time_of(const Dir& dir, int64_t s, int64_t b) const {
    if (s >= lens_[static_cast<size_t>(b)]) return -1;
    return dir.reverse ? lens_[static_cast<size_t>(b)] - 1 - s : s;
  }
  int64_t x_row(int64_t t, int64_t b) const { return layout_ == 0 ? t * batch_ + b : b * seq_ + t; }
  // Offset of (d, b) in a state tensor [D, batch, H] (layout 0) or [batch, D, H] (1).
  int64_t state_at(int d, int64_t b) const { return (layout_ == 0 ? d * batch_ + b : b * dirs_ + d) * hidden_; }
  float* step_gates(const Dir& dir, int64_t s) const { return dir.gates + s * batch_ * gh(); }
  float* step_dgates(const Dir& dir, int64_t s) const { return dir.dgates + s * batch_ * gh(); }
  int64_t gh() const { return gates_ * hidden_; }

  // Cell hooks. Cells read hs[s] (and their own state) and write hs[s+1] for every row,
  // active or not.
  virtual void check_cell_inputs(const InferCtx&) {}
  virtual void plan_cell(InferCtx& ctx, int64_t& floats) = 0;  // plans extra outputs and
  // sizes its buffers (adds their floats to `floats` for the memory check)
  virtual void begin_forward(const FwdCtx&, const Dir&) {}
  virtual void step_forward(const Dir& dir, int64_t s) = 0;
  virtual void end_forward(FwdCtx&, const Dir&) {}
  virtual void begin_backward(const BwdCtx&, const Dir&) {}
  // dh: gradient of hs[s+1] (dY of the step already added); writes dh_prev (gradient of
  // hs[s]), the step's xw_ rows (W side) and dgates rows (R side, zero when inactive).
  virtual void step_backward(const Dir& dir, int64_t s, const float* dh, float* dh_prev) = 0;
  virtual void end_backward(BwdCtx&, const Dir&) {}
  // dR += the R-side gradients against what entered each step; default: hs[0..T-1].
  virtual void grad_recurrent(const Dir& dir, float* dr);
  // Gates whose R bias (Rb) is folded into xw_ with Wb (GRU with linear_before_reset
  // keeps Rb of its h gate out).
  virtual int64_t folded_bias_gates() const { return gates_; }
  // Index (within one direction's activations) of the activation that bounds the hidden
  // state: LSTM's h (2), GRU's candidate g (1), RNN's f (0).
  virtual int64_t state_act() const { return 0; }
  // The inner statistics of one direction's forward pass (FwdCtx::inner), step by step
  // right after each step's gates are final, while they are in cache
  // (runtime/ops/rnn_inner.cpp).
  struct InnerPass {
    PartReducer gates, cands;
    bool gate_sat, cand_sat;
  };
  InnerPass inner_pass(const Dir& dir, float margin) const;
  void reduce_inner_step(const Dir& dir, int64_t s, InnerPass& pass) const;
  void finish_inner(const Dir& dir, InnerPass& pass, InnerStats& st) const;

  int64_t gates_ = 1;
  int64_t seq_ = 0, batch_ = 0, input_ = 0, hidden_ = 0;
  int dirs_ = 1;
  int64_t layout_ = 0;
  bool forward_only_ = true;           // direction "forward" (else reverse or both)
  std::vector<Gate> acts_;             // n_acts per direction, direction 0 first
  std::vector<int64_t> lens_;          // per batch row (T without sequence_lens)
  std::vector<float> scratch_;         // B*H, for the cells

 private:
  Dir dir_view(const std::vector<const Tensor*>& in, int d);
  void read_lengths(const Tensor* seq_lens);

  std::vector<GateName> gate_names_;
  std::string direction_;
  int version_ = 0;
  size_t max_inputs_ = 6, max_outputs_ = 2;
  int64_t hidden_attr_ = 0;
  bool reverse_only_ = false;
  std::vector<float> xw_, gates_buf_, dgates_, hs_, dh_, dh_prev_, bias_;
};

// Sample-case helper: a tensor of `shape` holding a deterministic, kink-free ramp of
// values in [shift, shift + 8 scale].
Tensor ramp(Shape shape, float scale, float shift);

}  // namespace dl::rt::rnn
