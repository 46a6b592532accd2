// Unsqueeze (since 1, 11, 13): inserts size-1 axes at the listed positions of the output
// (rank = input rank + number of axes; negative axes from 11; no duplicates). Axes come
// from the attribute before 13 and from the second input from 13, whose values must be
// known at plan time.
#include "runtime/attrs.h"
#include "runtime/ops/shape_util.h"

namespace dl::rt {
namespace {

class Unsqueeze : public ReshapeLikeOp {
 public:
  explicit Unsqueeze(const ir::Node& node) : ReshapeLikeOp(node), version_(node.since_version) {
    Attrs a(node);
    if (version_ < 13) {  // version 0 (samples, tests) accepts both forms
      has_axes_ = a.has("axes");
      axes_ = a.ints("axes");
    }
    if (version_ >= 1 && version_ < 13 && !has_axes_) a.fail("axes", "is required");
    a.finish();
  }

 protected:
  Shape output_shape(InferCtx& ctx) override {
    const bool from_input = !has_axes_;
    check_inputs(ctx, from_input ? 2 : 1, from_input ? 2 : 1, from_input ? 2 : 1, where());
    const Shape& in = ctx.in[0]->shape();
    const std::vector<int64_t> axes = from_input ? known_ints(ctx, 1, where(), "axes") : axes_;
    const int64_t r = static_cast<int64_t>(in.size() + axes.size());
    std::vector<bool> inserted(static_cast<size_t>(r), false);
    for (int64_t ax : axes) {
      const size_t k = static_cast<size_t>(normalize_axis(ax, r, where(), "axis"));
      if (inserted[k]) throw ShapeError(where() + ": axes " + shape_str(axes) + " repeat axis " + std::to_string(ax));
      inserted[k] = true;
    }
    Shape out;
    size_t next = 0;
    for (size_t k = 0; k < inserted.size(); ++k) out.push_back(inserted[k] ? 1 : in[next++]);
    return out;
  }

 private:
  int version_ = 0;
  bool has_axes_ = false;
  std::vector<int64_t> axes_;
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<Unsqueeze>(node); }

std::vector<OpSample> samples() {
  const std::vector<float> v = {0.5f, -1.2f, 2.1f, -0.7f, 1.4f, -2.3f};
  OpSample a;
  a.label = "unsqueeze 3x2 axes input [0, 3]";
  a.node = sample_node("Unsqueeze", 2, 1, {}, 13);
  a.inputs = {Tensor::floats({3, 2}, v), Tensor::ints({2}, {0, 3})};
  a.check_grad = {true, false};
  OpSample b;
  b.label = "unsqueeze 3x2 axes attribute [-1] (v11)";
  b.node = sample_node("Unsqueeze", 1, 1, {{"axes", attr_ints({-1})}}, 11);
  b.inputs = {Tensor::floats({3, 2}, v)};
  b.check_grad = {true};
  return {a, b};
}

}  // namespace

OpInfo op_info_unsqueeze() { return {"Unsqueeze", {1, 11, 13}, make, samples}; }

}  // namespace dl::rt
