// Probes: an executor observer and training listener that reduce every tensor the
// program writes (step outputs, their gradients, parameters, their gradients and
// updates) to a fixed-size statistics record in the trace, right after it is written.
// The reductions themselves are in runtime/probe_stats.h; the recorder's step side is in
// runtime/probes.cpp and probes_reduce.cpp, its parameter side in runtime/probes_params.cpp.
#pragma once

#include <cmath>
#include <memory>
#include <vector>

#include "analysis/trace.h"
#include "runtime/graph.h"
#include "runtime/probe_stats.h"
#include "runtime/trainer.h"

namespace dl::rt {

// Each tensor is reduced right after the step that writes it (on the training thread:
// running the reductions on a helper thread was measured slower, see bench/README.md).
//
// Step outputs and their gradients are reduced at every recorded iteration: to count,
// mean, std, L2 norm, min, max and the NaN/Inf counts always. The rest (mean |x|, the
// zero, dead-zone and saturation fractions and the dead units) needs more work per value
// and a pass the ops cannot fold into their loops, so when the step outputs and
// gradients total over kAlwaysFull values, it is reduced only at "full step" iterations,
// every kStepFullEvery-th recorded one, and the records in between ("light") carry each
// step probe's last fractions, flagged an::TensorStats::kFractionsCarried. Also full:
//   - the first kFirstFull recorded iterations and the last iteration of each epoch;
//   - a light tensor holding NaN/Inf (counted exactly) or whose root mean square moved
//     by more than kDrift x (either way), or to or from exactly 0, since its last full
//     reduction: that tensor is reduced again in full (it is still in memory) and so is
//     every later tensor of the iteration.
// The rules read carried fractions as they are: a partial change of a fraction shows
// up to kStepFullEvery - 1 records late (a layer that dies outright has L2 0 and is
// reduced in full at once).
//
// A plain step probe (plain_: no dead zone, no saturation bands, no mask; every gradient
// probe; not of the output layer and not writing a model output) has nothing more to
// take at a full iteration than at a light one: the analysis reads mean |x| and the exact
// zeros only of the output layer's tensors (loss_activation_mismatch: the zeros of the
// output gradient), and the band fractions of a tensor without bands are 0. Its every
// record holds the moments and extremes, flagged an::TensorStats::kNoMagnitudes, taken
// by the ops' fused light paths (and deferred to the next step, or from a copy's input,
// or merged from a joining step's inputs: Concat, join_sums) at full iterations too; its
// drift test and NaN/Inf counting are the others'. At full iterations this leaves the
// passes the fractions cost to the tensors that have them: counting |x| and the zeros had
// taken two thirds again of a light pass's work on every value (BM_SinkChunk) and a pass
// of the probe's own over each tensor the next step would otherwise have reported.
//
// At light iterations most of LeNet-5's 1.9M step values per iteration are reduced in
// the registers of the loops that compute or read them (ValueSink::light, add_sums):
// Relu's forward and backward loops (its output, its input, its output gradient) and
// Conv's bias-gradient sums over dY. Reading a tensor back costs 5 to 10x more
// (BM_ReluChunks, bench/micro_bench.cpp; bench/README.md, run 8). The output of a step
// that an op reporting its input reads next (Op::reports_input: an activation with
// vector loops, Conv -> Relu, Gemm -> Relu; a binary op; Softmax; Dropout, a fused
// MatMul + bias -> Dropout) is therefore not reduced when written but by that op when it
// is the very next step (FwdCtx::in_stats): the probe waits for it, and reduces the
// tensor itself if it does not report it. A step that reports its own output for less (Op::reports_output:
// BatchNormalization, from its batch statistics) keeps it.
//
// Parameters (weight, param_grad and update probes) can hold most of the values a step
// would reduce (MLP 784-256-128-10, batch 64: 3 x 235k against ~100k step outputs and
// gradients; LeNet-5: 3 x 62k against 1.9M). Where they would add more than a quarter
// to the cost of the step statistics (and total over kAlwaysFull values), they are
// reduced only at "full" iterations, every full_every()-th recorded one (a power of two
// up to kFullEvery, from that cost ratio, and no more often than the full step
// statistics), and the records in between carry each parameter probe's last
// statistics, flagged an::TensorStats::kCarried. Also full:
//   - the first kFirstFull recorded iterations;
//   - the last iteration of each epoch;
//   - any iteration with a non-finite loss or probe value;
//   - any iteration where a step output's or gradient's root mean square moved by more
//     than kDrift x (either way), or to or from exactly 0, since the last full iteration:
//     a run that changes fast (diverging, dying) is recorded in full while it does.
// Full iterations are chosen by iteration number (multiples of full_every() recording
// periods), so the trace's decimation keeps them every full_every()-th record.
// When a step output turns NaN/Inf in the forward pass and the previous iteration's
// record carried its parameter statistics, that iteration's new weights and gradients
// (still in memory until this iteration's backward pass and update) are checked, and if
// they hold NaN/Inf they are reduced into that record after all: the record of the
// update that broke the weights shows it (its change counted NaN/Inf where the new
// weights are; the updates of weights still finite stay carried).
//
// Ops that read or write a step tensor anyway may reduce it on the way (FwdCtx::out_stats,
// BwdCtx::dout_stats: Conv, MaxPool and the elementwise activations do, in their parallel
// parts; the binary arithmetic ops, Softmax and Dropout chunk by chunk, ChunkReporter in
// runtime/sink_chunks.h); the probe then takes their sums instead of a pass of its own.
// In the backward pass the gradient a step writes for the step before it, when it alone
// reads that step's output, is the other step's output gradient: BatchNormalization
// reports it (BwdCtx::din_stats, from each channel's rows while in L1) where the Conv
// before it, whose products read their dY in no loop of theirs, would read it back from
// memory (mobilenet_v2: 4.4% -> 4.0% probe overhead, bench/README.md run 45); Relu and
// Clip from their loops' registers (BatchNormalization's on small maps); Softmax from each
// row while in L1, a product or quotient (Mul, Div) chunk by chunk (attention's scores,
// whose MatMul reads its dY in no loop of its own, under a causal mask or not). That gradient
// is final once the reading step is done: its record is made then (on_backward), before
// the steps in between can take the one sink for theirs (two Relus in a row: both
// report). A producer that sums its dY within its own work anyway
// (Op::sums_output_gradient) is left to do so.
// The output of an op that copies its input (Op::copies_input: Reshape, Transpose, ...)
// takes the sums of that input's reduction in the same iteration when they serve its
// own: any sums with the same mask for a reduction to moments and extremes (light, or a
// plain probe's), sums with the same dead zone and saturation bands for a full one: the
// same values, so the same moments, extremes and counts (up to the rounding of the order
// of the sums where an op reported them, or a reordering copy). A step the graph runs as
// a view of its input (Step::view, runtime/graph_views.cpp) is such a copy whose op never
// runs: it reports nothing, and does not take its input's report (in_probe_). Nor does
// its backward, where its input gradient views its output gradient: that gradient's
// record waits for the producer's, whose backward may report the same values (grad_wait_).
// The other way round, a step output no op reported as it ran, read only by one step that
// copies it or by Slices that partition it (Op::selects_box: attention's in-projection
// read as queries, keys and values), waits for their records and takes their sums,
// merged in program order (runtime/probes_wait.cpp; a pass of its own when they do not
// serve, at the latest when the forward pass ends): a chain of copies ends at the step
// that reports its last output (a Gemm, Reshape, Transpose, then a Dropout).
//
// At full iterations parameters are reduced while the optimizer updates them
// (Optimizer::UpdateObserver): by the rule's own loop from the registers that hold each
// chunk's gradient, old and new values (chunk_sums), or, for a clipped gradient or an
// embedding table's changed rows, from each chunk while it is in L1 (on_chunk); so no
// copy of the weights is kept; into sums per fixed part of the parameter (the
// optimizer's threads update parts at once), merged in part order. Other iterations
// attach no observer: the optimizer runs its plain loop.
class ProbeRecorder : public Observer, public TrainListener, public Optimizer::UpdateObserver {
 public:
  static constexpr int64_t kFullEvery = 16;         // the sparsest schedule
  static constexpr int64_t kStepFullEvery = 8;      // step outputs and gradients
  static constexpr int64_t kFirstFull = 8;
  // Up to this many parameter values (3 per parameter), or step output and gradient
  // values: all their statistics at every iteration.
  static constexpr int64_t kAlwaysFull = 1 << 16;
  static constexpr double kDrift = 2.0;
  // The schedule for step_values output/gradient values and param_values parameter
  // values (weights, gradients and updates) per iteration.
  static int64_t full_every_for(int64_t step_values, int64_t param_values);

