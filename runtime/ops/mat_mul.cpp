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
// With a bias (runtime/ops/fused.h: a MatMul and the Add of its layer's bias planned as
// one step, runtime/graph_fuse.cpp), Y = A B + C for a row C of N values: each product
// starts from the bias rows instead of zeros (gemm_bias), and backward sums dY's columns
// into dC row by row, reporting dY to the probe on the way. Its output is left to the
// probe, or to the step that reads it next: computing the product in panels of rows,
// each reported to the probe while cached, made the product slower than the pass it
// saved (bench/README.md, run 36).
//
// With Transposes folded in (the same planner): the Transpose of A or B (a weight W as
// torch's nn.Linear exports it, MatMul(x, Transpose(W)); attention's keys and values,
// Transpose [1, 2, 0] and [1, 0, 2]) is read in place from its input, and the Transpose
// of Y (attention's heads merged back, [1, 0, 2]) written in place (through a contiguous
// block: block_): the operand layouts of runtime/ops/mat_mul_layout.h. Backward writes dA
// and dB at the same strides: where an operand is stored transposed it computes the
// transposed product (dW = dY^T A for B = W^T), into the gradient of the Transpose's
// input. The copies, their gradients' copies and their probes go away (bench/README.md
// run 45).
#include <algorithm>
#include <utility>
#include <vector>

#include "runtime/attrs.h"
#include "runtime/ops/broadcast.h"
#include "runtime/ops/fused.h"
#include "runtime/ops/gemm_kernel.h"
#include "runtime/ops/mat_mul_layout.h"
#include "runtime/ops/shape_util.h"
#include "runtime/parallel.h"
#include "runtime/sink_chunks.h"

namespace dl::rt {
namespace {

using mat_mul_detail::Operand;

class MatMul : public Op {
 public:
  explicit MatMul(const ir::Node& node, MatMulFusion fused = {}) : Op(node), fused_(std::move(fused)) {
    Attrs(node).finish();
  }

