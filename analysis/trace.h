// The trace: everything the analysis reads. Probes in the runtime fill it while the
// model trains; `--trace FILE` saves it and `deeplocalize analyze FILE` reads it back.
// The analysis never sees tensors, only these fixed-size statistics records, so memory
// stays bounded and every rule can be tested with synthetic traces.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "analysis/large_pages.h"

namespace dl::an {

// Statistics of one tensor at one iteration, reduced in a single pass.
struct TensorStats {
  float min = 0, max = 0;
  float mean = 0, std = 0;
  float l2 = 0;          // Euclidean norm
  float mean_abs = 0;
  float zero_frac = 0;   // exact zeros
  float dead_frac = 0;   // fraction of values in the op's dead zone
  float sat_frac = 0;    // fraction of values in the op's saturation bands
  float dead_units = 0;  // fraction of units (features/channels) dead for the whole batch
  uint32_t nan = 0, inf = 0;
  uint32_t count = 0;
  // kCarried: the entry repeats this probe's last full reduction (an earlier record)
  // instead of reducing the tensor at this record. Only parameter probes (weight,
  // param_grad, update) are carried: they can be reduced on a sparser schedule than the
  // other probes (runtime/probes.h). Saved in trace files (docs/trace-format.md).
  static constexpr uint32_t kCarried = 1;
  // kFractionsCarried: count, min, max, mean, std, l2, nan and inf are of this record;
  // mean_abs, zero_frac, dead_frac, sat_frac and dead_units repeat this probe's last full
  // reduction. Only step output and gradient probes: between their full iterations they
  // are reduced to moments and extremes only (runtime/probes.h).
  static constexpr uint32_t kFractionsCarried = 2;
  // kNoMagnitudes: mean_abs and zero_frac were not taken (they read 0): the analysis
  // reads no magnitude or zero count of the probe. Every weight and param_grad probe, and
  // the step output and gradient probes without a dead zone, saturation bands or a mask
  // (so dead_frac, sat_frac and dead_units are 0 by definition) outside the output layer
  // and not a model output: those are reduced to moments and extremes at every iteration
  // (runtime/probes.h) and never carry fractions.
  static constexpr uint32_t kNoMagnitudes = 4;
  uint32_t flags = 0;
  bool finite() const { return nan == 0 && inf == 0; }
  bool carried() const { return (flags & kCarried) != 0; }
  bool fractions_carried() const { return (flags & kFractionsCarried) != 0; }
  bool magnitudes_taken() const { return (flags & kNoMagnitudes) == 0; }
};

enum class ProbeKind : uint8_t {
  kForward,   // a step's output value
  kGradient,  // the gradient of the loss w.r.t. a step's output
  kWeight,    // a parameter's value after the update
  kParamGrad, // a parameter's gradient
  kUpdate,    // the update applied to a parameter; l2 holds ||dw||, mean holds ||dw||/||w||
  kFeature,   // a per-row feature an op computed in its forward loops (OpFeature, below)
  // ---- recurrent and embedding probes (issue 16) -----------------------------------
  // Values an op keeps inside (OpDescription::recurrent, ::embedding), one probe per such
  // op, reduced by the op in its own loops. `node` is the op's node.
  kGates,       // a recurrent op's sigmoid gates (LSTM i, o, f; GRU z, r) at every step and
                // row processed: count, mean, min, max; sat_frac = within kGateMargin of 0 or 1
  kCandidates,  // its candidate values (LSTM c~, GRU h~) from a saturating (tanh-family)
                // activation: sat_frac = within kGateMargin of the bounds; count 0 when its
                // activation does not saturate (Relu)
  kStateFirst,  // its hidden state after the first time step (all rows and directions):
                // l2, count, max |h| (in max), nan, inf
  kStateLast,   // the same after the last time step: growth over time = rms(last) / rms(first)
  kRows,        // an embedding table (a Gather of a trainable initializer) at each update:
                // count = rows; mean = rows this update changed; zero_frac = the fraction
                // of rows it left unchanged; dead_frac = of rows no recorded update has
                // changed since training began (carried between full parameter records)
};
// Distance to a gate's bounds that counts as saturated: sigmoid'(x) < 0.0099 there
// (|x| > ~4.6), 1/25 of its peak.
constexpr double kGateMargin = 0.01;
// Every probe kind, in declaration order (names, parsing).
constexpr ProbeKind kProbeKinds[] = {ProbeKind::kForward,    ProbeKind::kGradient,   ProbeKind::kWeight,
                                     ProbeKind::kParamGrad,  ProbeKind::kUpdate,     ProbeKind::kFeature,
                                     ProbeKind::kGates,
                                     ProbeKind::kCandidates, ProbeKind::kStateFirst, ProbeKind::kStateLast,
                                     ProbeKind::kRows};
const char* probe_kind_name(ProbeKind k);

// What the analysis may know about the op behind a probe (from its traits).
struct OpDescription {
  std::string role;  // "parameterized", "activation", "elementwise", "shape", "other"
  bool linear = false;
  double out_lo = -std::numeric_limits<double>::infinity();
  double out_hi = std::numeric_limits<double>::infinity();
  bool has_dead_zone = false;
  bool saturates = false;
  bool normalizes = false;
  int64_t units = 0;  // size of the normalised / unit axis (last dim for dense, channels for conv)
  double drop_rate = 0;  // fraction of the inputs zeroed at random while training (Dropout)
  int64_t sample_size = 0;  // values per sample of the output (non-batch dims); 0 = unknown
  // ---- recurrent and embedding traits (issue 16) ----
  bool recurrent = false;      // a recurrent op: has kGates .. kStateLast probes
  bool bounded_state = true;   // its hidden state is bounded by its activations (tanh: |h| <= 1)
  bool embedding = false;      // a lookup into a trainable table: has a kRows probe
};

// ---- Op features: attention and LayerNorm (issue 16) -------------------------------
// A quantity an op computes per row of its data in its own forward loops, for rules that
// need more than a tensor's moments. A kFeature probe's TensorStats are the statistics
// of that feature over the rows of one forward pass (count = the rows reported: all, or
// those the feature is defined for, mean/min/max over them); its OpDescription's `units`
// is the row length the feature was computed over.
enum class OpFeature : uint8_t {
  kNone,
  // A normalising op that is not a model output (an attention Softmax): the row's
  // entropy over log(row length): 1 = uniform, 0 = all weight on one position.
  kRowEntropy,
  // A normalising layer (LayerNormalization): the scale of the normalised row before its
  // Scale parameter, sqrt(var / (var + epsilon)): 1 = normalised, 0 = the row is constant
  // or epsilon dominates its variance (the output is then only the bias).
  kNormalizedScale,
};
const char* op_feature_name(OpFeature f);  // "row_entropy", "normalized_scale"; "" for kNone
// The feature named `name` (the inverse of op_feature_name); false when none is.
bool op_feature_from_name(const std::string& name, OpFeature& out);
// ---- end of op features ----------------------------------------------------------

struct Probe {
  ProbeKind kind = ProbeKind::kForward;
  OpFeature feature = OpFeature::kNone;  // kFeature probes only
  int layer = -1;
  int step = -1;           // program step (forward/gradient probes)
  std::string node;        // ONNX node name (forward/gradient), or parameter name
  std::string op_type;
  OpDescription op;
};

struct LayerInfo {
  int index = 0;
  std::vector<std::string> nodes;
  std::vector<std::string> op_types;
  std::vector<std::string> params;
  int64_t param_count = 0;
  // Data flow: the layer whose parameterised node is the only reader of this layer's
  // values (a plain chain, no branch, residual or merge); kNoChain when there is none,
  // kFeedsUnknown in traces written before the field existed.
  static constexpr int kNoChain = -1, kFeedsUnknown = -2;
  int feeds = kFeedsUnknown;
};

// Per-feature and per-target summaries of the training data (static checks).
struct ColumnSummary {
  double min = 0, max = 0, mean = 0, std = 0;
  int64_t nan = 0, inf = 0;
  // Finite values below 0, below -1 and above 1: exactly how many an output bounded to
  // [0, inf), [0, 1] or [-1, 1] cannot reach (the output rules). -1: not counted (traces
  // written before the fields existed).
  int64_t below_zero = -1, below_minus_one = -1, above_one = -1;
};

// An invalid class id in the training data (one-hot or sparse targets): where it is and
// its value. The rule words the problem (not an integer, outside 0..C-1) from these.
struct LabelIssueRecord {
  std::string location;  // "data.csv:12", "data.npz row 12"
  double value = 0;      // the label as read (NaN or infinite possible)
  bool operator==(const LabelIssueRecord& o) const { return location == o.location && value == o.value; }
};

// "data.csv:12: class id 3 is outside 0..2" (ids of `classes` classes), for reports.
std::string label_issue_text(const LabelIssueRecord& issue, int64_t classes);

struct DataSummary {
  std::string source;
  int64_t rows = 0;
  int64_t features = 0;
  std::vector<ColumnSummary> feature_columns;  // at most 4096 (wider inputs are summarised by the first)
  ColumnSummary all_features;
  std::vector<ColumnSummary> target_columns;
  int64_t classes = 0;          // output width when targets are class ids / one-hot
  bool targets_are_classes = false;
  bool targets_integer = false;
  std::vector<LabelIssueRecord> label_issues;  // the first few (label_issue_count is complete)
  int64_t label_issue_count = 0;
};

struct InitializerSummary {
  std::string name;
  int64_t count = 0;
  double min = 0, max = 0, mean = 0, std = 0;
  int64_t nan = 0, inf = 0;
};

struct TraceHeader {
  int version = 1;
  std::string model, data;
  std::map<std::string, std::string> config;  // loss, from_logits, optimizer, learning_rate, epochs, batch_size...
  std::vector<LayerInfo> layers;
  std::vector<Probe> probes;
  std::vector<InitializerSummary> initializers;
  DataSummary data_summary;
  std::string metric_name;  // "accuracy" or "mae"
  bool metric_higher_is_better = true;
  int64_t output_width = 0;
  int64_t batches_per_epoch = 0;
  // What the tool changed or assumed about the model file (rt::adapt_export: an eval-mode
  // or fixed-batch export), one sentence each; shown in the reports.
  std::vector<std::string> notes;
};

struct IterationRecord {
  int64_t iteration = 0;
  int64_t epoch = 0;
  float loss = 0;
  float metric = 0;
  float lr = 0;
};

struct EpochRecord {
  int64_t epoch = 0;
  double loss = 0, metric = 0;
  bool has_validation = false;
  double val_loss = 0, val_metric = 0;
};

// A bounded trace: when the stored iterations reach capacity, every second stored
// iteration is dropped and the recording stride doubles (explicit decimation), so a
// run of any length fits in max_bytes. Loss and metric of every iteration are kept
// separately (8 bytes each), in a history reserved up front (reserve_iterations) and
// counted in the cap: the records get what the reserved history leaves. So bytes()
// stays within max_bytes for runs up to the reserved length; the reservation is at
// most half the cap (2 million iterations per 32 MB), and a longer run adds 8 bytes per
// iteration beyond it.
class Trace {
 public:
  TraceHeader header;

