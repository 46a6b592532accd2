// ScatterND (since 11, 13, 16): out = data, then for each index tuple j of indices
// ([..., k], int64, negative counting from the end) the slice out[indices[j]] (of shape
// data[k:]) is replaced by updates[j], or, with reduction add / mul (16), has it added
// or multiplied in. Updates are applied in order, so with duplicate indices and no
// reduction the last one wins. data is float32 or int64; out-of-range indices throw
// DataError naming the node.
//
// Backward: none: dout to data except the overwritten slices, and to each update the
// dout of its slice if it is the one that stayed; add: dout to data and, gathered, to
// updates; mul: out = data * prod(updates at that slice), so each factor gets dout times
// the product of the others (prefix and suffix products per slice, no division).
#include <algorithm>

#include "runtime/attrs.h"
#include "runtime/ops/shape_util.h"

namespace dl::rt {
namespace {

class ScatterND : public Op {
 public:
  enum class Reduction { kNone, kAdd, kMul };

  explicit ScatterND(const ir::Node& node) : Op(node) {
    Attrs a(node);
    const std::string r = a.s("reduction", "none");
    if (r == "add") {
      reduction_ = Reduction::kAdd;
    } else if (r == "mul") {
      reduction_ = Reduction::kMul;
    } else if (r != "none") {
      a.fail("reduction", "must be none, add or mul, got '" + r + "'");
    }
    a.finish();
  }

  void infer(InferCtx& ctx) override {
    check_inputs(ctx, 3, 3, 3, where());
    const Tensor& data = *ctx.in[0];
    const Tensor& idx = *ctx.in[1];
    const Tensor& upd = *ctx.in[2];
    if (idx.dtype() != DType::kInt64)
      throw ShapeError(where() + ": indices must be int64, got " + dtype_name(idx.dtype()));
    if (upd.dtype() != data.dtype())
      throw ShapeError(where() + ": updates (" + dtype_name(upd.dtype()) + ") must have data's type (" +
                       dtype_name(data.dtype()) + ")");
    if (data.rank() < 1 || idx.rank() < 1) throw ShapeError(where() + ": data and indices must have rank >= 1");
    k_ = idx.dim(-1);
    if (k_ < 1 || k_ > data.rank())
      throw ShapeError(where() + ": indices " + shape_str(idx.shape()) + " index " + std::to_string(k_) +
                       " axes of data " + shape_str(data.shape()));
    Shape want(idx.shape().begin(), idx.shape().end() - 1);
    want.insert(want.end(), data.shape().begin() + k_, data.shape().end());
    if (upd.shape() != want)
      throw ShapeError(where() + ": updates " + shape_str(upd.shape()) + " must have shape " + shape_str(want) +
                       " (indices " + shape_str(idx.shape()) + ", data " + shape_str(data.shape()) + ")");
    dims_.assign(data.shape().begin(), data.shape().begin() + k_);
    slice_ = 1;
    for (int64_t d = k_; d < data.rank(); ++d) slice_ *= data.dim(d);
    count_ = idx.numel() / k_;
    offsets_.assign(size_t(count_), 0);
    if (ctx.known.size() > 1 && ctx.known[1]) resolve(idx);  // fail at plan time when we can
    const int64_t slices = slice_ > 0 ? data.numel() / slice_ : 0;
    ctx.charge((slices + 2 * count_) * int64_t(sizeof(int64_t)) + (count_ + 1) * int64_t(sizeof(float)),
               "index buffers of " + where());
    taken_.assign(size_t(slices), -1);
    order_.assign(size_t(count_), 0);
    suffix_.assign(size_t(count_) + 1, 1.0f);
    ctx.out[0]->plan(data.dtype(), data.shape());
  }

  void forward(FwdCtx& ctx) override {
    resolve(*ctx.in[1]);
    const Tensor& data = *ctx.in[0];
    const Tensor& upd = *ctx.in[2];
    Tensor& out = *ctx.out[0];
    copy_elems(data, 0, out, 0, data.numel());
    if (data.dtype() == DType::kFloat32)
      apply(upd.f(), out.f());
    else
      apply(upd.i(), out.i());
  }

  void backward(BwdCtx& ctx) override {
    if (!ctx.dout[0]) return;
    resolve(*ctx.in[1]);
    const float* dy = ctx.dout[0]->f();
    float* dd = ctx.din[0] ? ctx.din[0]->f() : nullptr;
    float* du = ctx.din.size() > 2 && ctx.din[2] ? ctx.din[2]->f() : nullptr;
    std::fill(taken_.begin(), taken_.end(), -1);
    for (int64_t j = 0; j < count_; ++j) taken_[size_t(offsets_[size_t(j)] / slice_)] = j;
    const int64_t slices = static_cast<int64_t>(taken_.size());
    if (reduction_ == Reduction::kMul) return backward_mul(ctx, dy, dd, du);
    const bool add = reduction_ == Reduction::kAdd;
    if (dd)
      for (int64_t sl = 0; sl < slices; ++sl)
        if (add || taken_[size_t(sl)] < 0) add_elems(dy + sl * slice_, dd + sl * slice_, slice_);
    if (du)
      for (int64_t j = 0; j < count_; ++j) {
        const int64_t off = offsets_[size_t(j)];
        if (add || taken_[size_t(off / slice_)] == j) add_elems(dy + off, du + j * slice_, slice_);
      }
  }

  OpTraits traits() const override {
    OpTraits t;
    t.linear = reduction_ != Reduction::kMul;
    return t;
  }
  bool differentiable_input(size_t i) const override { return i != 1; }

