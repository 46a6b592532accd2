// Where MatMul's products (runtime/ops/mat_mul.cpp) find the matrices of A, B and Y: per
// product an element offset, and for all products one leading dimension and whether the
// matrix is stored transposed (gemm_kernel.h's MatRef). Contiguous operands, whose batch
// dimensions broadcast numpy-style, and operands folded with a Transpose of theirs
// (runtime/graph_fuse.cpp): the MatMul reads the Transpose's input X, or writes the
// Transpose's output, in place of the transposed copy, at the strides the permutation
// gives, when one of the matrix's two axes is X's last (its values contiguous).
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "converter/errors.h"
#include "runtime/ops/gemm_kernel.h"
#include "runtime/tensor.h"

namespace dl::rt::mat_mul_detail {

struct Operand {
  std::vector<int64_t> off;  // per product (output batch index)
  int64_t ld = 0;
  bool trans = false;
  MatRef at(const float* base, int64_t t) const { return {base + off[size_t(t)], ld, trans}; }
};

// Row-major strides of a shape.
inline std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

// Element offsets, per output batch index, of the batch matrices of an operand whose batch
// shape `own` (its axis d `stride[d]` elements apart) is broadcast to `out` (own
// right-aligned, size-1 dims repeat).
inline std::vector<int64_t> batch_offsets(const Shape& own, const Shape& out, const std::vector<int64_t>& own_stride) {
  const size_t r = out.size(), shift = r - own.size();
  std::vector<int64_t> stride(r, 0);
  for (size_t d = shift; d < r; ++d) stride[d] = own[d - shift] == 1 ? 0 : own_stride[d - shift];
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

// A contiguous operand of shape `own` (batch dims, then rows x cols) broadcast to `out`.
inline Operand contiguous(const Shape& own_batch, const Shape& out, int64_t rows, int64_t cols) {
  Operand o;
  std::vector<int64_t> st(own_batch.size());
  int64_t s = rows * cols;
  for (size_t d = own_batch.size(); d-- > 0;) st[d] = s, s *= own_batch[d];
  o.off = batch_offsets(own_batch, out, st);
  o.ld = cols;
  return o;
}

// The permutation of a folded Transpose (perm[k]: the input axis of output axis k) on a
// tensor of `rank` axes, whether a matrix operand can be read in place: its last axis is
// kept last (row-major) or becomes the matrix's row axis (stored transposed).
inline bool foldable(const std::vector<int64_t>& perm, int64_t rank) {
  return rank >= 2 && int64_t(perm.size()) == rank && (perm[size_t(rank - 1)] == rank - 1 || perm[size_t(rank - 2)] == rank - 1);
}

inline Shape permuted(const Shape& s, const std::vector<int64_t>& perm) {
  Shape p(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) p[k] = s[size_t(perm[k])];
  return p;
}

// An operand read through a folded Transpose: X (shape `x`) seen as X permuted by
// `perm`, broadcast to the output batch `out` (where: the node, for the message).
inline Operand transposed(const Shape& x, const std::vector<int64_t>& perm, const Shape& out, const std::string& where) {
  const int64_t r = int64_t(x.size());
  if (!foldable(perm, r)) throw InternalError(where + ": a folded Transpose must keep the last axis in the matrix");
  const std::vector<int64_t> st = strides_of(x);
  const Shape p = permuted(x, perm);
  std::vector<int64_t> pst(static_cast<size_t>(r));
  for (int64_t d = 0; d < r; ++d) pst[size_t(d)] = st[size_t(perm[size_t(d)])];
  const int64_t rows = p[size_t(r - 2)], cols = p[size_t(r - 1)];
  Operand o;
  o.trans = perm[size_t(r - 1)] != r - 1;
  // (A matrix of one row, or of one column stored transposed, never steps to a next one:
  // its leading dimension is only required to be at least its width.)
  o.ld = o.trans ? std::max(pst[size_t(r - 1)], rows) : std::max(pst[size_t(r - 2)], cols);
  const Shape batch(p.begin(), p.end() - 2);
  o.off = batch_offsets(batch, out, std::vector<int64_t>(pst.begin(), pst.end() - 2));
  return o;
}

// The products (batch indices, ascending) that share each distinct offset, in order of
// first appearance: the products accumulating into one gradient matrix.
inline std::vector<std::vector<int64_t>> group_by_offset(const std::vector<int64_t>& offs) {
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

}  // namespace dl::rt::mat_mul_detail