  void infer(InferCtx& ctx) override {
    const size_t inputs = fused_.bias_add.empty() ? 2 : 3;
    check_inputs(ctx, inputs, inputs, inputs, where());
    const Tensor& a = *ctx.in[0];
    const Tensor& b = *ctx.in[1];
    if (a.dtype() != DType::kFloat32 || b.dtype() != DType::kFloat32)
      throw ShapeError(where() + ": inputs must be float32");
    // The operands as the products see them: a folded Transpose's input, permuted.
    const auto seen = [&](const Tensor& t, const std::vector<int64_t>& perm, const std::string& by) {
      if (perm.empty()) return t.shape();
      if (!mat_mul_detail::foldable(perm, t.rank()))
        throw ShapeError(where() + ": the input of '" + by + "' " + shape_str(t.shape()) +
                         " cannot be read in place as permuted by " + shape_str(perm));
      return mat_mul_detail::permuted(t.shape(), perm);
    };
    const Shape as = seen(a, fused_.perm_a, fused_.transpose_a), bs = seen(b, fused_.perm_b, fused_.transpose_b);
    const int64_t ar = int64_t(as.size()), br = int64_t(bs.size());
    if (ar < 1 || br < 1)
      throw ShapeError(where() + ": inputs must have rank >= 1, got A " + shape_str(as) + " and B " + shape_str(bs));
    m_ = ar == 1 ? 1 : as[size_t(ar - 2)];
    k_ = as[size_t(ar - 1)];
    const int64_t kb = br == 1 ? bs[0] : bs[size_t(br - 2)];
    n_ = br == 1 ? 1 : bs[size_t(br - 1)];
    if (kb != k_)
      throw ShapeError(where() + ": inner dimensions differ: A " + shape_str(as) + " and B " + shape_str(bs));
    const Shape a_batch(as.begin(), as.end() - std::min<int64_t>(ar, 2));
    const Shape b_batch(bs.begin(), bs.end() - std::min<int64_t>(br, 2));
    Shape out = broadcast_shape(a_batch, b_batch, where());
    const int64_t batches = shape_numel(out);
    const bool y_folded = !fused_.perm_y.empty();
    if (y_folded && (ar < 2 || br < 2 || !fused_.bias_add.empty() ||
                     !mat_mul_detail::foldable(fused_.perm_y, int64_t(out.size()) + 2) ||
                     fused_.perm_y.back() != int64_t(out.size()) + 1))
      throw ShapeError(where() + ": the output cannot be written in place as permuted by '" + fused_.transpose_y + "'");
    fold_ = shape_numel(b_batch) == 1 && shape_numel(a_batch) == batches && fused_.perm_a.empty() && !y_folded &&
            (fused_.perm_b.empty() || br == 2);
    rows_ = fold_ ? batches * m_ : m_;
    const Shape one_batch;  // (folded: one product over all the rows)
    a_ = fused_.perm_a.empty() ? mat_mul_detail::contiguous(fold_ ? one_batch : a_batch, fold_ ? one_batch : out,
                                                            rows_, k_)
                               : mat_mul_detail::transposed(a.shape(), fused_.perm_a, out, where());
    b_ = fused_.perm_b.empty() ? mat_mul_detail::contiguous(fold_ ? one_batch : b_batch, fold_ ? one_batch : out, k_, n_)
                               : mat_mul_detail::transposed(b.shape(), fused_.perm_b, fold_ ? one_batch : out, where());
    a_groups_ = mat_mul_detail::group_by_offset(a_.off);
    b_groups_ = mat_mul_detail::group_by_offset(b_.off);
    if (ar > 1) out.push_back(m_);
    if (br > 1) out.push_back(n_);
    if (!fused_.bias_add.empty()) {
      const Tensor& c = *ctx.in[2];
      if (c.dtype() != DType::kFloat32 || c.shape() != Shape{n_} || br < 2)
        throw ShapeError(where() + ": the bias of '" + fused_.bias_add + "' " + shape_str(c.shape()) +
                         " is not one value per output column (" + std::to_string(n_) + ")");
    }
    if (y_folded) {
      // Y's axis d lands on the output's axis inv[d]: the output's strides, by Y's axes.
      const Shape z = mat_mul_detail::permuted(out, fused_.perm_y);
      const std::vector<int64_t> zs = mat_mul_detail::strides_of(z);
      std::vector<int64_t> ys(out.size());
      for (size_t q = 0; q < out.size(); ++q) ys[size_t(fused_.perm_y[q])] = zs[q];
      const Shape y_batch(out.begin(), out.end() - 2);
      y_.off = mat_mul_detail::batch_offsets(y_batch, y_batch, std::vector<int64_t>(ys.begin(), ys.end() - 2));
      y_.ld = std::max(ys[out.size() - 2], n_);
      out = z;
      if (y_.ld != n_ && m_ > 1) {
        ctx.reserve(where(), double(shape_numel(out)) * sizeof(float), "its products before their Transpose");
        block_.assign(size_t(shape_numel(out)), 0.0f);
      } else {
        block_.clear();
      }
    } else {
      block_.clear();
      y_.off.resize(size_t(fold_ ? 1 : batches));
      for (size_t t = 0; t < y_.off.size(); ++t) y_.off[t] = int64_t(t) * rows_ * n_;
      y_.ld = n_;
    }
    ctx.out[0]->plan(DType::kFloat32, out);
  }

  void forward(FwdCtx& ctx) override {
    Job job{this, ctx.in[0]->f(), ctx.in[1]->f(), nullptr, ctx.out[0]->f(), nullptr};
    if (!fused_.bias_add.empty()) job.bias = ctx.in[2]->f();
    if (!block_.empty()) job.block = block_.data();
    run(static_cast<int64_t>(a_.off.size()), [](const void* p, int64_t t) {
      const Job& j = *static_cast<const Job*>(p);
      const MatMul& o = *j.op;
      o.product(j, t);
    }, job);
    if (job.block) place_block(job.block, job.y);
  }