  // Declares one probe per step output, per step output gradient (where gradients
  // flow) and three per parameter (value, gradient, update), in program order.
  ProbeRecorder(const ExecutionGraph& graph, an::Trace& trace);
  ~ProbeRecorder() override;

  void on_batch_begin(const IterationInfo& info) override;
  void on_forward(size_t step_index, const Step& step) override;
  void on_backward(size_t step_index, const Step& step) override;
  void before_update(const ExecutionGraph& graph, const IterationInfo& info) override;
  Optimizer::UpdateObserver* update_observer(const IterationInfo& info) override;
  void on_chunk(size_t param, int64_t part, int64_t offset, const float* grad, const float* before,
                const float* after, int64_t n) override;
  stats::ParamSums* chunk_sums(size_t param, int64_t part) override;
  bool concurrent_parts(size_t param) const override;
  void after_update(const ExecutionGraph& graph, const IterationInfo& info) override;
  ValueSink* forward_sink(size_t step_index) override;
  ValueSink* backward_sink(size_t step_index, const Step& step) override;
  ValueSink* forward_in_sink(size_t step_index) override;
  ValueSink* backward_in_sink(size_t step_index) override;
  ValueSink* feature_sink(size_t step_index) override;
  InnerStats* inner_sink(size_t step_index) override;
  void on_epoch_end(const EpochSummary& summary) override;

