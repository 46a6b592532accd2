#include "cli/model_blocks.h"

#include <algorithm>
#include <map>
#include <set>

namespace dl::cli {
namespace {

using Role = rt::OpTraits::Role;

// How far the walks go: attention's scaling, masking and head reshapes are a few steps,
// its projections a few more (Transpose, Slice, Reshape of the fused q/k/v projection).
constexpr int kNearSteps = 6;
constexpr int kProjectionSteps = 24;

class Flow {
 public:
  explicit Flow(const rt::ExecutionGraph& g) : g_(g) {
    for (size_t k = 0; k < g.steps().size(); ++k) {
      const rt::Step& st = g.steps()[k];
      for (int s : st.outputs)
        if (s >= 0) producer_[s] = k;
      for (int s : st.inputs)
        if (s >= 0) consumers_[s].push_back(k);
    }
    // A weight: a float initializer (trainable or not), or a view of one (Transpose(W)
    // before a MatMul).
    const auto& initializers = g.store()->values;
    for (size_t k = 0; k < g.steps().size(); ++k)
      for (int s : g.steps()[k].inputs)
        if (s >= 0 && initializers.count(g.value_name(s))) weight_.insert(s);
    for (size_t k = 0; k < g.steps().size(); ++k) {
      const rt::Step& st = g.steps()[k];
      const rt::OpTraits t = st.op->traits();
      if ((t.role == Role::kShape || t.rearranges) && !st.inputs.empty() && weight_.count(st.inputs[0]))
        for (int s : st.outputs)
          if (s >= 0) weight_.insert(s);
    }
  }

  const rt::Step& step(size_t k) const { return g_.steps()[k]; }
  rt::OpTraits traits(size_t k) const { return step(k).op->traits(); }

  // A product of two activations: a parameterised, linear op (MatMul) reading no weight.
  bool data_product(size_t k) const {
    const rt::Step& st = step(k);
    const rt::OpTraits t = traits(k);
    if (t.role != Role::kParameterized || !t.linear || st.inputs.size() < 2) return false;
    for (size_t i = 0; i < 2; ++i)
      if (st.inputs[i] < 0 || weight_.count(st.inputs[i])) return false;
    return true;
  }
  // Steps that pass scores along without mixing positions: scaling, masks, reshapes.
  bool passes(size_t k) const {
    const Role r = traits(k).role;
    return r == Role::kElementwise || r == Role::kShape;
  }
  bool anchor(size_t k) const {
    const rt::Step& st = step(k);
    return st.layer >= 0 && g_.layers()[size_t(st.layer)].anchor_step == k && !data_product(k);
  }

  // The data product that `slot` comes from through passing steps, or -1.
  long product_before(int slot) const {
    for (int depth = 0; depth < kNearSteps; ++depth) {
      auto it = producer_.find(slot);
      if (it == producer_.end()) return -1;
      if (data_product(it->second)) return long(it->second);
      if (!passes(it->second)) return -1;
      slot = step(it->second).inputs[0];
    }
    return -1;
  }
  // The data product that reads `slot` (directly or through passing steps), or -1.
  long product_after(int slot) const {
    for (int depth = 0; depth < kNearSteps; ++depth) {
      auto it = consumers_.find(slot);
      if (it == consumers_.end() || it->second.size() != 1) return -1;
      const size_t k = it->second.front();
      if (data_product(k)) return long(k);
      if (!passes(k) || step(k).outputs.empty()) return -1;
      slot = step(k).outputs[0];
    }
    return -1;
  }
  // The earliest layer among the projections feeding `slot`.
  int first_projection_layer(int slot, int fallback) const {
    int best = fallback;
    std::vector<int> todo{slot};
    std::set<int> seen;
    for (int visited = 0; !todo.empty() && visited < kProjectionSteps; ++visited) {
      const int s = todo.back();
      todo.pop_back();
      auto it = producer_.find(s);
      if (!seen.insert(s).second || it == producer_.end()) continue;
      if (anchor(it->second)) {
        best = std::min(best, step(it->second).layer);
        continue;
      }
      for (int in : step(it->second).inputs)
        if (in >= 0 && !weight_.count(in)) todo.push_back(in);
    }
    return best;
  }
  // The layer of the projection reading `slot` through passing steps, or `fallback`.
  int output_projection_layer(int slot, int fallback) const {
    for (int depth = 0; depth < kProjectionSteps; ++depth) {
      auto it = consumers_.find(slot);
      if (it == consumers_.end() || it->second.empty()) return fallback;
      const size_t k = it->second.front();
      if (anchor(k)) return step(k).layer;
      if (!passes(k) || step(k).outputs.empty()) return fallback;
      slot = step(k).outputs[0];
    }
    return fallback;
  }

 private:
  const rt::ExecutionGraph& g_;
  std::map<int, size_t> producer_;
  std::map<int, std::vector<size_t>> consumers_;
  std::set<int> weight_;
};

}  // namespace

std::vector<AttentionBlock> find_attention_blocks(const rt::ExecutionGraph& g) {
  Flow flow(g);
  std::vector<AttentionBlock> blocks;
  for (size_t k = 0; k < g.steps().size(); ++k) {
    const rt::Step& st = g.steps()[k];
    if (!flow.traits(k).normalizes || st.inputs.empty() || st.outputs.empty() || st.outputs[0] < 0) continue;
    const long scores = flow.product_before(st.inputs[0]);
    const long mixed = flow.product_after(st.outputs[0]);
    if (scores < 0 || mixed < 0) continue;
    AttentionBlock b;
    b.softmax_step = k;
    const rt::Shape& shape = g.value(st.inputs[0]).shape();
    const int64_t rank = int64_t(shape.size());
    int64_t axis = flow.traits(k).normalized_axis;
    if (axis < 0) axis += rank;
    b.positions = axis >= 0 && axis < rank ? shape[size_t(axis)] : 0;
    // At batch size 1 the scores hold heads x queries x keys values.
    if (rank >= 2 && shape[size_t(rank - 1)] * shape[size_t(rank - 2)] > 0)
      b.heads = rt::shape_numel(shape) / (shape[size_t(rank - 1)] * shape[size_t(rank - 2)]);
    const rt::Step& qk = flow.step(size_t(scores));
    const rt::Step& av = flow.step(size_t(mixed));
    int first = st.layer;
    for (int in : qk.inputs) first = flow.first_projection_layer(in, first);
    for (int in : av.inputs) first = flow.first_projection_layer(in, first);
    b.first_layer = first;
    b.last_layer = std::max(st.layer, flow.output_projection_layer(av.outputs[0], av.layer));
    blocks.push_back(b);
  }
  return blocks;
}

}  // namespace dl::cli