  // Set once the probes are known (header.probes), before recording.
  void set_capacity_bytes(int64_t max_bytes);
  int64_t stride() const { return stride_; }
  // Whether iteration `it` should be recorded (probe interval and decimation stride).
  bool wants(int64_t it) const { return it % (stride_ * probe_every_) == 0; }
  void set_probe_every(int64_t k) { probe_every_ = k < 1 ? 1 : k; }
  int64_t probe_every() const { return probe_every_; }
  // Restores the decimation stride of a saved trace (analysis/trace_io); k < 1 counts as 1.
  void set_stride(int64_t k) { stride_ = k < 1 ? 1 : k; }

  // Starts a record; fill its stats through stats(i, probe) before the next begin().
  TensorStats* begin_record(const IterationRecord& record);
  void add_loss(int64_t iteration, float loss, float metric);
  // Reserves the per-iteration loss/metric history (no allocation per step): n
  // iterations, at most half the capacity (or 2^24 iterations without a cap).
  void reserve_iterations(int64_t n);
  void add_epoch(const EpochRecord& e) { epochs.push_back(e); }

  size_t size() const { return records.size(); }
  const TensorStats& at(size_t record, size_t probe) const { return stats[record * header.probes.size() + probe]; }
  TensorStats& at(size_t record, size_t probe) { return stats[record * header.probes.size() + probe]; }
  int64_t bytes() const;

