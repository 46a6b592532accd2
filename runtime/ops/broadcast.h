// Numpy-style (multidirectional) broadcasting for binary element-wise ops.
//
// A BroadcastPlan is computed once in infer(): the output shape plus, for each input,
// its strides over the output's dimensions (0 where the input is broadcast). Adjacent
// dimensions that step the same way in both inputs are merged and size-1 dimensions
// dropped, so the common cases collapse to one or two loops:
//   equal shapes       -> 1 dim, strides (1, 1)
//   scalar operand     -> 1 dim, strides (1, 0) or (0, 1)
//   bias row [N,C]+[C] -> 2 dims, strides (C, 1) / (0, 1)
// Everything else walks the collapsed N-d index with a fixed-size counter (no heap
// allocation per call), running the innermost dimension as a tight loop.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/parallel.h"
#include "runtime/tensor.h"

namespace dl::rt {

// Broadcast result of shapes a and b; throws ShapeError "<where>: cannot broadcast
// [..] with [..]" when a dimension pair is neither equal nor contains a 1.
Shape broadcast_shape(const Shape& a, const Shape& b, const std::string& where);

// ONNX's legacy (opset < 7) `broadcast=1, axis=k` rule: b's shape is a contiguous run
// of a's dimensions starting at `axis` (default: suffix). Returns b's shape padded with
// 1s to a's rank so the numpy rule applies; throws ShapeError when it does not fit.
Shape legacy_broadcast_shape(const Shape& a, const Shape& b, int64_t axis, bool has_axis,
                             const std::string& where);

struct BroadcastPlan {
  static constexpr int kMaxRank = 16;  // after collapsing; ONNX tensors stay far below

  Shape out;          // broadcast output shape (uncollapsed)
  int64_t numel = 0;  // elements of `out`
  int rank = 0;       // collapsed rank (0 when numel == 0 or everything is size 1)
  std::array<int64_t, kMaxRank> dims{};
  std::array<int64_t, kMaxRank> stride_a{}, stride_b{};

  // Throws ShapeError (naming `where`) when a and b do not broadcast.
  static BroadcastPlan make(const Shape& a, const Shape& b, const std::string& where);