  void backward(BwdCtx& ctx) override {
    if (!ctx.dout[0]) return;
    Job job{this, ctx.in[0]->f(), ctx.in[1]->f(), ctx.dout[0]->f(), ctx.din[0] ? ctx.din[0]->f() : nullptr,
            ctx.din[1] ? ctx.din[1]->f() : nullptr};
    // Blocks [0, dA groups) accumulate dA, the rest dB.
    const int64_t na = job.y ? static_cast<int64_t>(a_groups_.size()) : 0;
    job.na = na;
    if (!block_.empty()) {  // (dY's rows far apart, as Y's: gathered once, read by every product)
      job.block = block_.data();
      gather_block(job.dy, job.block);
    }
    const int64_t nb = job.db ? static_cast<int64_t>(b_groups_.size()) : 0;
    job.assign_a = ctx.assigns(0);
    job.assign_b = ctx.assigns(1);
    // MatMul(X, X): dA and dB are one gradient, whose groups must not run at once.
    job.serial = job.y && job.y == job.db;
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
    if (!fused_.bias_add.empty() && ctx.din.size() > 2 && ctx.din[2]) bias_gradient(ctx);
  }
  // Every matrix of A and B is read by some product, so each of its group's first
  // products writes all of its gradient; the bias's first row likewise.
  // (No products at all, a batch of 0 against a batch of more than 1: nothing written.)
  bool assigns_gradient(size_t i) const override {
    return (i < 2 || (i == 2 && !fused_.bias_add.empty() && rows_ > 0)) && !a_.off.empty();
  }
  std::string describe() const override {
    std::vector<std::string> parts;
    if (!fused_.transpose_a.empty()) parts.push_back("reads A in place of '" + fused_.transpose_a + "'");
    if (!fused_.transpose_b.empty()) parts.push_back("reads B in place of '" + fused_.transpose_b + "'");
    if (!fused_.transpose_y.empty()) parts.push_back("writes the output of '" + fused_.transpose_y + "'");
    if (!fused_.bias_add.empty()) parts.push_back("adds the bias of '" + fused_.bias_add + "'");
    std::string d;
    for (const std::string& p : parts) d += (d.empty() ? "" : ", ") + p;
    return d.empty() ? d : d + " in the same step";
  }

  OpTraits traits() const override { return linear_layer_traits(); }
  // B [..., K, N] (A [..., M, K]): K is the fan-in; a 1-D B [K] is one output unit.
  ParamRole param_role(size_t i, const Shape& s) const override {
    const size_t r = s.size();
    if (i == 2 && !fused_.bias_add.empty()) return param_role_of(ParamRole::Kind::kBias);
    if (i > 1 || r == 0) return {};
    if (r == 1) return i == 1 ? weight_role(s[0], 1) : weight_role(1, s[0]);
    // (A folded Transpose's input: the operand is it permuted.)
    const std::vector<int64_t>& perm = i == 1 ? fused_.perm_b : fused_.perm_a;
    const Shape p = perm.size() == s.size() ? mat_mul_detail::permuted(s, perm) : s;
    return i == 1 ? weight_role(p[r - 2], p[r - 1]) : weight_role(p[r - 1], p[r - 2]);
  }

 private:
  // One forward or backward pass: forward reads a, b and writes y; backward reads a, b
  // and dy and accumulates into y (dA, or null) and db (or null).
  struct Job {
    const MatMul* op;
    const float *a, *b, *dy;
    float *y, *db;
    const float* bias = nullptr;  // forward: the bias row, or null
    float* block = nullptr;       // the products' contiguous Y (forward) or dY (backward): block_, or null
    int64_t na = 0;  // backward: blocks of dA groups before the dB ones
    bool assign_a = false, assign_b = false;  // backward: BwdCtx::assigns(0), (1)
    bool serial = false;  // backward: dA and dB are one buffer (every block on the calling thread)
  };

