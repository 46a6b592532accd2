#include "runtime/ops/broadcast.h"

#include "converter/errors.h"

namespace dl::rt {
namespace {

[[noreturn]] void fail(const std::string& where, const Shape& a, const Shape& b, const std::string& why) {
  throw ShapeError(where + ": cannot broadcast " + shape_str(a) + " with " + shape_str(b) + why);
}

// Row-major strides of `s` aligned to the right of an output of rank `rank`, with 0 on
// every dimension where s has size 1 (or is missing) so reads repeat.
std::vector<int64_t> aligned_strides(const Shape& s, size_t rank) {
  std::vector<int64_t> st(rank, 0);
  int64_t step = 1;
  for (size_t k = 0; k < s.size(); ++k) {
    const size_t src = s.size() - 1 - k;
    const size_t dst = rank - 1 - k;
    st[dst] = s[src] == 1 ? 0 : step;
    step *= s[src];
  }
  return st;
}

}  // namespace

Shape broadcast_shape(const Shape& a, const Shape& b, const std::string& where) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t k = 0; k < rank; ++k) {
    const int64_t da = k < a.size() ? a[a.size() - 1 - k] : 1;
    const int64_t db = k < b.size() ? b[b.size() - 1 - k] : 1;
    if (da != db && da != 1 && db != 1)
      fail(where, a, b, " (dimension " + std::to_string(rank - 1 - k) + ": " + std::to_string(da) + " vs " +
                            std::to_string(db) + ")");
    out[rank - 1 - k] = da == 1 ? db : da;
  }
  return out;
}

Shape legacy_broadcast_shape(const Shape& a, const Shape& b, int64_t axis, bool has_axis,
                             const std::string& where) {
  const int64_t ra = static_cast<int64_t>(a.size());
  const int64_t rb = static_cast<int64_t>(b.size());
  if (shape_numel(b) == 1) return Shape(a.size(), 1);  // a one-element B repeats everywhere
  if (rb > ra) fail(where, a, b, " (legacy broadcast: B has higher rank than A)");
  if (!has_axis) axis = ra - rb;
  if (axis < 0) axis += ra;
  if (axis < 0 || axis + rb > ra)
    fail(where, a, b, " (legacy broadcast: axis " + std::to_string(axis) + " out of range)");
  Shape padded(a.size(), 1);
  for (int64_t j = 0; j < rb; ++j) {
    const int64_t want = a[static_cast<size_t>(axis + j)];
    const int64_t got = b[static_cast<size_t>(j)];
    if (got != want && got != 1)
      fail(where, a, b, " (legacy broadcast at axis " + std::to_string(axis) + ")");
    padded[static_cast<size_t>(axis + j)] = got;
  }
  return padded;
}

BroadcastPlan BroadcastPlan::make(const Shape& a, const Shape& b, const std::string& where) {
  BroadcastPlan p;
  p.out = broadcast_shape(a, b, where);
  p.numel = shape_numel(p.out);
  const std::vector<int64_t> sa = aligned_strides(a, p.out.size());
  const std::vector<int64_t> sb = aligned_strides(b, p.out.size());
  // Collapse: drop size-1 dims; merge a dim into the previous one when both inputs step
  // through the pair as through one dimension (prev stride == cur stride * cur size).
  int r = 0;
  for (size_t d = 0; d < p.out.size(); ++d) {
    const int64_t n = p.out[d];
    if (n == 1) continue;
    if (r > 0 && p.stride_a[r - 1] == sa[d] * n && p.stride_b[r - 1] == sb[d] * n) {
      p.dims[r - 1] *= n;
      p.stride_a[r - 1] = sa[d];
      p.stride_b[r - 1] = sb[d];
      continue;
    }
    if (r == kMaxRank)
      throw ShapeError(where + ": broadcasting " + shape_str(a) + " with " + shape_str(b) +
                       " needs more than 16 non-mergeable dimensions");
    p.dims[r] = n;
    p.stride_a[r] = sa[d];
    p.stride_b[r] = sb[d];
    ++r;
  }
  p.rank = p.numel == 0 ? 0 : r;
  return p;
}

MultiBroadcast MultiBroadcast::make(const std::vector<Shape>& shapes, const std::string& where) {
  MultiBroadcast m;
  for (const Shape& s : shapes) m.out = broadcast_shape(m.out, s, where);
  for (const Shape& s : shapes) m.plans.push_back(BroadcastPlan::make(m.out, s, where));
  return m;
}

void reduce_to_shape(const float* g, const Shape& out_shape, float* din, const Shape& in_shape) {
  BroadcastPlan p = BroadcastPlan::make(in_shape, out_shape, "reduce_to_shape");
  if (p.out != out_shape)
    throw ShapeError("reduce_to_shape: " + shape_str(in_shape) + " does not broadcast to " + shape_str(out_shape));
  broadcast_accumulate(p, 0, din, [g](int64_t o, int64_t, int64_t) { return g[o]; });
}

}  // namespace dl::rt