 private:
  // offsets_[j] = the first element of index tuple j's slice; throws IndexRangeError.
  void resolve(const Tensor& idx) {
    const int64_t* p = idx.i();
    for (int64_t j = 0; j < count_; ++j) {
      int64_t off = 0;
      for (int64_t d = 0; d < k_; ++d) {
        int64_t v = p[j * k_ + d];
        const int64_t n = dims_[size_t(d)];
        if (v < -n || v >= n)
          throw IndexRangeError(where() + ": index " + std::to_string(v) + " (tuple " + std::to_string(j) + ", axis " +
                                    std::to_string(d) + ") is out of range for axis size " + std::to_string(n),
                                v);
        off = off * n + (v < 0 ? v + n : v);
      }
      offsets_[size_t(j)] = off * slice_;
    }
  }

  template <class T>
  void apply(const T* upd, T* out) const {
    for (int64_t j = 0; j < count_; ++j) {
      T* o = out + offsets_[size_t(j)];
      const T* u = upd + j * slice_;
      for (int64_t e = 0; e < slice_; ++e) {
        switch (reduction_) {
          case Reduction::kNone:
            o[e] = u[e];
            break;
          case Reduction::kAdd:
            o[e] += u[e];
            break;
          case Reduction::kMul:
            o[e] *= u[e];
            break;
        }
      }
    }
  }

  // out = data * u_1 * ... * u_m per element of a slice written by updates 1..m: the
  // gradient of each factor is dy times the product of the others, from a running prefix
  // and the suffix products (no division, exact with zeros).
  void backward_mul(BwdCtx& ctx, const float* dy, float* dd, float* du) {
    const float* data = ctx.in[0]->f();
    const float* u = ctx.in[2]->f();
    for (int64_t j = 0; j < count_; ++j) order_[size_t(j)] = j;
    std::sort(order_.begin(), order_.end(), [this](int64_t a, int64_t b) {
      return offsets_[size_t(a)] != offsets_[size_t(b)] ? offsets_[size_t(a)] < offsets_[size_t(b)] : a < b;
    });
    if (dd)
      for (size_t sl = 0; sl < taken_.size(); ++sl)
        if (taken_[sl] < 0) add_elems(dy + int64_t(sl) * slice_, dd + int64_t(sl) * slice_, slice_);
    for (size_t g0 = 0; g0 < order_.size();) {
      const int64_t off = offsets_[size_t(order_[g0])];
      size_t g1 = g0;
      while (g1 < order_.size() && offsets_[size_t(order_[g1])] == off) ++g1;
      const size_t m = g1 - g0;
      for (int64_t e = 0; e < slice_; ++e) {
        suffix_[m] = 1.0f;
        for (size_t t = m; t-- > 0;) suffix_[t] = suffix_[t + 1] * u[order_[g0 + t] * slice_ + e];
        const float g = dy[off + e];
        if (dd) dd[off + e] += g * suffix_[0];
        float prefix = data[off + e];
        for (size_t t = 0; t < m; ++t) {
          const int64_t j = order_[g0 + t];
          if (du) du[j * slice_ + e] += g * prefix * suffix_[t + 1];
          prefix *= u[j * slice_ + e];
        }
      }
      g0 = g1;
    }
  }

  Reduction reduction_ = Reduction::kNone;
  int64_t k_ = 1, slice_ = 1, count_ = 0;
  std::vector<int64_t> dims_;     // data's first k dimensions
  std::vector<int64_t> offsets_;  // per index tuple (resolve)
  std::vector<int64_t> taken_;    // per data slice: the update that wrote it last, -1 for none (backward)
  std::vector<int64_t> order_;    // mul backward: index tuples by slice, then in order
  std::vector<float> suffix_;     // mul backward: suffix products of one slice's factors
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<ScatterND>(node); }

std::vector<OpSample> samples() {
  const std::vector<float> data = {0.5f, -1.2f, 0.8f, 1.9f, -0.4f, 1.1f, -2.1f, 0.7f, 1.3f, -0.6f, 0.9f, -1.5f};
  const std::vector<float> upd = {1.4f, -0.3f, 0.6f, -1.1f, 0.2f, 1.7f};
  auto make_sample = [&](const std::string& label, const char* reduction, Shape ishape, std::vector<int64_t> idx,
                         Shape ushape, std::vector<float> u) {
    OpSample s;
    s.label = label;
    s.node = sample_node("ScatterND", 3, 1, {{"reduction", attr_s(reduction)}}, 16);
    s.inputs = {Tensor::floats({4, 3}, data), Tensor::ints(std::move(ishape), std::move(idx)),
                Tensor::floats(std::move(ushape), std::move(u))};
    s.check_grad = {true, false, true};
    return s;
  };
  return {
      make_sample("scatternd rows 3 and -4 of 4x3 (none)", "none", {2, 1}, {3, -4}, {2, 3}, upd),
      make_sample("scatternd elements, duplicate index (none: the last wins)", "none", {3, 2}, {1, 2, 0, 0, 1, 2}, {3},
                  {0.6f, -1.1f, 0.2f}),
      make_sample("scatternd add, duplicate rows", "add", {2, 1}, {2, 2}, {2, 3}, upd),
      make_sample("scatternd mul, duplicate rows", "mul", {3, 1}, {1, 0, 1}, {3, 3},
                  {1.4f, -0.3f, 0.6f, -1.1f, 0.2f, 1.7f, 0.9f, -1.3f, 0.5f}),
  };
}

}  // namespace

OpInfo op_info_scatter_nd() { return {"ScatterND", {11, 13, 16}, make, samples}; }

}  // namespace dl::rt