  void product(const Job& j, int64_t t) const {
    const MatRef a = a_.at(j.a, t), b = b_.at(j.b, t);
    if (j.block) {  // (a folded Y: contiguous products, placed after them)
      gemm(rows_, n_, k_, 1.0f, a, b, j.block + t * rows_ * n_, n_, false);
      return;
    }
    float* y = j.y + y_.off[size_t(t)];
    if (j.bias) gemm_bias(rows_, n_, k_, 1.0f, a, b, j.bias, y, y_.ld);
    else gemm(rows_, n_, k_, 1.0f, a, b, y, y_.ld, false);
  }
  // Product t's dY: in place, or its rows gathered into the block (gather_block).
  MatRef dy_at(const Job& j, int64_t t) const {
    return j.block ? MatRef{j.block + t * rows_ * n_, n_, false} : y_.at(j.dy, t);
  }
  // place_block's reverse: dY's rows into the block, read in the same order.
  void gather_block(const float* dy, float* block) const {
    const int64_t products = static_cast<int64_t>(y_.off.size());
    for (int64_t r = 0; r < rows_; ++r)
      for (int64_t t = 0; t < products; ++t) {
        const float* from = dy + y_.off[size_t(t)] + r * y_.ld;
        std::copy(from, from + n_, block + (t * rows_ + r) * n_);
      }
  }
  // The products' rows, from the contiguous block to their places in Y, row r of every
  // product before row r + 1: for attention's heads merged back ([S, N H, d] from [N H, S,
  // d]) that is memory order.
  void place_block(const float* block, float* y) const {
    const int64_t products = static_cast<int64_t>(y_.off.size());
    for (int64_t r = 0; r < rows_; ++r)
      for (int64_t t = 0; t < products; ++t) {
        const float* from = block + (t * rows_ + r) * n_;
        std::copy(from, from + n_, y + y_.off[size_t(t)] + r * y_.ld);
      }
  }
  // dC += the column sums of dY, row by row (its first writer: the first row as 0 + it),
  // dY reported to the probe's sink chunk by chunk on the way.
  void bias_gradient(BwdCtx& ctx) const {
    float* __restrict dc = ctx.din[2]->f();
    const float* __restrict g = ctx.dout[0]->f();
    const bool assign = ctx.assigns(2);
    const int64_t n = static_cast<int64_t>(a_.off.size()) * rows_ * n_;
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
  // dA = dY op(B)^T, or where A is stored transposed its transpose op(B) dY^T.
  void grad_a(const Job& j, int64_t t, bool accumulate) const {
    const MatRef dy = dy_at(j, t), b = b_.at(j.b, t);
    float* da = j.y + a_.off[size_t(t)];
    if (!a_.trans) gemm(rows_, k_, n_, 1.0f, dy, {b.p, b.ld, !b.trans}, da, a_.ld, accumulate);
    else gemm(k_, rows_, n_, 1.0f, b, {dy.p, dy.ld, true}, da, a_.ld, accumulate);
  }
  // dB = op(A)^T dY, or where B is stored transposed (B = W^T) its transpose dY^T op(A).
  void grad_b(const Job& j, int64_t t, bool accumulate) const {
    const MatRef dy = dy_at(j, t), a = a_.at(j.a, t);
    float* db = j.db + b_.off[size_t(t)];
    if (!b_.trans) gemm(k_, n_, rows_, 1.0f, {a.p, a.ld, !a.trans}, dy, db, b_.ld, accumulate);
    else gemm(n_, k_, rows_, 1.0f, {dy.p, dy.ld, true}, a, db, b_.ld, accumulate);
  }

  // fn(&job, b) for b in [0, blocks), each block a product or a group of them, on the
  // threads the whole batch pays for. A folded batch (one product) is split by gemm().
  void run(int64_t blocks, void (*fn)(const void*, int64_t), const Job& job) const {
    if (blocks <= 0) return;
    const int threads = fold_ || job.serial ? 1 : gemm_threads(static_cast<int64_t>(a_.off.size()) * rows_, n_, k_);
    if (threads == 1) {
      for (int64_t b = 0; b < blocks; ++b) fn(&job, b);
      return;
    }
    parallel_blocks(blocks, threads, fn, &job);
  }

  MatMulFusion fused_;
  int64_t m_ = 0, k_ = 0, n_ = 0;
  bool fold_ = false;
  int64_t rows_ = 0;    // rows of each A / Y matrix product (batch * M when folded)
  Operand a_, b_, y_;   // per product: where its A, B and Y matrices are
  std::vector<std::vector<int64_t>> a_groups_, b_groups_;  // products by the A (B) matrix they read
  // A folded Y (the product's Transpose written in place): its rows lie far apart
  // (attention's heads merged back, 4N heads of 32 values: 8 KB at batch 16), where the
  // kernel's zeroing and accumulation of C in place thrash the cache's sets. The products
  // go to this contiguous block instead (the same blocking, so the same bits), then to
  // their places (place_block): the attention's forward AV product on an Intel Xeon 0.55
  // -> 0.27 to 0.30 ms (bench/README.md, run 63).
  std::vector<float> block_;
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

std::unique_ptr<Op> make_mat_mul_fused(const ir::Node& node, const MatMulFusion& fused) {
  return std::make_unique<MatMul>(node, fused);
}

}  // namespace dl::rt