  std::vector<IterationRecord> records;  // recorded iterations
  std::vector<TensorStats, LargePageAllocator<TensorStats>> stats;  // records.size() x probes.size()
  std::vector<float> loss, metric;       // every iteration
  std::vector<EpochRecord> epochs;
  bool complete = true;                  // false when training was interrupted

 private:
  void decimate();
  void plan_capacity();
  // Maps the pages of `stats`' reserved storage up to `bytes` ahead of their first
  // write, 2 MB at a time in one call (Linux: MADV_POPULATE_WRITE), on 2 MB boundaries:
  // the storage is on huge pages where the system gives them (large_pages.h). A record
  // spans several fresh pages (~1000 probes in shufflenet_v2: 14 pages), and a 4 KB page
  // faulted in by the zeroing costs ~11 us on a virtual machine, which each recorded
  // iteration paid (bench/README.md, run 19 and "h13-pages").
  void populate_stats(size_t bytes);
  const void* populated_base_ = nullptr;  // stats.data() when populated_ was counted
  size_t populated_ = 0;                  // bytes of it known mapped
  bool populate_failed_ = false;          // the kernel does not support it
  int64_t max_bytes_ = 0;    // 0 = unbounded
  int64_t max_records_ = 0;  // 0 = unbounded
  int64_t stride_ = 1;
  int64_t probe_every_ = 1;
};

}  // namespace dl::an