  // Calls run(out_offset, a_offset, b_offset, n, a_step, b_step) for every run of n
  // consecutive output elements (innermost collapsed dimension); a_step/b_step are 0 or 1.
  template <class Run>
  void for_each_run(Run&& run) const {
    if (numel == 0) return;
    if (rank <= 1) {
      run(int64_t{0}, int64_t{0}, int64_t{0}, numel, rank ? stride_a[0] : 0, rank ? stride_b[0] : 0);
      return;
    }
    const int last = rank - 1;
    const int64_t n = dims[last];
    const int64_t da = stride_a[last], db = stride_b[last];
    std::array<int64_t, kMaxRank> idx{};
    int64_t ia = 0, ib = 0;
    for (int64_t o = 0; o < numel; o += n) {
      run(o, ia, ib, n, da, db);
      for (int d = last - 1; d >= 0; --d) {  // odometer increment over outer dims
        ia += stride_a[d];
        ib += stride_b[d];
        if (++idx[d] < dims[d]) break;
        ia -= stride_a[d] * dims[d];
        ib -= stride_b[d] * dims[d];
        idx[d] = 0;
      }
    }
  }
};

namespace detail {
using Step0 = std::integral_constant<int64_t, 0>;
using Step1 = std::integral_constant<int64_t, 1>;
// Calls body(a_step, b_step) with the steps as compile-time constants, so each of the
// four inner loops is specialised (and vectorised) for its access pattern.
template <class Body>
void with_steps(int64_t da, int64_t db, Body&& body) {
  if (da && db) body(Step1{}, Step1{});
  else if (da) body(Step1{}, Step0{});
  else if (db) body(Step0{}, Step1{});
  else body(Step0{}, Step0{});
}
}  // namespace detail

namespace detail {
struct NoAfter {
  void operator()(int64_t) const {}
};
}  // namespace detail

// y[k] = f(a[.], b[.]) over the plan's output, front to back; after(end) once outputs
// [0, end) are written (a ChunkReporter's upto, runtime/sink_chunks.h).
// A run longer than a chunk (same shapes, a scalar operand: one run) is cut at kChunk
// boundaries when someone waits for its chunks, so that each is reported while in cache.
template <class TA, class TB, class TY, class F, class After = detail::NoAfter>
void broadcast_apply(const BroadcastPlan& p, const TA* a, const TB* b, TY* y, F f, After after = {}) {
  constexpr bool pieces = !std::is_same<After, detail::NoAfter>::value;
  p.for_each_run([&](int64_t o, int64_t ia, int64_t ib, int64_t n, int64_t da, int64_t db) {
    detail::with_steps(da, db, [&](auto sa, auto sb) {
      for (int64_t lo = 0; lo < n;) {
        const int64_t hi = pieces ? std::min(n, (o + lo) / kChunk * kChunk + kChunk - o) : n;
        TY* yo = y + o;
        const TA* ap = a + ia;
        const TB* bp = b + ib;
        for (int64_t k = lo; k < hi; ++k) yo[k] = f(ap[k * sa], bp[k * sb]);
        if (hi < n) after(o + hi);
        lo = hi;
      }
    });
    after(o + n);
  });
}

// Backward helper: for input `which` (0 = a, 1 = b), din[.] += sum over the output
// elements that read it of g(out_index, a_index, b_index). This is the "reduce the
// gradient back to the input's shape" step fused with the local derivative. Reductions
// use 8 partial sums so they vectorise (and lose less precision than one running sum).
// Runs over the output front to back; after(end) once outputs [0, end) are done.
// `assign`: din's first writer (BwdCtx::assigns) for an input of the output's shape:
// each element is written once, as 0 + its term (the bits of adding onto zeros).
template <class G, class After = detail::NoAfter>
void broadcast_accumulate(const BroadcastPlan& p, int which, float* din, G g, After after = {}, bool assign = false) {
  p.for_each_run([&](int64_t o, int64_t ia, int64_t ib, int64_t n, int64_t da, int64_t db) {
    detail::with_steps(da, db, [&](auto sa, auto sb) {
      const bool reduce = which == 0 ? da == 0 : db == 0;
      float* d = din + (which == 0 ? ia : ib);
      if (!reduce) {
        constexpr bool pieces = !std::is_same<After, detail::NoAfter>::value;
        for (int64_t lo = 0; lo < n;) {  // in kChunk pieces, as broadcast_apply
          const int64_t hi = pieces ? std::min(n, (o + lo) / kChunk * kChunk + kChunk - o) : n;
          if (assign)
            for (int64_t k = lo; k < hi; ++k) d[k] = 0.0f + g(o + k, ia + k * sa, ib + k * sb);
          else
            for (int64_t k = lo; k < hi; ++k) d[k] += g(o + k, ia + k * sa, ib + k * sb);
          if (hi < n) after(o + hi);
          lo = hi;
        }
        return;
      }
      float acc[8] = {};
      int64_t k = 0;
      for (; k + 8 <= n; k += 8)
        for (int64_t j = 0; j < 8; ++j) acc[j] += g(o + k + j, ia + (k + j) * sa, ib + (k + j) * sb);
      float s = 0.0f;
      for (; k < n; ++k) s += g(o + k, ia + k * sa, ib + k * sb);
      for (float v : acc) s += v;
      *d = (assign ? 0.0f : *d) + s;
    });
    after(o + n);
  });
}

// Broadcasting for ops with any number of inputs (Where, Sum, Max, Min, Mean): the
// shape all inputs broadcast to, and each input's plan against it with the output as
// operand a and the input as operand b. So broadcast_apply(plans[k], y, x_k, y, f) folds
// input k into y in place (a's offsets are the output's), and
// broadcast_accumulate(plans[k], 1, din_k, g) reduces a gradient back to input k.
struct MultiBroadcast {
  Shape out;
  std::vector<BroadcastPlan> plans;
  // Throws ShapeError (naming `where` and the first pair that does not fit).
  static MultiBroadcast make(const std::vector<Shape>& shapes, const std::string& where);
};

// din (shape in_shape) += g (shape out_shape) summed over the dimensions in which
// in_shape was broadcast to out_shape. Builds a plan: for tests and cold paths; ops
// keep their plan from infer() and call broadcast_accumulate.
void reduce_to_shape(const float* g, const Shape& out_shape, float* din, const Shape& in_shape);

}  // namespace dl::rt
