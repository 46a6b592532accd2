// RNN (since 7, 14), the simple recurrent layer: H' = f(X Wi^T + H Ri^T + Wbi + Rbi),
// activation f default Tanh. The time loop, directions, layouts and sequence_lens are
// RnnOp's (runtime/ops/rnn_common.h).
#include "runtime/ops/gemm_kernel.h"
#include "runtime/ops/rnn_common.h"
#include "runtime/ops/shape_util.h"

namespace dl::rt {
namespace {

using rnn::RnnOp;

class Rnn : public RnnOp {
 public:
  Rnn(const ir::Node& node, Attrs& a) : RnnOp(node, a, 1, 6, 2, {"Tanh"}, {{"h", 0}}) {}

 protected:
  void plan_cell(InferCtx&, int64_t&) override {}

  void step_forward(const Dir& dir, int64_t s) override {
    const int64_t h = hidden_;
    const float* h_prev = dir.hs + s * batch_ * h;
    float* h_next = dir.hs + (s + 1) * batch_ * h;
    float* g = step_gates(dir, s);
    gemm(batch_, h, h, 1.0f, {h_prev, h, false}, {dir.r, h, true}, g, h, false);
    for (int64_t b = 0; b < batch_; ++b) {
      const int64_t t = time_of(dir, s, b);
      float* out = h_next + b * h;
      if (t < 0) {
        std::copy(h_prev + b * h, h_prev + (b + 1) * h, out);
        continue;
      }
      const float* xw = dir.xw + x_row(t, b) * h;
      float* gb = g + b * h;
      for (int64_t j = 0; j < h; ++j) gb[j] += xw[j];
      rnn::apply_row(dir.acts[0], gb, h);  // a row of packet math (runtime/ops/rnn_act.cpp)
      std::copy(gb, gb + h, out);
    }
  }

  void step_backward(const Dir& dir, int64_t s, const float* dh, float* dh_prev) override {
    const int64_t h = hidden_;
    const float* g = step_gates(dir, s);
    float* dg = step_dgates(dir, s);
    for (int64_t b = 0; b < batch_; ++b) {
      const int64_t t = time_of(dir, s, b);
      if (t < 0) {  // the state passed through this step
        std::fill(dg + b * h, dg + (b + 1) * h, 0.0f);
        std::copy(dh + b * h, dh + (b + 1) * h, dh_prev + b * h);
        continue;
      }
      float* dxw = dir.xw + x_row(t, b) * h;
      for (int64_t j = 0; j < h; ++j) {
        dg[b * h + j] = dxw[j] = dh[b * h + j] * dir.acts[0].grad(g[b * h + j]);
        dh_prev[b * h + j] = 0.0f;
      }
    }
    gemm(batch_, h, h, 1.0f, {dg, h, false}, {dir.r, h, false}, dh_prev, h, true);
  }
};

std::unique_ptr<Op> make(const ir::Node& node) {
  Attrs a(node);
  auto op = std::make_unique<Rnn>(node, a);
  a.finish();
  return op;
}

using rnn::ramp;

std::vector<OpSample> samples() {
  const int64_t t = 3, b = 2, in = 3, h = 2;
  auto rnn = [&](const std::string& label, std::map<std::string, ir::Attribute> attrs, int64_t d, size_t inputs,
                 int64_t layout) {
    OpSample s;
    s.label = label;
    attrs["hidden_size"] = attr_i(h);
    if (layout) attrs["layout"] = attr_i(layout);
    s.node = sample_node("RNN", inputs, 2, attrs, 14);
    s.inputs = {ramp(layout ? Shape{b, t, in} : Shape{t, b, in}, 0.25f, -1.0f), ramp({d, h, in}, 0.1f, -0.4f),
                ramp({d, h, h}, 0.12f, -0.5f), ramp({d, 2 * h}, 0.05f, -0.2f), Tensor::ints({b}, {t, t - 2}),
                ramp(layout ? Shape{b, d, h} : Shape{d, b, h}, 0.2f, -0.7f)};
    s.inputs.resize(inputs);
    s.check_grad.assign(inputs, true);
    if (inputs > 4) s.check_grad[4] = false;
    return s;
  };
  return {
      rnn("rnn forward, sequence_lens, initial h", {}, 1, 6, 0),
      rnn("rnn bidirectional, layout 1, sigmoid", {{"direction", attr_s("bidirectional")},
                                                   {"activations", attr_strings({"Sigmoid", "Tanh"})}}, 2, 4, 1),
  };
}

}  // namespace

OpInfo op_info_rnn() { return {"RNN", {7, 14}, make, samples}; }

}  // namespace dl::rt
