// MatMul (since 1, 9, 13): numpy.matmul. A 1-D A is a row vector (M = 1, dropped
// from the output), a 1-D B a column vector (N = 1, dropped); leading batch dimensions
// broadcast numpy-style.
//
// infer() lists, per output batch matrix, the offsets of the A and B matrices it reads
// (broadcast batches repeat an offset; backward accumulates into it). When B has no
// batch dimensions and A's batches are not broadcast (the Dense-on-sequence case), the
// batches fold into one (batch*M x K) * (K x N) GEMM.
//
// Otherwise (attention's per-head products) the batch's products are spread over the
// compute threads, one whole product per block, each on the GEMM kernel with its own
// packing: which thread runs a product does not change its bits. Backward groups the
// products by the gradient matrix they accumulate into (a broadcast operand's matrix is
// shared by several products): a group runs on one thread in batch order, the order of
// the serial loop, so dA and dB are the same bits for any thread count.
//
// With a bias (make_mat_mul_with_bias, runtime/ops/fused.h: a MatMul and the Add of its
// layer's bias planned as one step, runtime/graph_fuse.cpp), Y = A B + C for a row C of N
// values: each product starts from the bias rows instead of zeros (gemm_bias), and
// backward sums dY's columns into dC row by row, reporting dY to the probe on the way.
// Its output is left to the probe, or to the step that reads it next: computing the
// product in panels of rows, each reported to the probe while cached, made the product
// slower than the pass it saved (bench/README.md, run 36).
//
// With a transposed weight (make_mat_mul_fused's transpose: torch's nn.Linear exported as
// MatMul(x, Transpose(W)) in training mode, the planner folding the Transpose into this
// step), input 1 is W itself, [N, K]: the products read it as B = W^T, and backward
// writes dW = dY^T A directly; the copy of W^T and of its gradient, each step, and their
// probes go away (a transformer: ~0.8 ms a step at 1 thread, bench/README.md run 45).
#include <algorithm>
#include <utility>
#include <vector>

#include "runtime/attrs.h"
#include "runtime/ops/broadcast.h"
#include "runtime/ops/fused.h"
#include "runtime/ops/gemm_kernel.h"
#include "runtime/ops/shape_util.h"
#include "runtime/parallel.h"
#include "runtime/sink_chunks.h"

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

// The products (batch indices, ascending) that share each distinct offset, in order of
// first appearance: the products accumulating into one gradient matrix.
std::vector<std::vector<int64_t>> group_by_offset(const std::vector<int64_t>& offs) {
  std::vector<std::vector<int64_t>> groups;
  std::vector<std::pair<int64_t, size_t>> seen;  // offset -> group, sorted by offset
  for (size_t t = 0; t < offs.size(); ++t) {
    auto it = std::lower_bound(seen.begin(), seen.end(), std::make_pair(offs[t], size_t{0}),
                               [](const auto& x, const auto& y) { return x.first < y.first; });
    if (it == seen.end() || it->first != offs[t]) {
      it = seen.insert(it, {offs[t], groups.size()});
      groups.emplace_back();
    }
    groups[it->second].push_back(static_cast<int64_t>(t));
  }
  return groups;
}

class MatMul : public Op {
 public:
  // bias_add: the name of the Add whose bias this MatMul takes as input 2 (empty: none);
  // transpose: the name of the Transpose whose input W ([N, K]) is input 1 (empty: B is input 1).
  explicit MatMul(const ir::Node& node, std::string bias_add = {}, std::string transpose = {})
      : Op(node), bias_add_(std::move(bias_add)), transpose_(std::move(transpose)) {
    Attrs(node).finish();
  }

