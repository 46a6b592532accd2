// Gemm (since 6, 7, 9, 11, 13): Y = alpha * A' * B' + beta * C, A' = A^T if transA,
// B' = B^T if transB; A' is (M, K), B' is (K, N). C is unidirectionally broadcast to
// (M, N): scalar, [N], [1, N], [M, 1] or [M, N]. C is optional from 11. Version 6 takes
// `broadcast`: without it C must be exactly (M, N).
#include "runtime/attrs.h"
#include "runtime/ops/gemm_kernel.h"
#include "runtime/ops/shape_util.h"

namespace dl::rt {
namespace {

class Gemm : public Op {
 public:
  explicit Gemm(const ir::Node& node) : Op(node), version_(node.since_version) {
    Attrs a(node);
    alpha_ = a.f("alpha", 1.0f);
    beta_ = a.f("beta", 1.0f);
    trans_a_ = a.i("transA", 0) != 0;
    trans_b_ = a.i("transB", 0) != 0;
    if (version_ > 0 && version_ < 7) legacy_broadcast_ = a.i("broadcast", 0) != 0;
    a.finish();
  }

  void infer(InferCtx& ctx) override {
    check_inputs(ctx, 2, 3, version_ > 0 && version_ < 11 ? 3 : 2, where());
    for (const Tensor* t : ctx.in)
      if (t && t->dtype() != DType::kFloat32) throw ShapeError(where() + ": inputs must be float32");
    const Tensor& a = *ctx.in[0];
    const Tensor& b = *ctx.in[1];
    if (a.rank() != 2 || b.rank() != 2)
      throw ShapeError(where() + ": A " + shape_str(a.shape()) + " and B " + shape_str(b.shape()) + " must be 2-D");
    m_ = trans_a_ ? a.dim(1) : a.dim(0);
    k_ = trans_a_ ? a.dim(0) : a.dim(1);
    n_ = trans_b_ ? b.dim(0) : b.dim(1);
    const int64_t kb = trans_b_ ? b.dim(1) : b.dim(0);
    if (kb != k_)
      throw ShapeError(where() + ": inner dimensions differ: A " + shape_str(a.shape()) + (trans_a_ ? "^T" : "") +
                       " and B " + shape_str(b.shape()) + (trans_b_ ? "^T" : ""));
    has_c_ = ctx.in.size() > 2 && ctx.in[2];
    if (has_c_) {
      const Shape& c = ctx.in[2]->shape();
      const bool exact = c == Shape{m_, n_};
      bool fits = c.size() <= 2;
      c_rows_ = c.size() == 2 ? c[0] : 1;
      c_cols_ = c.empty() ? 1 : c.back();
      fits = fits && (c_rows_ == 1 || c_rows_ == m_) && (c_cols_ == 1 || c_cols_ == n_);
      if (!fits || (version_ > 0 && version_ < 7 && !legacy_broadcast_ && !exact))
        throw ShapeError(where() + ": C " + shape_str(c) + " does not broadcast to the output [" + std::to_string(m_) +
                         ", " + std::to_string(n_) + "]");
    }
    ctx.out[0]->plan(DType::kFloat32, {m_, n_});
  }

  // The bias is written first and the product accumulated onto it by the GEMM kernel
  // (no second pass over Y); the usual Dense bias ([N] or [1, N], beta 1) by each block of
  // the product, in place of the zeros it starts from.
  void forward(FwdCtx& ctx) override {
    float* __restrict y = ctx.out[0]->f();
    if (has_c_ && c_rows_ == 1 && c_cols_ == n_ && beta_ == 1.0f) {
      gemm_bias(m_, n_, k_, alpha_, a_ref(ctx.in[0]), b_ref(ctx.in[1]), ctx.in[2]->f(), y, n_);
      return;
    }
    if (has_c_) {
      const float* __restrict c = ctx.in[2]->f();
      if (c_rows_ == 1 && c_cols_ == n_) {  // [N] / [1, N] with a beta other than 1
        for (int64_t i = 0; i < m_; ++i)
          for (int64_t j = 0; j < n_; ++j) y[i * n_ + j] = beta_ * c[j];
      } else {
        const int64_t rs = c_rows_ == 1 ? 0 : c_cols_, cs = c_cols_ == 1 ? 0 : 1;
        for (int64_t i = 0; i < m_; ++i)
          for (int64_t j = 0; j < n_; ++j) y[i * n_ + j] = beta_ * c[i * rs + j * cs];
      }
    }
    gemm(m_, n_, k_, alpha_, a_ref(ctx.in[0]), b_ref(ctx.in[1]), y, n_, /*accumulate=*/has_c_);
  }

