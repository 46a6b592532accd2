// InferCtx::reserve (runtime/op.h): the one check an op makes before allocating a
// plan-time buffer whose size comes from the model rather than from a planned tensor.
#include <cmath>

#include "converter/errors.h"
#include "runtime/data/io.h"
#include "runtime/op.h"

namespace dl::rt {

void InferCtx::reserve(const std::string& where, double bytes, const std::string& what, double also) const {
  const double needed = bytes + also;
  if (!(needed <= double(max_bytes)) || !std::isfinite(needed))
    throw ResourceError(where + ": " + what + " would need " + data::human_bytes(needed) +
                        ", over what the memory cap leaves (" + data::human_bytes(double(max_bytes)) +
                        "; raise it with --max-memory)");
  charge(static_cast<int64_t>(bytes), what);
}

}  // namespace dl::rt