  int64_t full_every() const { return full_every_; }
  int64_t step_full_every() const { return step_full_every_; }
  int64_t step_values() const { return step_values_; }  // step output and gradient values per iteration
  // Whether this iteration reduces (or, by a drift or NaN, came to reduce) step probes in full.
  bool step_full() const { return step_full_; }
  // Whether ops may compute step statistics in their own pass (ValueSink, the default);
  // off, every step tensor is reduced in a pass of the probes' own (for benchmarks).
  void set_fused(bool fused) { fused_ = fused; }
  // How many times a step probe's tensor was reduced by a pass of the probes' own (not
  // from an op's report or another probe's sums) in this recorder's run.
  int64_t own_passes(int probe) const {
    const int slot = step_slot_[size_t(probe)];
    return slot < 0 ? 0 : own_passes_[size_t(slot)];
  }

 private:
  struct ParamState;
  bool parts_dirty_ = false;  // a full update began and after_update has not merged its parts
  // The root mean square (the drift tests compare it rather than the L2 norm, which grows
  // with the batch, and an epoch's last batch may be smaller), and whether it moved by
  // more than kDrift x either way, or to or from 0.
  // (These and the next three are asked several times per probe and iteration: inline.)
  static double rms(const an::TensorStats& s) {
    return s.count > 0 ? double(s.l2) / std::sqrt(double(s.count)) : 0.0;
  }
  static bool moved(double now, double then) {
    return (now == 0) != (then == 0) || now > kDrift * then || then > kDrift * now;
  }
  bool full_iteration(const IterationInfo& info) const;
  bool light(int probe) const {  // a light iteration for this step probe (its fractions carried)
    const int slot = step_slot_[size_t(probe)];
    return !step_full_ && slot >= 0 && step_has_full_[size_t(slot)];
  }
  // Reduce this step probe to moments and extremes only: at light iterations, and at
  // every iteration for a plain probe (plain_).
  bool moments_only(int probe) const {
    const int slot = step_slot_[size_t(probe)];
    return slot >= 0 && (plain_[size_t(slot)] || light(probe));
  }
  // Per step probe: plain, the moments and extremes being all its full reduction takes
  // (no bands; mean |x| and the zeros not taken, an::TensorStats::kNoMagnitudes).
  std::vector<uint8_t> plain_;
  void declare_plain(const ExecutionGraph& graph);
  stats::Bands bands(int probe, bool with_bands) const {
    stats::Bands b = with_bands ? probe_bands_[size_t(probe)] : stats::Bands{};
    b.light = moments_only(probe);
    return b;
  }
  std::vector<stats::Bands> probe_bands_;  // per probe: Bands::of its op description
  // Reduces t into this record's entry of `probe`, from `sink`'s sums when an op
  // reported the whole tensor there.
  void reduce_tensor(int probe, const Tensor* t, bool with_bands, const SinkSums* sink);
  // The same from sums `given` of all of t under bands(probe, with_bands), or from a pass
  // of its own when null; keeps the sums for copies (copy_sums).
  void reduce_sums(int probe, const Tensor* t, bool with_bands, const stats::Sums* given);
  void reduce_sums_once(int probe, const Tensor* t, bool with_bands, const stats::Sums* given);
  // Whether `sink` holds an op's report of all n values of `probe`'s tensor that serves
  // this iteration's reduction of it.
  bool sink_serves(const SinkSums* sink, int64_t n, int probe) const {
    return sink && n > 0 && sink->reported() == n && sink->light() == moments_only(probe);
  }
  // ---- copies (Op::copies_input) ----
  void declare_copies(const ExecutionGraph& graph);
  // The sums this iteration's reduction of step_index's input took, when they do for its
  // forward probe (same_sums in probes_reduce.cpp), else null; and of the output gradient of the step whose
  // backward pass alone gave step_index's output gradient, passed on unchanged (or of the
  // Slices that partition its output: parts_grad_sums).
  const stats::Sums* copy_sums(size_t step_index, const Step& step) const;
  const stats::Sums* copy_grad_sums(size_t step_index, const Tensor& grad) const;
  // The sums probe `from` kept this iteration when they do for `probe`, else null.
  const stats::Sums* kept_sums(int from, int probe, bool with_bands, int64_t count) const;
  // The sums of all of a joining step's inputs (Op::joins_inputs), each input's kept this
  // iteration, merged in input order into join_merged_, when they do for its forward probe
  // and cover its output (`step` null: the output's count not checked, forward_sink asks
  // before the op runs), else null.
  const stats::Sums* join_sums(size_t step_index, const Step* step);
  std::vector<std::vector<int>> join_sources_;  // per joining step: the steps writing its inputs (else empty)
  stats::Sums join_merged_;
  std::vector<int> copy_source_;          // per step: the step writing its in[0], with a forward probe, or -1
  std::vector<int> grad_copy_;            // per step: the step that alone reads its output, or -1
  std::vector<size_t> grad_copy_in_;      // the input of that step it is
  std::vector<const Op*> grad_copy_op_;   // and its op
  std::vector<stats::Sums> slot_sums_;    // per step probe: the sums of its last reduction
  std::vector<int64_t> slot_count_;       // ... over this many values
  std::vector<stats::Bands> slot_bands_;  // under these bands
  std::vector<int64_t> slot_iteration_;   // at this iteration (-1: none)
  const SinkSums* take_sink(int probe);  // sink_ if it was set for `probe`
  void prefetch_probe(int probe) const;  // warms the cache lines a probe's reduction touches
  void reduce_pending();
  void reduce_previous_params();
  void declare_features(const ExecutionGraph& graph);
  // Marks the forward probes of masked logits and masks (stats::Bands::masked): step
  // outputs that may hold a mask's -inf (a constant holding -inf, carried by element-wise
  // steps, selections like Where and moves like Reshape or Expand) and that reach only
  // softmaxes (Op traits: normalizes), through such steps whose outputs do the same.
  void declare_masked(const ExecutionGraph& graph);
  void reduce_feature(size_t step_index);

