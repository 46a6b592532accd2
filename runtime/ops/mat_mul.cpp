// MatMul (since 1, 9, 13): numpy.matmul. A 1-D A is a row vector (M = 1, dropped
// from the output), a 1-D B a column vector (N = 1, dropped); leading batch dimensions
// broadcast numpy-style.
//
// infer() lists, per output batch matrix, the offsets of the A and B matrices it reads
// (broadcast batches repeat an offset; backward accumulates into it). When B has no
// batch dimensions and A's batches are not broadcast (the Dense-on-sequence case), the
// batches fold into one (batch*M x K) * (K x N) GEMM.
#include "runtime/attrs.h"
#include "runtime/ops/broadcast.h"
#include "runtime/ops/gemm_kernel.h"
#include "runtime/ops/shape_util.h"

namespace dl::rt {
namespace {

// Element offsets, per output batch index, of the batch matrix of an operand whose batch
// shape `own` is broadcast to `out` (own right-aligned, size-1 dims repeat).
std::vector<int64_t> batch_offsets(const Shape& own, const Shape& out, int64_t matrix_size) {
  const size_t r = out.size(), shift = r - own.size();
  std::vector<int64_t> stride(r, 0);
  int64_t s = matrix_size;
  for (size_t d = r; d-- > shift;) {
    stride[d] = own[d - shift] == 1 ? 0 : s;
    s *= own[d - shift];
  }
  const int64_t total = shape_numel(out);
  std::vector<int64_t> offs(static_cast<size_t>(total));
  std::vector<int64_t> idx(r, 0);
  int64_t off = 0;
  for (int64_t b = 0; b < total; ++b) {
    offs[static_cast<size_t>(b)] = off;
    for (size_t d = r; d-- > 0;) {
      off += stride[d];
      if (++idx[d] < out[d]) break;
      off -= stride[d] * out[d];
      idx[d] = 0;
    }
  }
  return offs;
}

class MatMul : public Op {
 public:
  explicit MatMul(const ir::Node& node) : Op(node) { Attrs(node).finish(); }

  void infer(InferCtx& ctx) override {
    check_inputs(ctx, 2, 2, 2, where());
    const Tensor& a = *ctx.in[0];
    const Tensor& b = *ctx.in[1];
    if (a.dtype() != DType::kFloat32 || b.dtype() != DType::kFloat32)
      throw ShapeError(where() + ": inputs must be float32");
    if (a.rank() < 1 || b.rank() < 1)
      throw ShapeError(where() + ": inputs must have rank >= 1, got A " + shape_str(a.shape()) + " and B " +
                       shape_str(b.shape()));
    m_ = a.rank() == 1 ? 1 : a.dim(-2);
    k_ = a.dim(-1);
    const int64_t kb = b.rank() == 1 ? b.dim(0) : b.dim(-2);
    n_ = b.rank() == 1 ? 1 : b.dim(-1);
    if (kb != k_)
      throw ShapeError(where() + ": inner dimensions differ: A " + shape_str(a.shape()) + " and B " +
                       shape_str(b.shape()));
    const Shape a_batch(a.shape().begin(), a.shape().end() - std::min<int64_t>(a.rank(), 2));
    const Shape b_batch(b.shape().begin(), b.shape().end() - std::min<int64_t>(b.rank(), 2));
    Shape out = broadcast_shape(a_batch, b_batch, where());
    const int64_t batches = shape_numel(out);
    fold_ = shape_numel(b_batch) == 1 && shape_numel(a_batch) == batches;
    if (fold_) {
      a_off_.assign(1, 0);
      b_off_.assign(1, 0);
      rows_ = batches * m_;
    } else {
      a_off_ = batch_offsets(a_batch, out, m_ * k_);
      b_off_ = batch_offsets(b_batch, out, k_ * n_);
      rows_ = m_;
    }
    if (a.rank() > 1) out.push_back(m_);
    if (b.rank() > 1) out.push_back(n_);
    ctx.out[0]->plan(DType::kFloat32, out);
  }

