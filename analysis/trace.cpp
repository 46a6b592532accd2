#include "analysis/trace.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace dl::an {

bool advise_huge_pages(void* p, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  return madvise(p, bytes, MADV_HUGEPAGE) == 0;
#else
  (void)p, (void)bytes;
  return false;
#endif
}

std::string label_issue_text(const LabelIssueRecord& r, int64_t classes) {
  char value[32];
  std::snprintf(value, sizeof value, "%.9g", r.value);
  std::string problem;
  if (std::isnan(r.value))
    problem = "class id nan is not a number";
  else if (!std::isfinite(r.value) || r.value != std::floor(r.value))
    problem = std::string("class id ") + value + " is not an integer";
  else
    problem = std::string("class id ") + value + " is outside 0.." + std::to_string(classes - 1);
  return r.location + ": " + problem;
}

const char* probe_kind_name(ProbeKind k) {
  switch (k) {
    case ProbeKind::kForward: return "forward";
    case ProbeKind::kGradient: return "gradient";
    case ProbeKind::kWeight: return "weight";
    case ProbeKind::kParamGrad: return "param_grad";
    case ProbeKind::kUpdate: return "update";
    case ProbeKind::kFeature: return "feature";
    case ProbeKind::kGates: return "gates";
    case ProbeKind::kCandidates: return "candidates";
    case ProbeKind::kStateFirst: return "state_first";
    case ProbeKind::kStateLast: return "state_last";
    case ProbeKind::kRows: return "rows";
  }
  return "?";
}

const char* op_feature_name(OpFeature f) {
  switch (f) {
    case OpFeature::kNone: return "";
    case OpFeature::kRowEntropy: return "row_entropy";
    case OpFeature::kNormalizedScale: return "normalized_scale";
  }
  return "";
}

bool op_feature_from_name(const std::string& name, OpFeature& out) {
  for (OpFeature f : {OpFeature::kRowEntropy, OpFeature::kNormalizedScale})
    if (name == op_feature_name(f)) return out = f, true;
  return false;
}

void Trace::set_capacity_bytes(int64_t max_bytes) {
  max_bytes_ = max_bytes > 0 ? max_bytes : 0;
  plan_capacity();
}

// The records get the cap minus the reserved loss/metric history (at least 16 records).
void Trace::plan_capacity() {
  if (max_bytes_ == 0) {
    max_records_ = 0;
    return;
  }
  const int64_t per_record = int64_t(sizeof(IterationRecord)) +
                             int64_t(header.probes.size()) * int64_t(sizeof(TensorStats));
  const int64_t history = int64_t((loss.capacity() + metric.capacity()) * sizeof(float));
  max_records_ = std::max<int64_t>(16, std::max<int64_t>(max_bytes_ - history, 0) / std::max<int64_t>(per_record, 1));
  if (records.empty() && static_cast<int64_t>(records.capacity()) > max_records_) {
    // Planned again before recording (the history was reserved after the cap): give
    // back the larger reservation.
    std::vector<IterationRecord>().swap(records);
    decltype(stats)().swap(stats);
  }
  records.reserve(static_cast<size_t>(max_records_));
  stats.reserve(static_cast<size_t>(max_records_) * header.probes.size());
}
TensorStats* Trace::begin_record(const IterationRecord& record) {
  if (max_records_ > 0 && static_cast<int64_t>(records.size()) >= max_records_) decimate();
  records.push_back(record);
  const size_t n = records.size() * header.probes.size();
  if (n <= stats.capacity()) populate_stats(n * sizeof(TensorStats));
  stats.resize(n);
  return stats.data() + (records.size() - 1) * header.probes.size();
}

void Trace::populate_stats(size_t bytes) {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
  if (populate_failed_) return;
  const auto base = reinterpret_cast<uintptr_t>(stats.data());
  if (stats.data() != populated_base_) {  // new storage: what is written is mapped
    populated_base_ = stats.data();
    populated_ = stats.size() * sizeof(TensorStats);
  }
  if (bytes <= populated_) return;
  constexpr uintptr_t kAhead = LargePageAllocator<TensorStats>::kPage;  // a huge page
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t cap_end = base + stats.capacity() * sizeof(TensorStats);
  const uintptr_t from = (base + populated_ + page - 1) / page * page;  // (a page written in is mapped)
  // Up to the huge page boundary past what the record needs and a huge page more.
  const uintptr_t want = (base + std::max(bytes, populated_ + kAhead) + kAhead - 1) / kAhead * kAhead;
  const uintptr_t to = std::min(cap_end / page * page, want);
  if (to > from && madvise(reinterpret_cast<void*>(from), to - from, MADV_POPULATE_WRITE) != 0) {
    populate_failed_ = true;  // (older kernels: EINVAL; the pages fault in as written)
    return;
  }
  populated_ = std::max<size_t>(bytes, to - base);
#else
  (void)bytes;
#endif
}

void Trace::reserve_iterations(int64_t n) {
  // A run of --epochs 1e9 must not reserve terabytes up front: beyond the reservation
  // the history grows as the run does.
  const int64_t limit = max_bytes_ > 0 ? max_bytes_ / 2 / int64_t(2 * sizeof(float)) : int64_t(1) << 24;
  n = std::min(std::max<int64_t>(n, 0), limit);
  loss.reserve(static_cast<size_t>(n));
  metric.reserve(static_cast<size_t>(n));
  plan_capacity();
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
