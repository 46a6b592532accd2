// Probes: an executor observer and training listener that reduce every tensor the
// program writes (step outputs, their gradients, parameters, their gradients and
// updates) to a fixed-size statistics record in the trace, right after it is written.
#pragma once

#include <vector>

#include "analysis/trace.h"
#include "runtime/graph.h"
#include "runtime/trainer.h"

namespace dl::rt {

// Reduces a float tensor in one pass. `desc` supplies the dead zone / saturation
// bands; `unit_flags` is scratch of at least shape[1] entries (per-unit dead count).
an::TensorStats reduce_stats(const Tensor& t, const an::OpDescription* desc, std::vector<uint8_t>* unit_flags);

an::OpDescription describe(const OpTraits& traits, const Shape& output_shape);

class ProbeRecorder : public Observer, public TrainListener {
 public:
  // Declares one probe per step output, per step output gradient (where gradients
  // flow) and three per parameter (value, gradient, update), in program order.
  ProbeRecorder(const ExecutionGraph& graph, an::Trace& trace);

  void on_batch_begin(const IterationInfo& info) override;
  void on_forward(size_t step_index, const Step& step) override;
  void on_backward(size_t step_index, const Step& step) override;
  // Recorded iterations ask the optimizer for each parameter's change (the update probe).
  bool wants_update_norms(const IterationInfo& info) override;
  void before_update(const ExecutionGraph& graph, const IterationInfo& info) override;
  void after_update(const ExecutionGraph& graph, const IterationInfo& info) override;
  void on_epoch_end(const EpochSummary& summary) override;

 private:
  an::Trace& trace_;
  std::vector<int> forward_probe_;   // per step, -1 if none
  std::vector<int> gradient_probe_;  // per step, -1 if none
  std::vector<int> weight_probe_;    // per parameter: weight, then param_grad, update at +1, +2
  std::vector<uint8_t> unit_flags_;
  an::TensorStats* current_ = nullptr;  // this iteration's record, or null when not recorded
};

}  // namespace dl::rt
