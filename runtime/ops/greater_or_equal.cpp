// GreaterOrEqual (since 12, 16): y = (a >= b), with numpy broadcasting. Output bool; no gradient (predicate.h).
#include "runtime/ops/predicate.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) {
  return make_predicate(node, PredicateInputs::kNumbers, [](auto a, auto b) { return a >= b; });
}

std::vector<OpSample> samples() { return predicate_samples("GreaterOrEqual", PredicateInputs::kNumbers, false); }

}  // namespace

OpInfo op_info_greater_or_equal() { return {"GreaterOrEqual", {12, 16}, make, samples}; }

}  // namespace dl::rt
