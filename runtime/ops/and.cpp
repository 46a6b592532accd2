// And (since 1, 7): y = a and b, with numpy broadcasting (legacy `broadcast`/`axis`
// attributes at since-version 1). Output bool; no gradient (predicate.h).
#include "runtime/ops/predicate.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) {
  return make_predicate(node, PredicateInputs::kBool, [](auto a, auto b) { return a != 0 && b != 0; });
}

std::vector<OpSample> samples() { return predicate_samples("And", PredicateInputs::kBool, true); }

}  // namespace

OpInfo op_info_and() { return {"And", {1, 7}, make, samples}; }

}  // namespace dl::rt
