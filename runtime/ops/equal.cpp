// Equal (since 1, 7, 11, 13): y = (a == b), with numpy broadcasting (legacy `broadcast`/`axis`
// attributes at since-version 1). Output bool; no gradient (predicate.h).
#include "runtime/ops/predicate.h"

namespace dl::rt {
namespace {

std::unique_ptr<Op> make(const ir::Node& node) {
  return make_predicate(node, PredicateInputs::kNumbersOrBool, [](auto a, auto b) { return a == b; });
}

std::vector<OpSample> samples() { return predicate_samples("Equal", PredicateInputs::kNumbersOrBool, true); }

}  // namespace

OpInfo op_info_equal() { return {"Equal", {1, 7, 11, 13}, make, samples}; }

}  // namespace dl::rt