  an::Trace& trace_;
  std::vector<int> forward_probe_;   // per step, -1 if none
  std::vector<int> gradient_probe_;  // per step, -1 if none
  std::vector<int> weight_probe_;    // per parameter: weight, then param_grad, update at +1, +2
  std::vector<int> step_probes_;     // every forward and gradient probe
  std::vector<float> step_rms_;      // per step probe: its root mean square at the last full iteration
  std::vector<int> step_slot_;       // per probe: its index in step_probes_, or -1
  std::vector<an::TensorStats> step_last_;  // per step probe: its last full reduction
  std::vector<float> step_full_rms_;        // its root mean square then
  std::vector<uint8_t> step_has_full_;      // whether it had one
  std::vector<int64_t> own_passes_;         // per step probe: reductions by a pass of its own (own_passes)
  std::vector<int64_t> param_numel_;
  int64_t full_every_ = 1;
  int64_t step_full_every_ = 1;
  int64_t step_values_ = 0;
  std::unique_ptr<ParamState[]> params_;  // per parameter
  // Per parameter: its weight, gradient and update records at the last full update, which
  // light iterations carry: 3 each, side by side (the carry streams them; in ParamState,
  // a line or two apart every 1.5 KB, they cost shufflenet_v2 ~30 us a light iteration
  // in misses: its ~170 parameters' states leave the cache during each step).
  std::vector<an::TensorStats> param_last_;
  std::vector<uint8_t> unit_flags_;       // dead-unit scratch, reserved for the widest unit axis
  SinkSums sink_;                         // what the running op reports of the tensor of sink_probe_
  int sink_probe_ = -1;
  std::vector<int> in_probe_;             // per step: the forward probe of its in[0] it may report, or -1
  std::vector<uint8_t> deferred_;         // per step: a later step may report its output
  int pending_probe_ = -1;                // a light output deferred to the step that reads it
  const Tensor* pending_tensor_ = nullptr;
  SinkSums in_sink_;                      // what that step reports of it
  int in_sink_probe_ = -1;
  // Backward: a step whose op reports its input gradient (Op::reports_input_gradient:
  // BatchNormalization, Relu, Clip, Softmax, Mul, Div) and alone reads its in[0] reports that value's
  // gradient, the producer's output gradient, as it writes it; the producer's gradient
  // record is made from those sums as soon as the reporting step is done (on_backward),
  // and the producer's own backward pass then gets no sink (a Conv's products read dY,
  // no loop of theirs could sum it), unless the producer sums it anyway at less cost
  // (Op::sums_output_gradient: a Conv's bias gradient, BatchNormalization's long channels).
  std::vector<int> din_step_;             // per step: the step whose output gradient it may report, or -1
  std::vector<int64_t> din_done_;         // per step: the iteration its gradient record was made early
                                          // (INT64_MIN: none; iteration_ starts at -1)
  SinkSums din_sink_;
  int din_sink_probe_ = -1;               // the probe din_sink_ is being filled for, or -1
  size_t din_sink_step_ = 0;              // the step filling it
  bool din_recorded(size_t step_index) const { return din_done_[step_index] == iteration_; }
  // Backward: a step run as a view whose input gradient is its output gradient's storage
  // (Step::grad_view) runs no op, so nothing reports its gradient. When it alone reads the
  // output of the step that wrote its input (whose output gradient holds the same values),
  // its gradient record waits for that step's and takes its sums: that step's backward may
  // report them in its own loop (Relu, a MatMul's bias gradient, a Slice's scatter) where
  // this record would take a pass of its own (the transformers' Dropouts and per-head
  // Reshapes: bench/README.md, run 63).
  std::vector<int> grad_wait_;  // per step: the step its gradient record waits for, or -1
  struct GradWait {
    int probe;             // the waiting gradient probe
    const Tensor* tensor;  // its tensor
    size_t for_step;       // the step whose gradient record it takes
  };
  std::vector<GradWait> grad_waiting_;
  void reduce_gradient(size_t step_index, const Step& step);
  // Reduces the records waiting for a step at or after `from` (every one when `all`) from
  // that step's record's sums, or in a pass of their own where it kept none that serve
  // (its backward did not come this iteration).
  void resolve_grad_waits(size_t from, bool all);
  // ---- waits (runtime/probes_wait.cpp) ----
  // A step output no op reported, read only by one step that copies it or by Slices that
  // partition it, waits for their records and takes their sums instead of a pass of its own.
  void declare_waits(const ExecutionGraph& graph);
  bool wait(size_t step_index, const Step& step);  // starts the step's wait, when it may
  void resolve(int probe);  // after `probe`'s reduction: ends the wait on it, at its last reader
  void flush_waits();       // the outputs still waiting: a pass of their own each
  std::vector<std::vector<int>> wait_on_;  // per step: the forward probes of the readers it may wait on
  std::vector<const Op*> wait_copy_op_;    // per step: its one reader's op when that is a copy, else null
  const std::vector<Step>* planned_steps_ = nullptr;  // the steps of the graph the waits were planned in
  std::vector<int64_t> waiting_;           // per step: the iteration it waits at (INT64_MIN: none)
  std::vector<int> wait_left_;             // per step: its readers not reduced yet
  std::vector<const Tensor*> wait_tensor_; // per step: its output, while it waits
  std::vector<int> waiter_;                // per probe: the step that may wait on its record, or -1
  std::vector<size_t> waits_;              // the steps that waited this iteration
  // Backward: the gradient probes of the Slices that partition a step's output (its output
  // gradient holds their output gradients' values), per step, or empty.
  std::vector<std::vector<int>> grad_parts_;
  const stats::Sums* parts_grad_sums(size_t step_index, const Tensor& grad) const;
  mutable stats::Sums grad_merged_;        // what parts_grad_sums returned last
  bool fused_ = true;
  // Op features (an::OpFeature): one kFeature probe per step whose op reports one and
  // whose output is not a model output (the loss rules judge those), reduced at every
  // recorded iteration from what the op reports (a value per row: far fewer than its
  // output's values).
  std::vector<int> feature_probe_;        // per step, -1 if none
  SinkSums feature_sink_;
  int feature_sink_probe_ = -1;
  // ---- recurrent and embedding probes (issue 16) ----
  // Per step: the first of a recurrent op's kGates, kCandidates, kStateFirst, kStateLast
  // probes (consecutive), or -1; what the op reports into inner_.
  std::vector<int> inner_probe_;
  InnerStats inner_;
  // Per parameter: an embedding table's kRows probe (-1 if none), its row width, and which
  // rows this update and any recorded update changed.
  struct RowState {
    int probe = -1;
    int64_t width = 0;
    std::vector<uint8_t> changed, ever;
    an::TensorStats last;
  };
  std::vector<RowState> rows_;
  void declare_inner_probes(const ExecutionGraph& graph);
  void record_inner(size_t step_index);
  void record_rows(size_t param, bool full);
  an::TensorStats* current_ = nullptr;    // this iteration's record, or null when not recorded
  ExecutionGraph* last_graph_ = nullptr;  // the graph of the last recorded update
  int64_t iteration_ = -1;
  int64_t period_ = 1;                    // the recording period this iteration was admitted under
  int64_t last_recorded_ = -1;            // iteration of the last recorded update
  bool last_carried_ = false;             // whether that record carried its parameter statistics
  bool full_ = false;                     // this iteration reduces parameters
  bool step_full_ = true;                 // this iteration reduces step probes in full
  bool have_full_ = false;                // a full iteration has been recorded
  bool nonfinite_ = false;                // a probe of this iteration held NaN/Inf
};

}  // namespace dl::rt