  void backward(BwdCtx& ctx) override {
    if (!ctx.dout[0]) return;
    const MatRef dy{ctx.dout[0]->f(), n_, false};
    const MatRef a = a_ref(ctx.in[0]), b = b_ref(ctx.in[1]);
    // d op(A) = alpha dY op(B)^T (M x K); d op(B) = alpha op(A)^T dY (K x N). A stored
    // transposed gets the transposed gradient: dA = alpha op(B) dY^T (K x M), likewise B.
    // (A gradient's first writer, BwdCtx::assigns, writes the product without adding.)
    if (ctx.din[0]) {
      const bool acc = !ctx.assigns(0);
      if (!trans_a_) gemm(m_, k_, n_, alpha_, dy, t(b), ctx.din[0]->f(), k_, acc);
      else gemm(k_, m_, n_, alpha_, b, t(dy), ctx.din[0]->f(), m_, acc);
    }
    if (ctx.din[1]) {
      const bool acc = !ctx.assigns(1);
      if (!trans_b_) gemm(k_, n_, m_, alpha_, t(a), dy, ctx.din[1]->f(), n_, acc);
      else gemm(n_, k_, m_, alpha_, t(dy), a, ctx.din[1]->f(), k_, acc);
    }
    if (has_c_ && ctx.din.size() > 2 && ctx.din[2]) {
      float* __restrict dc = ctx.din[2]->f();
      const float* __restrict g = ctx.dout[0]->f();
      if (c_rows_ == 1 && c_cols_ == n_) {  // column sums, row by row (vectorised over j)
        if (ctx.assigns(2))  // (the first row as 0 + its term: the bits of adding onto zeros)
          for (int64_t j = 0; j < n_; ++j) dc[j] = 0.0f + beta_ * g[j];
        for (int64_t i = ctx.assigns(2) ? 1 : 0; i < m_; ++i)
          for (int64_t j = 0; j < n_; ++j) dc[j] += beta_ * g[i * n_ + j];
      } else {
        const int64_t rs = c_rows_ == 1 ? 0 : c_cols_, cs = c_cols_ == 1 ? 0 : 1;
        for (int64_t i = 0; i < m_; ++i)
          for (int64_t j = 0; j < n_; ++j) dc[i * rs + j * cs] += beta_ * g[i * n_ + j];
      }
    }
  }

  // dA and dB: whole products; dC: a bias row over M >= 1 rows (a broadcast C otherwise).
  bool assigns_gradient(size_t i) const override { return i < 2 || (i == 2 && c_rows_ == 1 && c_cols_ == n_ && m_ > 0); }

  OpTraits traits() const override { return linear_layer_traits(); }
  // A [M, K] or B [K, N] unless transposed: K is the fan-in.
  ParamRole param_role(size_t i, const Shape& s) const override {
    if (i == 2) return param_role_of(ParamRole::Kind::kBias);
    if (i > 1 || s.size() != 2) return {};
    const bool k_first = (i == 1) != (i == 0 ? trans_a_ : trans_b_);
    return k_first ? weight_role(s[0], s[1]) : weight_role(s[1], s[0]);
  }

 private:
  // op(A) (M x K) and op(B) (K x N) over the stored row-major buffers.
  MatRef a_ref(const Tensor* t) const { return {t->f(), trans_a_ ? m_ : k_, trans_a_}; }
  MatRef b_ref(const Tensor* t) const { return {t->f(), trans_b_ ? k_ : n_, trans_b_}; }
  static MatRef t(MatRef r) { return {r.p, r.ld, !r.trans}; }

  int version_ = 0;
  float alpha_ = 1.0f, beta_ = 1.0f;
  bool trans_a_ = false, trans_b_ = false, legacy_broadcast_ = false;
  int64_t m_ = 0, k_ = 0, n_ = 0;
  bool has_c_ = false;
  int64_t c_rows_ = 1, c_cols_ = 1;  // C viewed as (c_rows_, c_cols_), each 1 or the output's
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<Gemm>(node); }

std::vector<float> ramp(int64_t n, float scale, float shift) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k)] = scale * static_cast<float>((k * 5) % 9) + shift;
  return v;
}

std::vector<OpSample> samples() {
  OpSample a;
  a.label = "gemm 3x4 * 4x2 + C[2] (row broadcast)";
  a.node = sample_node("Gemm", 3, 1, {}, 13);
  a.inputs = {Tensor::floats({3, 4}, ramp(12, 0.3f, -1.1f)), Tensor::floats({4, 2}, ramp(8, 0.25f, -0.9f)),
              Tensor::floats({2}, {0.5f, -0.3f})};
  a.check_grad = {true, true, true};
  OpSample b;
  b.label = "gemm transA transB alpha beta, C [3, 1]";
  b.node =
      sample_node("Gemm", 3, 1,
                  {{"transA", attr_i(1)}, {"transB", attr_i(1)}, {"alpha", attr_f(0.7f)}, {"beta", attr_f(-1.5f)}}, 13);
  b.inputs = {Tensor::floats({4, 3}, ramp(12, 0.3f, -1.0f)), Tensor::floats({2, 4}, ramp(8, 0.2f, -0.8f)),
              Tensor::floats({3, 1}, {0.4f, -0.2f, 0.1f})};
  b.check_grad = {true, true, true};
  OpSample c;
  c.label = "gemm transB, no C";
  c.node = sample_node("Gemm", 2, 1, {{"transB", attr_i(1)}}, 13);
  c.inputs = {Tensor::floats({2, 3}, ramp(6, 0.4f, -1.2f)), Tensor::floats({4, 3}, ramp(12, 0.3f, -1.0f))};
  c.check_grad = {true, true};
  OpSample d;
  d.label = "gemm transA, scalar C";
  d.node = sample_node("Gemm", 3, 1, {{"transA", attr_i(1)}, {"beta", attr_f(2.0f)}}, 13);
  d.inputs = {Tensor::floats({3, 2}, ramp(6, 0.4f, -1.2f)), Tensor::floats({3, 3}, ramp(9, 0.3f, -1.0f)),
              Tensor::floats({}, {0.3f})};
  d.check_grad = {true, true, true};
  return {a, b, c, d};
}

}  // namespace

OpInfo op_info_gemm() { return {"Gemm", {6, 7, 9, 11, 13}, make, samples}; }

}  // namespace dl::rt