  void infer(InferCtx& ctx) override {
    const size_t inputs = bias_add_.empty() ? 2 : 3;
    check_inputs(ctx, inputs, inputs, inputs, where());
    const Tensor& a = *ctx.in[0];
    const Tensor& b = *ctx.in[1];
    if (a.dtype() != DType::kFloat32 || b.dtype() != DType::kFloat32)
      throw ShapeError(where() + ": inputs must be float32");
    if (a.rank() < 1 || b.rank() < 1)
      throw ShapeError(where() + ": inputs must have rank >= 1, got A " + shape_str(a.shape()) + " and B " +
                       shape_str(b.shape()));
    if (!transpose_.empty() && b.rank() != 2)
      throw ShapeError(where() + ": the input of '" + transpose_ + "' is not a matrix: " + shape_str(b.shape()));
    m_ = a.rank() == 1 ? 1 : a.dim(-2);
    k_ = a.dim(-1);
    const int64_t kb = !transpose_.empty() ? b.dim(1) : b.rank() == 1 ? b.dim(0) : b.dim(-2);
    n_ = !transpose_.empty() ? b.dim(0) : b.rank() == 1 ? 1 : b.dim(-1);
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
    a_groups_ = group_by_offset(a_off_);
    b_groups_ = group_by_offset(b_off_);
    if (a.rank() > 1) out.push_back(m_);
    if (b.rank() > 1) out.push_back(n_);
    if (!bias_add_.empty()) {
      const Tensor& c = *ctx.in[2];
      if (c.dtype() != DType::kFloat32 || c.shape() != Shape{n_} || b.rank() < 2)
        throw ShapeError(where() + ": the bias of '" + bias_add_ + "' " + shape_str(c.shape()) +
                         " is not one value per output column (" + std::to_string(n_) + ")");
    }
    ctx.out[0]->plan(DType::kFloat32, out);
  }

  void forward(FwdCtx& ctx) override {
    Job job{this, ctx.in[0]->f(), ctx.in[1]->f(), nullptr, ctx.out[0]->f(), nullptr};
    if (!bias_add_.empty()) job.bias = ctx.in[2]->f();
    run(static_cast<int64_t>(a_off_.size()), [](const void* p, int64_t t) {
      const Job& j = *static_cast<const Job*>(p);
      const MatMul& o = *j.op;
      o.product(j, t);
    }, job);
  }

  void backward(BwdCtx& ctx) override {
    if (!ctx.dout[0]) return;
    Job job{this, ctx.in[0]->f(), ctx.in[1]->f(), ctx.dout[0]->f(), ctx.din[0] ? ctx.din[0]->f() : nullptr,
            ctx.din[1] ? ctx.din[1]->f() : nullptr};
    // Blocks [0, dA groups) accumulate dA, the rest dB.
    const int64_t na = job.y ? static_cast<int64_t>(a_groups_.size()) : 0;
    job.na = na;
    const int64_t nb = job.db ? static_cast<int64_t>(b_groups_.size()) : 0;
    job.assign_a = ctx.assigns(0);
    job.assign_b = ctx.assigns(1);
    run(na + nb, [](const void* p, int64_t g) {
      const Job& j = *static_cast<const Job*>(p);
      const MatMul& o = *j.op;
      // A group's first product assigns its matrix of dA (dB) when the gradient's first
      // writer (BwdCtx::assigns), the rest add to it.
      bool first = true;
      if (g < j.na) {
        for (int64_t t : o.a_groups_[static_cast<size_t>(g)]) o.grad_a(j, t, !(first && j.assign_a)), first = false;
      } else {
        for (int64_t t : o.b_groups_[static_cast<size_t>(g - j.na)]) o.grad_b(j, t, !(first && j.assign_b)), first = false;
      }
    }, job);
    if (!bias_add_.empty() && ctx.din.size() > 2 && ctx.din[2]) bias_gradient(ctx);
  }
  // Every matrix of A and B is read by some product, so each of its group's first
  // products writes all of its gradient; the bias's first row likewise.
  // (No products at all, a batch of 0 against a batch of more than 1: nothing written.)
  bool assigns_gradient(size_t i) const override {
    return (i < 2 || (i == 2 && !bias_add_.empty() && rows_ > 0)) && !a_off_.empty();
  }
  std::string describe() const override {
    std::string d = transpose_.empty() ? std::string() : "reads B as the transpose of its input by '" + transpose_ + "'";
    if (!bias_add_.empty()) d += (d.empty() ? "" : ", ") + std::string("adds the bias of '") + bias_add_ + "'";
    return d.empty() ? d : d + " in the same step";
  }

  OpTraits traits() const override { return linear_layer_traits(); }
  // B [..., K, N] (A [..., M, K]): K is the fan-in; a 1-D B [K] is one output unit.
  ParamRole param_role(size_t i, const Shape& s) const override {
    const size_t r = s.size();
    if (i == 2 && !bias_add_.empty()) return param_role_of(ParamRole::Kind::kBias);
    if (i > 1 || r == 0) return {};
    if (r == 1) return i == 1 ? weight_role(s[0], 1) : weight_role(1, s[0]);
    if (i == 1 && !transpose_.empty()) return weight_role(s[1], s[0]);  // W [N, K]
    return i == 1 ? weight_role(s[r - 2], s[r - 1]) : weight_role(s[r - 1], s[r - 2]);
  }