  void forward(FwdCtx& ctx) override {
    const float* a = ctx.in[0]->f();
    const float* b = ctx.in[1]->f();
    float* y = ctx.out[0]->f();
    for (size_t t = 0; t < a_off_.size(); ++t)
      gemm(rows_, n_, k_, 1.0f, {a + a_off_[t], k_, false}, {b + b_off_[t], n_, false},
           y + static_cast<int64_t>(t) * rows_ * n_, n_, false);
  }

  void backward(BwdCtx& ctx) override {
    if (!ctx.dout[0]) return;
    const float* a = ctx.in[0]->f();
    const float* b = ctx.in[1]->f();
    const float* dy = ctx.dout[0]->f();
    float* da = ctx.din[0] ? ctx.din[0]->f() : nullptr;
    float* db = ctx.din[1] ? ctx.din[1]->f() : nullptr;
    for (size_t t = 0; t < a_off_.size(); ++t) {
      const MatRef dyt{dy + static_cast<int64_t>(t) * rows_ * n_, n_, false};
      if (da) gemm(rows_, k_, n_, 1.0f, dyt, {b + b_off_[t], n_, true}, da + a_off_[t], k_, true);
      if (db) gemm(k_, n_, rows_, 1.0f, {a + a_off_[t], k_, true}, dyt, db + b_off_[t], n_, true);
    }
  }

  OpTraits traits() const override { return linear_layer_traits(); }
  // B [..., K, N] (A [..., M, K]): K is the fan-in; a 1-D B [K] is one output unit.
  ParamRole param_role(size_t i, const Shape& s) const override {
    const size_t r = s.size();
    if (i > 1 || r == 0) return {};
    if (r == 1) return i == 1 ? weight_role(s[0], 1) : weight_role(1, s[0]);
    return i == 1 ? weight_role(s[r - 2], s[r - 1]) : weight_role(s[r - 1], s[r - 2]);
  }

 private:
  int64_t m_ = 0, k_ = 0, n_ = 0;
  bool fold_ = false;
  int64_t rows_ = 0;                    // rows of each A / Y matrix product (batch * M when folded)
  std::vector<int64_t> a_off_, b_off_;  // per product: element offset of its A and B matrix
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<MatMul>(node); }

std::vector<float> ramp(int64_t n, float scale, float shift) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k)] = scale * static_cast<float>((k * 5) % 9) + shift;
  return v;
}

std::vector<OpSample> samples() {
  OpSample a;
  a.label = "matmul 2x3x4 * 4x2 (folded batch)";
  a.node = sample_node("MatMul", 2, 1, {}, 13);
  a.inputs = {Tensor::floats({2, 3, 4}, ramp(24, 0.3f, -1.2f)), Tensor::floats({4, 2}, ramp(8, 0.25f, -0.9f))};
  a.check_grad = {true, true};
  OpSample b;
  b.label = "matmul broadcast batches 2x1x2x3 * 3x3x2";
  b.node = sample_node("MatMul", 2, 1, {}, 13);
  b.inputs = {Tensor::floats({2, 1, 2, 3}, ramp(12, 0.3f, -1.2f)), Tensor::floats({3, 3, 2}, ramp(18, 0.2f, -0.8f))};
  b.check_grad = {true, true};
  OpSample c;
  c.label = "matmul 1-D vector * 2x3x2 batch";
  c.node = sample_node("MatMul", 2, 1, {}, 13);
  c.inputs = {Tensor::floats({3}, {0.5f, -1.0f, 1.5f}), Tensor::floats({2, 3, 2}, ramp(12, 0.3f, -1.1f))};
  c.check_grad = {true, true};
  OpSample d;
  d.label = "matmul 2x3 * 1-D vector";
  d.node = sample_node("MatMul", 2, 1, {}, 13);
  d.inputs = {Tensor::floats({2, 3}, ramp(6, 0.4f, -1.0f)), Tensor::floats({3}, {0.7f, -0.4f, 1.1f})};
  d.check_grad = {true, true};
  return {a, b, c, d};
}

}  // namespace

OpInfo op_info_mat_mul() { return {"MatMul", {1, 9, 13}, make, samples}; }

}  // namespace dl::rt
