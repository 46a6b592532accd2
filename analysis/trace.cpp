#include "analysis/trace.h"

#include <algorithm>

namespace dl::an {

const char* probe_kind_name(ProbeKind k) {
  switch (k) {
    case ProbeKind::kForward: return "forward";
    case ProbeKind::kGradient: return "gradient";
    case ProbeKind::kWeight: return "weight";
    case ProbeKind::kParamGrad: return "param_grad";
    case ProbeKind::kUpdate: return "update";
  }
  return "?";
}

void Trace::set_capacity_bytes(int64_t max_bytes) {
  const int64_t per_record = int64_t(sizeof(IterationRecord)) +
                             int64_t(header.probes.size()) * int64_t(sizeof(TensorStats));
  max_records_ = max_bytes <= 0 ? 0 : std::max<int64_t>(16, max_bytes / std::max<int64_t>(per_record, 1));
  if (max_records_ > 0) {
    records.reserve(static_cast<size_t>(max_records_));
    stats.reserve(static_cast<size_t>(max_records_) * header.probes.size());
  }
}

TensorStats* Trace::begin_record(const IterationRecord& record) {
  if (max_records_ > 0 && static_cast<int64_t>(records.size()) >= max_records_) decimate();
  records.push_back(record);
  stats.resize(records.size() * header.probes.size());
  return stats.data() + (records.size() - 1) * header.probes.size();
}

void Trace::reserve_iterations(int64_t n) {
  loss.reserve(static_cast<size_t>(n));
  metric.reserve(static_cast<size_t>(n));
}

void Trace::add_loss(int64_t iteration, float l, float m) {
  if (static_cast<int64_t>(loss.size()) <= iteration) {
    // Within the reserved capacity this does not allocate.
    loss.resize(static_cast<size_t>(iteration) + 1, 0.0f);
    metric.resize(static_cast<size_t>(iteration) + 1, 0.0f);
  }
  loss[static_cast<size_t>(iteration)] = l;
  metric[static_cast<size_t>(iteration)] = m;
}

// Keeps the records whose iteration is a multiple of the doubled stride; the first
// record (iteration 0) always survives, so the start of training stays visible.
void Trace::decimate() {
  stride_ *= 2;
  const size_t p = header.probes.size();
  size_t kept = 0;
  for (size_t r = 0; r < records.size(); ++r) {
    if (records[r].iteration % (stride_ * probe_every_) != 0) continue;
    if (kept != r) {
      records[kept] = records[r];
      for (size_t k = 0; k < p; ++k) stats[kept * p + k] = stats[r * p + k];
    }
    ++kept;
  }
  records.resize(kept);
  stats.resize(kept * p);
}

int64_t Trace::bytes() const {
  return int64_t(records.capacity() * sizeof(IterationRecord) + stats.capacity() * sizeof(TensorStats) +
                 (loss.capacity() + metric.capacity()) * sizeof(float));
}

}  // namespace dl::an