 private:
  // One forward or backward pass: forward reads a, b and writes y; backward reads a, b
  // and dy and accumulates into y (dA, or null) and db (or null).
  struct Job {
    const MatMul* op;
    const float *a, *b, *dy;
    float *y, *db;
    const float* bias = nullptr;  // forward: the bias row, or null
    int64_t na = 0;  // backward: blocks of dA groups before the dB ones
    bool assign_a = false, assign_b = false;  // backward: BwdCtx::assigns(0), (1)
  };

  void product(const Job& j, int64_t t) const {
    const size_t u = static_cast<size_t>(t);
    const MatRef a{j.a + a_off_[u], k_, false};
    const MatRef b = transpose_.empty() ? MatRef{j.b + b_off_[u], n_, false} : MatRef{j.b, k_, true};
    if (j.bias) gemm_bias(rows_, n_, k_, 1.0f, a, b, j.bias, j.y + t * rows_ * n_, n_);
    else gemm(rows_, n_, k_, 1.0f, a, b, j.y + t * rows_ * n_, n_, false);
  }
  // dC += the column sums of dY, row by row (its first writer: the first row as 0 + it),
  // dY reported to the probe's sink chunk by chunk on the way.
  void bias_gradient(BwdCtx& ctx) const {
    float* __restrict dc = ctx.din[2]->f();
    const float* __restrict g = ctx.dout[0]->f();
    const bool assign = ctx.assigns(2);
    const int64_t n = static_cast<int64_t>(a_off_.size()) * rows_ * n_;
    chunked_loop(n, ctx.dout_stats, g, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi;) {
        const int64_t row = i / n_, col = i - row * n_, len = std::min(n_ - col, hi - i);
        float* __restrict d = dc + col;
        const float* __restrict gi = g + i;
        if (row == 0 && assign)
          for (int64_t t = 0; t < len; ++t) d[t] = 0.0f + gi[t];
        else
          for (int64_t t = 0; t < len; ++t) d[t] += gi[t];
        i += len;
      }
    });
  }
  // dA = dY B^T (B = W^T: dY W).
  void grad_a(const Job& j, int64_t t, bool accumulate) const {
    const size_t u = static_cast<size_t>(t);
    const MatRef bt = transpose_.empty() ? MatRef{j.b + b_off_[u], n_, true} : MatRef{j.b, k_, false};
    gemm(rows_, k_, n_, 1.0f, {j.dy + t * rows_ * n_, n_, false}, bt, j.y + a_off_[u], k_, accumulate);
  }
  // dB = A^T dY; for W (B = W^T), dW = dY^T A.
  void grad_b(const Job& j, int64_t t, bool accumulate) const {
    const size_t u = static_cast<size_t>(t);
    const MatRef dy{j.dy + t * rows_ * n_, n_, false};
    if (transpose_.empty())
      gemm(k_, n_, rows_, 1.0f, {j.a + a_off_[u], k_, true}, dy, j.db + b_off_[u], n_, accumulate);
    else
      gemm(n_, k_, rows_, 1.0f, {dy.p, n_, true}, {j.a + a_off_[u], k_, false}, j.db, k_, accumulate);
  }

  // fn(&job, b) for b in [0, blocks), each block a product or a group of them, on the
  // threads the whole batch pays for. A folded batch (one product) is split by gemm().
  void run(int64_t blocks, void (*fn)(const void*, int64_t), const Job& job) const {
    if (blocks <= 0) return;
    const int threads = fold_ ? 1 : gemm_threads(static_cast<int64_t>(a_off_.size()) * rows_, n_, k_);
    if (threads == 1) {
      for (int64_t b = 0; b < blocks; ++b) fn(&job, b);
      return;
    }
    parallel_blocks(blocks, threads, fn, &job);
  }

  std::string bias_add_, transpose_;
  int64_t m_ = 0, k_ = 0, n_ = 0;
  bool fold_ = false;
  int64_t rows_ = 0;                    // rows of each A / Y matrix product (batch * M when folded)
  std::vector<int64_t> a_off_, b_off_;  // per product: element offset of its A and B matrix
  std::vector<std::vector<int64_t>> a_groups_, b_groups_;  // products by the A (B) matrix they read
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

std::unique_ptr<Op> make_mat_mul_fused(const ir::Node& node, const std::string& add_name,
                                       const std::string& transpose_name) {
  return std::make_unique<MatMul>(node, add_name, transpose_name);
}

}  // namespace dl::rt
