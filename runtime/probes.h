// Probes: an executor observer and training listener that reduce every tensor the
// program writes (step outputs, their gradients, parameters, their gradients and
// updates) to a fixed-size statistics record in the trace, right after it is written.
#pragma once

#include <memory>
#include <vector>

#include "analysis/trace.h"
#include "runtime/graph.h"
#include "runtime/trainer.h"

namespace dl::rt {

// Reduces a float tensor in one pass. `desc` supplies the dead zone / saturation
// bands; `unit_flags` is scratch of at least shape[1] entries (per-unit dead count).
an::TensorStats reduce_stats(const Tensor& t, const an::OpDescription* desc, std::vector<uint8_t>* unit_flags);

an::OpDescription describe(const OpTraits& traits, const Shape& output_shape);

// Each tensor is reduced right after the step that writes it (on the training thread:
// running the reductions on a helper thread was measured slower, see bench/README.md).
//
// Parameters are reduced while the optimizer updates them (Optimizer::UpdateObserver):
// the change (update probe) from each chunk's old and new values, weight and gradient
// statistics from the same memory right after, so no copy of the weights is kept.
class ProbeRecorder : public Observer, public TrainListener, public Optimizer::UpdateObserver {
 public:
  // Declares one probe per step output, per step output gradient (where gradients
  // flow) and three per parameter (value, gradient, update), in program order.
  ProbeRecorder(const ExecutionGraph& graph, an::Trace& trace);
  ~ProbeRecorder() override;

  void on_batch_begin(const IterationInfo& info) override;
  void on_forward(size_t step_index, const Step& step) override;
  void on_backward(size_t step_index, const Step& step) override;
  Optimizer::UpdateObserver* update_observer(const IterationInfo& info) override;
  void on_chunk(size_t param, int64_t offset, const float* grad, const float* before, const float* after,
                int64_t n) override;
  void after_update(const ExecutionGraph& graph, const IterationInfo& info) override;
  void on_epoch_end(const EpochSummary& summary) override;

 private:
  struct TensorJob;
  struct ParamJob;
  struct ParamSums;
  static void run_tensor_job(void* self, int64_t probe);
  static void run_param_job(void* self, int64_t job);
  void reduce_tensor(int probe, const Tensor* t, bool with_bands);

  an::Trace& trace_;
  std::vector<int> forward_probe_;   // per step, -1 if none
  std::vector<int> gradient_probe_;  // per step, -1 if none
  std::vector<int> weight_probe_;    // per parameter: weight, then param_grad, update at +1, +2
  std::vector<int64_t> param_numel_;
  std::vector<int64_t> first_job_;   // per parameter: index of its first ParamJob
  std::unique_ptr<TensorJob[]> tensor_jobs_;  // per probe
  std::unique_ptr<ParamJob[]> param_jobs_;    // per parameter piece
  std::unique_ptr<ParamSums[]> param_sums_;   // per parameter, this iteration
  an::TensorStats* current_ = nullptr;  // this iteration's record, or null when not recorded
};

}  // namespace dl::rt
