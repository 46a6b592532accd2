// Shape (since 1, 13, 15): the input's dimensions as a 1-D int64 tensor; from 15 the
// slice [start, end) of them, both clamped to [0, rank] after adding rank to negative
// values. Needs only the input's shape, so infer() computes it (the node is folded).
#include <algorithm>

#include "runtime/attrs.h"
#include "runtime/ops/shape_util.h"

namespace dl::rt {
namespace {

class ShapeOp : public Op {
 public:
  explicit ShapeOp(const ir::Node& node) : Op(node) {
    Attrs a(node);
    // start/end exist from version 15; finish() rejects them on older nodes.
    if (node.since_version == 0 || node.since_version >= 15) {
      has_end_ = a.has("end");
      start_ = a.i("start", 0);
      end_ = a.i("end", 0);
    }
    a.finish();
  }

  void infer(InferCtx& ctx) override {
    check_inputs(ctx, 1, 1, 1, where());
    const Shape& in = ctx.in[0]->shape();
    const int64_t r = static_cast<int64_t>(in.size());
    auto clamp = [r](int64_t v) { return std::clamp(v < 0 ? v + r : v, int64_t{0}, r); };
    begin_ = clamp(start_);
    const int64_t stop = has_end_ ? clamp(end_) : r;
    count_ = std::max<int64_t>(0, stop - begin_);
    ctx.out[0]->reset(DType::kInt64, {count_});
    fill(in, *ctx.out[0]);
    if (!ctx.out_known.empty()) ctx.out_known[0] = true;
  }

  void forward(FwdCtx& ctx) override { fill(ctx.in[0]->shape(), *ctx.out[0]); }

  OpTraits traits() const override { return {}; }
  bool differentiable_input(size_t) const override { return false; }
  void backward(BwdCtx&) override {}  // the output does not depend on the input's values

 private:
  void fill(const Shape& in, Tensor& y) const {
    std::copy(in.begin() + begin_, in.begin() + begin_ + count_, y.i());
  }

  bool has_end_ = false;
  int64_t start_ = 0, end_ = 0;
  int64_t begin_ = 0, count_ = 0;
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<ShapeOp>(node); }

std::vector<OpSample> samples() {
  OpSample a;
  a.label = "shape of 2x3x4";
  a.node = sample_node("Shape", 1);
  a.inputs = {Tensor::floats({2, 3, 4}, std::vector<float>(24, 0.5f))};
  a.check_grad = {false};
  OpSample b;
  b.label = "shape of 2x3x4 start -2 end 10";
  b.node = sample_node("Shape", 1, 1, {{"start", attr_i(-2)}, {"end", attr_i(10)}}, 15);
  b.inputs = {Tensor::floats({2, 3, 4}, std::vector<float>(24, 0.5f))};
  b.check_grad = {false};
  return {a, b};
}

}  // namespace

OpInfo op_info_shape() { return {"Shape", {1, 13, 15}, make, samples}; }

}  // namespace dl::rt
