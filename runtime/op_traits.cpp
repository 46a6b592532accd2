// describe (runtime/op.h): an op's traits as the analysis reads them.
#include <cmath>

#include "runtime/op.h"

namespace dl::rt {

an::OpDescription describe(const OpTraits& t, const Shape& shape) {
  an::OpDescription d;
  switch (t.role) {
    case OpTraits::Role::kParameterized: d.role = "parameterized"; break;
    case OpTraits::Role::kActivation: d.role = "activation"; break;
    case OpTraits::Role::kElementwise: d.role = "elementwise"; break;
    case OpTraits::Role::kShape: d.role = "shape"; break;
    default: d.role = "other"; break;
  }
  d.linear = t.linear;
  d.out_lo = t.out_lo;
  d.out_hi = t.out_hi;
  d.has_dead_zone = t.has_dead_zone;
  d.saturates = t.saturates;
  d.normalizes = t.normalizes;
  d.drop_rate = t.drop_rate;
  d.sample_size = 1;
  for (size_t k = 1; k < shape.size(); ++k) d.sample_size *= shape[k];
  if (t.normalizes && !shape.empty()) {
    int64_t axis = t.normalized_axis < 0 ? t.normalized_axis + int64_t(shape.size()) : t.normalized_axis;
    d.units = axis >= 0 && axis < int64_t(shape.size()) ? shape[size_t(axis)] : 0;
  } else {
    d.units = shape.size() >= 2 ? shape[1] : (shape.empty() ? 1 : shape[0]);
  }
  return d;
}

}  // namespace dl::rt
