// Expand (since 8, 13): broadcasts the input to `shape` (int64, known at plan time) by
// the numpy rule in both directions: the output shape is broadcast(input, shape), so a
// 1 in `shape` keeps the input's dimension. Backward sums dy over the broadcast axes.
#include "runtime/attrs.h"
#include "runtime/ops/broadcast.h"
#include "runtime/ops/shape_util.h"
#include "runtime/ops/strided.h"

namespace dl::rt {
namespace {

class Expand : public StridedViewOp {
 public:
  explicit Expand(const ir::Node& node) : StridedViewOp(node) { Attrs(node).finish(); }

  void infer(InferCtx& ctx) override {
    check_inputs(ctx, 2, 2, 2, where());
    const Tensor& x = *ctx.in[0];
    if (ctx.in[1]->rank() != 1)
      throw ShapeError(where() + ": input 'shape' must be 1-D, got shape " + shape_str(ctx.in[1]->shape()));
    const Shape target = known_ints(ctx, 1, where(), "shape");
    for (int64_t d : target)
      if (d < 0) throw ShapeError(where() + ": shape " + shape_str(target) + " has a negative dimension");
    Shape out = broadcast_shape(x.shape(), target, where());
    // The input's axes align with the output's last ones; broadcast axes step by 0.
    const std::vector<int64_t> in_strides = row_major_strides(x.shape());
    const size_t lead = out.size() - x.shape().size();
    std::vector<int64_t> strides(out.size(), 0);
    for (size_t k = 0; k < x.shape().size(); ++k)
      strides[lead + k] = x.shape()[k] == 1 ? 0 : in_strides[k];
    walk_.set(out, strides);
    ctx.out[0]->plan(x.dtype(), std::move(out));
  }

};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<Expand>(node); }

std::vector<OpSample> samples() {
  OpSample a;
  a.label = "expand 3x1 to [2, 1, 4] (new leading axis, 1 keeps, 1 broadcasts)";
  a.node = sample_node("Expand", 2);
  a.inputs = {Tensor::floats({3, 1}, {0.4f, -1.2f, 2.1f}), Tensor::ints({3}, {2, 1, 4})};
  a.check_grad = {true, false};
  OpSample b;
  b.label = "expand 2x3 to [3] (shape smaller than the input)";
  b.node = sample_node("Expand", 2);
  b.inputs = {Tensor::floats({2, 3}, {0.5f, -0.7f, 1.9f, -2.2f, 0.3f, 1.1f}), Tensor::ints({1}, {3})};
  b.check_grad = {true, false};
  return {a, b};
}

}  // namespace

OpInfo op_info_expand() { return {"Expand", {8, 13}, make, samples}; }

}  // namespace dl::rt
