// Tile (since 6, 13): repeats the input repeats[k] times along each axis k (repeats:
// int64, known at plan time, one per axis). Output axis k of size d * r is walked as
// (repeat, index) with the repeat's input stride 0; backward sums dy over the repeats.
#include "runtime/attrs.h"
#include "runtime/ops/shape_util.h"
#include "runtime/ops/strided.h"

namespace dl::rt {
namespace {

class Tile : public StridedViewOp {
 public:
  explicit Tile(const ir::Node& node) : StridedViewOp(node) { Attrs(node).finish(); }

  void infer(InferCtx& ctx) override {
    check_inputs(ctx, 2, 2, 2, where());
    const Tensor& x = *ctx.in[0];
    const std::vector<int64_t> reps = known_ints(ctx, 1, where(), "repeats");
    if (ctx.in[1]->rank() != 1 || static_cast<int64_t>(reps.size()) != x.rank())
      throw ShapeError(where() + ": repeats " + shape_str(reps) + " must be 1-D with one entry per axis of the input " +
                       shape_str(x.shape()));
    const std::vector<int64_t> in_strides = row_major_strides(x.shape());
    Shape out;
    std::vector<int64_t> dims, strides;
    for (size_t k = 0; k < reps.size(); ++k) {
      if (reps[k] < 0) throw ShapeError(where() + ": repeats " + shape_str(reps) + " has a negative entry");
      int64_t len = 0;
      if (__builtin_mul_overflow(x.shape()[k], reps[k], &len))
        throw ResourceError(where() + ": repeats " + shape_str(reps) + " make axis " + std::to_string(k) +
                            " of the input " + shape_str(x.shape()) + " longer than can be addressed");
      out.push_back(len);
      dims.push_back(reps[k]);
      strides.push_back(0);
      dims.push_back(x.shape()[k]);
      strides.push_back(in_strides[k]);
    }
    walk_.set(dims, strides);
    ctx.out[0]->plan(x.dtype(), std::move(out));
  }

};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<Tile>(node); }

std::vector<OpSample> samples() {
  OpSample a;
  a.label = "tile 2x3 by [2, 2]";
  a.node = sample_node("Tile", 2);
  a.inputs = {Tensor::floats({2, 3}, {0.5f, -0.7f, 1.9f, -2.2f, 0.3f, 1.1f}), Tensor::ints({2}, {2, 2})};
  a.check_grad = {true, false};
  OpSample b;
  b.label = "tile 1x2x2 by [3, 1, 2]";
  b.node = sample_node("Tile", 2);
  b.inputs = {Tensor::floats({1, 2, 2}, {0.8f, -1.6f, 2.4f, -0.2f}), Tensor::ints({3}, {3, 1, 2})};
  b.check_grad = {true, false};
  return {a, b};
}

}  // namespace

OpInfo op_info_tile() { return {"Tile", {6, 13}, make, samples}; }

}  // namespace dl::rt
