// Reshape (since 5, 13, 14): the shape input (int64, known at plan time) may hold one -1
// (inferred) and zeros, which copy the input's dimension at the same index unless
// allowzero=1 (14+), where they are literal zero-sized dimensions.
#include "runtime/attrs.h"
#include "runtime/ops/shape_util.h"

namespace dl::rt {
namespace {

class Reshape : public ReshapeLikeOp {
 public:
  explicit Reshape(const ir::Node& node) : ReshapeLikeOp(node) {
    Attrs a(node);
    // allowzero exists from version 14; finish() rejects it on older nodes.
    if (node.since_version == 0 || node.since_version >= 14) allow_zero_ = a.i("allowzero", 0) != 0;
    a.finish();
  }

 protected:
  Shape output_shape(InferCtx& ctx) override {
    check_inputs(ctx, 2, 2, 2, where());
    const Tensor& shape_in = *ctx.in[1];
    if (shape_in.rank() != 1)
      throw ShapeError(where() + ": input 'shape' must be 1-D, got shape " + shape_str(shape_in.shape()));
    Shape out = known_ints(ctx, 1, where(), "shape");
    const Shape& in = ctx.in[0]->shape();
    int64_t infer_at = -1, known = 1;
    bool has_zero = false;
    for (size_t k = 0; k < out.size(); ++k) {
      if (out[k] == -1) {
        if (infer_at >= 0) throw ShapeError(where() + ": shape " + shape_str(out) + " has more than one -1");
        infer_at = static_cast<int64_t>(k);
        continue;
      }
      if (out[k] < -1) throw ShapeError(where() + ": shape " + shape_str(out) + " has an invalid negative dimension");
      if (out[k] == 0 && !allow_zero_) {
        if (k >= in.size())
          throw ShapeError(where() + ": shape " + shape_str(out) + " copies dimension " + std::to_string(k) +
                           " (0) but the input " + shape_str(in) + " has rank " + std::to_string(in.size()));
        out[k] = in[k];
      }
      has_zero = has_zero || out[k] == 0;
      if (__builtin_mul_overflow(known, out[k], &known))  // cannot match any input's element count
        throw ShapeError(where() + ": shape " + shape_str(out) + " has more elements than can be addressed");
    }
    if (infer_at >= 0) {
      if (allow_zero_ && has_zero)
        throw ShapeError(where() + ": shape " + shape_str(out) + " combines -1 with 0 under allowzero=1");
      const int64_t n = ctx.in[0]->numel();
      if (known == 0 || n % known != 0)
        throw ShapeError(where() + ": cannot infer the -1 dimension of " + shape_str(out) + " for input " +
                         shape_str(in) + " (" + std::to_string(n) + " elements)");
      out[static_cast<size_t>(infer_at)] = n / known;
    }
    return out;
  }

 private:
  bool allow_zero_ = false;
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<Reshape>(node); }

std::vector<OpSample> samples() {
  std::vector<float> v(24);
  for (size_t k = 0; k < v.size(); ++k) v[k] = 1.1f - 0.09f * float(k);
  OpSample a;
  a.label = "reshape 2x3x4 to [0, -1, 2]";
  a.node = sample_node("Reshape", 2);
  a.inputs = {Tensor::floats({2, 3, 4}, v), Tensor::ints({3}, {0, -1, 2})};
  a.check_grad = {true, false};
  OpSample b;
  b.label = "reshape 2x3x4 to [4, 6] allowzero";
  b.node = sample_node("Reshape", 2, 1, {{"allowzero", attr_i(1)}}, 14);
  b.inputs = {Tensor::floats({2, 3, 4}, v), Tensor::ints({2}, {4, 6})};
  b.check_grad = {true, false};
  return {a, b};
}

}  // namespace

OpInfo op_info_reshape() { return {"Reshape", {5, 13, 14}, make, samples}; }

}  // namespace dl::rt
