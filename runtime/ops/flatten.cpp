// Flatten (since 1, 9, 11, 13): [d0..dn] -> [d0*..*d(axis-1), d(axis)*..*dn], axis in
// [-r, r] (negative values were formally added in 11; accepting them earlier is harmless).
#include "runtime/attrs.h"
#include "runtime/ops/shape_util.h"

namespace dl::rt {
namespace {

class Flatten : public ReshapeLikeOp {
 public:
  explicit Flatten(const ir::Node& node) : ReshapeLikeOp(node) {
    Attrs a(node);
    axis_ = a.i("axis", 1);
    a.finish();
  }

 protected:
  Shape output_shape(InferCtx& ctx) override {
    check_inputs(ctx, 1, 1, 1, where());
    const Shape& s = ctx.in[0]->shape();
    const int64_t r = static_cast<int64_t>(s.size());
    const int64_t axis = normalize_axis(axis_, r, where(), "axis", /*allow_end=*/true);
    int64_t outer = 1, inner = 1;
    for (int64_t k = 0; k < r; ++k) (k < axis ? outer : inner) *= s[static_cast<size_t>(k)];
    return {outer, inner};
  }

 private:
  int64_t axis_ = 1;
};

std::unique_ptr<Op> make(const ir::Node& node) { return std::make_unique<Flatten>(node); }

std::vector<OpSample> samples() {
  std::vector<float> v(24);
  for (size_t k = 0; k < v.size(); ++k) v[k] = 0.1f * float(k) - 1.2f;
  std::vector<OpSample> out;
  for (int64_t axis : {1, -1, 0}) {
    OpSample s;
    s.label = "flatten 2x3x4 axis " + std::to_string(axis);
    s.node = sample_node("Flatten", 1, 1, {{"axis", attr_i(axis)}});
    s.inputs = {Tensor::floats({2, 3, 4}, v)};
    s.check_grad = {true};
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

OpInfo op_info_flatten() { return {"Flatten", {1, 9, 11, 13}, make, samples}; }

}  // namespace dl::rt
