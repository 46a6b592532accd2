// Squeeze (since 1, 11, 13): removes the listed size-1 axes, or every size-1 axis when
// none are listed. Axes come from the attribute before 13 (negative from 11) and from
// the optional second input from 13, whose values must be known at plan time.
#include "runtime/attrs.h"
#include "runtime/ops/shape_util.h"

namespace dl::rt {
namespace {

class Squeeze : public ReshapeLikeOp {
 public:
  explicit Squeeze(const ir::Node& node) : ReshapeLikeOp(node), version_(node.since_version) {
    Attrs a(node);
    if (version_ < 13) {  // version 0 (samples, tests) accepts both forms
      has_axes_ = a.has("axes");
      axes_ = a.ints("axes");
    }
    a.finish();
  }

 protected:
  Shape output_shape(InferCtx& ctx) override {
    check_inputs(ctx, 1, version_ >= 1 && version_ < 13 ? 1 : 2, 1, where());
    const Shape& in = ctx.in[0]->shape();
    const int64_t r = static_cast<int64_t>(in.size());
    bool listed = has_axes_;
    std::vector<int64_t> axes = axes_;
    if (ctx.in.size() > 1 && ctx.in[1]) {
      if (has_axes_) throw ShapeError(where() + ": axes given both as attribute and as input");
      listed = true;
      axes = known_ints(ctx, 1, where(), "axes");
    }
    std::vector<bool> drop(in.size(), false);
    for (int64_t ax : axes) {
      const size_t k = static_cast<size_t>(normalize_axis(ax, r, where(), "axis"));
      if (in[k] != 1)
        throw ShapeError(where() + ": cannot squeeze axis " + std::to_string(ax) + " of size " +
                         std::to_string(in[k]) + " (input " + shape_str(in) + ")");
      drop[k] = true;
    }
    Shape out;
    for (size_t k = 0; k < in.size(); ++k)
      if (!(listed ? drop[k] : in[k] == 1)) out.push_back(in[k]);
    return out;
  }

 private:
  int version_ = 0;
  bool has_axes_ = false;
  std::vector<int64_t> axes_;
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<Squeeze>(node); }

std::vector<OpSample> samples() {
  const std::vector<float> v = {0.5f, -1.2f, 2.1f, -0.7f, 1.4f, -2.3f};
  OpSample a;
  a.label = "squeeze 1x3x1x2 all size-1 axes";
  a.node = sample_node("Squeeze", 1, 1, {}, 13);
  a.inputs = {Tensor::floats({1, 3, 1, 2}, v)};
  a.check_grad = {true};
  OpSample b;
  b.label = "squeeze 1x3x1x2 axes input [-2]";
  b.node = sample_node("Squeeze", 2, 1, {}, 13);
  b.inputs = {Tensor::floats({1, 3, 1, 2}, v), Tensor::ints({1}, {-2})};
  b.check_grad = {true, false};
  OpSample c;
  c.label = "squeeze 1x3x1x2 axes attribute [0] (v11)";
  c.node = sample_node("Squeeze", 1, 1, {{"axes", attr_ints({0})}}, 11);
  c.inputs = {Tensor::floats({1, 3, 1, 2}, v)};
  c.check_grad = {true};
  return {a, b, c};
}

}  // namespace

OpInfo op_info_squeeze() { return {"Squeeze", {1, 11, 13}, make, samples}; }

}  // namespace dl::rt
