// The execution graph at run time: construction, gradient buffers, the contexts each
// step reads, accessors, and the forward and backward sweeps. Planning (slots, shapes,
// folding, buffers) is in graph_plan.cpp; parameters and layers in graph_params.cpp.
#include "runtime/graph.h"

#include "converter/errors.h"

namespace dl::rt {

ExecutionGraph::ExecutionGraph(std::shared_ptr<const ir::Model> model, const GraphOptions& options,
                               std::shared_ptr<ParamStore> store)
    : model_(std::move(model)),
      store_(std::move(store)),
      budget_(options.budget ? options.budget : std::make_shared<MemoryBudget>(options.max_memory_bytes)),
      training_(options.training),
      batch_size_(options.batch_size),
      rng_(options.seed) {
  try {
    if (!store_) {  // a store of its own is the graph's to pay for
      int64_t bytes = 0;
      for (const auto& [name, d] : model_->graph.initializers)
        if (d.dtype == ir::DType::kFloat32 || d.dtype == ir::DType::kFloat64) bytes += d.numel() * int64_t(sizeof(float));
      budget_->charge(bytes, model_->path + ": the model's parameters");
      planned_bytes_ += bytes;
      store_ = ParamStore::from_model(*model_);
    }
    plan(options);
  } catch (...) {
    budget_->release(planned_bytes_);  // no destructor runs for a graph that failed to plan
    throw;
  }
}

ExecutionGraph::ExecutionGraph(const ir::Model& model, const GraphOptions& options, std::shared_ptr<ParamStore> store)
    : ExecutionGraph(std::make_shared<const ir::Model>(model), options, std::move(store)) {}

ExecutionGraph::~ExecutionGraph() { budget_->release(planned_bytes_); }

int64_t ExecutionGraph::gradient_bytes() const {
  int64_t bytes = 0;
  for (size_t s = 0; s < slot_ptr_.size(); ++s)
    if (needs_grad_[s] && !grad_view(s)) bytes += slot_ptr_[s]->numel() * int64_t(sizeof(float));
  return bytes;
}

void ExecutionGraph::allocate_grads() {
  if (grads_allocated_) return;
  const int64_t bytes = gradient_bytes();
  budget_->charge(bytes, "the gradient buffers (batch size " + std::to_string(batch_size_) + ")");
  planned_bytes_ += bytes;
  for (size_t s = 0; s < slot_ptr_.size(); ++s)
    if (needs_grad_[s] && !grad_view(s)) grads_[s].reset(DType::kFloat32, slot_ptr_[s]->shape());
    else if (needs_grad_[s]) grads_[s].plan(DType::kFloat32, slot_ptr_[s]->shape());
  // A gradient views the gradient of a later step's output, a higher slot, which may be a
  // view itself: linked from the last slot down, each owner is linked before its views.
  for (size_t s = slot_ptr_.size(); s-- > 0;)
    if (needs_grad_[s] && grad_view(s)) grads_[s].view_of(grads_[size_t(grad_view_of_[s])]);
  grads_allocated_ = true;
}

void ExecutionGraph::wire_contexts() {
  auto grad_or_null = [&](int s) -> Tensor* {
    return s >= 0 && needs_grad_[static_cast<size_t>(s)] ? &grads_[static_cast<size_t>(s)] : nullptr;
  };
  for (Step& st : steps_) {
    st.fwd = FwdCtx{};
    st.bwd = BwdCtx{};
    for (size_t i = 0; i < st.inputs.size(); ++i) {
      int s = st.inputs[i];
      const Tensor* t = s >= 0 ? slot_ptr_[static_cast<size_t>(s)] : nullptr;
      st.fwd.in.push_back(t);
      st.bwd.in.push_back(t);
      st.bwd.din.push_back(st.op->differentiable_input(i) ? grad_or_null(s) : nullptr);
    }
    for (int s : st.outputs) {
      Tensor* t = s >= 0 ? slot_ptr_[static_cast<size_t>(s)] : nullptr;
      st.fwd.out.push_back(t);
      st.bwd.out.push_back(t);
      st.bwd.dout.push_back(grad_or_null(s));
    }
    st.fwd.training = st.bwd.training = training_;
    st.fwd.rng = &rng_;
  }
}

Tensor& ExecutionGraph::input(size_t i) { return *slot_ptr_[static_cast<size_t>(input_slots_.at(i))]; }

Tensor& ExecutionGraph::input(const std::string& name) {
  for (size_t k = 0; k < input_names_.size(); ++k)
    if (input_names_[k] == name) return input(k);
  throw ConfigError("the model has no input named '" + name + "'");
}

const Tensor& ExecutionGraph::output(size_t i) const { return *slot_ptr_[static_cast<size_t>(output_slots_.at(i))]; }

Tensor& ExecutionGraph::output_grad(size_t i) {
  allocate_grads();
  return grads_[static_cast<size_t>(output_slots_.at(i))];
}

int ExecutionGraph::slot_of(const std::string& name) const {
  auto it = slots_.find(name);
  return it == slots_.end() ? -1 : it->second;
}

void ExecutionGraph::set_training(bool training) {
  training_ = training;
  for (Step& st : steps_) st.fwd.training = st.bwd.training = training;
}

void ExecutionGraph::forward() {
  for (size_t k = 0; k < steps_.size(); ++k) {
    Step& st = steps_[k];
    st.fwd.out_stats = observer_ ? observer_->forward_sink(k) : nullptr;
    st.fwd.in_stats = observer_ && st.op->reports_input() ? observer_->forward_in_sink(k) : nullptr;
    st.fwd.feature_stats = observer_ ? observer_->feature_sink(k) : nullptr;
    st.fwd.inner = observer_ && st.recurrent ? observer_->inner_sink(k) : nullptr;
    if (!st.view) st.op->forward(st.fwd);  // (a view's output already holds its input's values)
    if (observer_) observer_->on_forward(k, st);
  }
}

void ExecutionGraph::plan_zeroing() {
  if (zeroing_planned_) return;
  allocate_grads();
  std::vector<bool>& is_output = is_output_scratch_;
  if (is_output.empty()) {
    is_output.assign(slot_ptr_.size(), false);
    for (int s : output_slots_) is_output[static_cast<size_t>(s)] = true;
  }
  zero_before_.assign(steps_.size(), {});
  zero_first_.clear();
  std::vector<int64_t> first_user(grads_.size(), -1);  // highest consuming step
  for (size_t k = 0; k < steps_.size(); ++k)
    if (steps_[k].needs_backward)
      for (int s : steps_[k].inputs)
        if (s >= 0) first_user[static_cast<size_t>(s)] = static_cast<int64_t>(k);
  for (Step& st : steps_) st.bwd.assign = 0;
  for (size_t s = 0; s < grads_.size(); ++s) {
    // (A view's values are zeroed, or written whole, as its owner's.)
    if (!needs_grad_[s] || is_output[s] || grad_view(s)) continue;
    if (first_user[s] < 0) {
      zero_first_.push_back(static_cast<int>(s));
      continue;
    }
    // The first writer assigns instead when its op writes every element of it (and
    // reads the value once: Mul(x, x) adds both halves into one buffer).
    Step& st = steps_[static_cast<size_t>(first_user[s])];
    int reads = 0;
    size_t at = 0;
    for (size_t i = 0; i < st.inputs.size(); ++i)
      if (st.inputs[i] == static_cast<int>(s)) ++reads, at = i;
    if (reads == 1 && at < 32 && st.bwd.din[at] && st.op->assigns_gradient(at)) st.bwd.assign |= 1u << at;
    else zero_before_[static_cast<size_t>(first_user[s])].push_back(static_cast<int>(s));
  }
  zeroing_planned_ = true;
}

int64_t ExecutionGraph::zeroed_values() {
  plan_zeroing();
  int64_t n = 0;
  for (int s : zero_first_) n += grads_[static_cast<size_t>(s)].numel();
  for (const auto& slots : zero_before_)
    for (int s : slots) n += grads_[static_cast<size_t>(s)].numel();
  return n;
}

void ExecutionGraph::backward() {
  // Each gradient is zeroed just before the first step (in backward order) that adds to
  // it, or not at all when that step writes every element (Op::assigns_gradient), not
  // all at the start: a pass over every gradient buffer up front cost a
  // transformer 7% of its step and left the buffers out of cache by the time they were
  // used. The values are the same: no step reads a gradient before that.
  plan_zeroing();
  for (int s : zero_first_) grads_[static_cast<size_t>(s)].zero();
  for (size_t k = steps_.size(); k-- > 0;) {
    Step& st = steps_[k];
    if (!st.needs_backward) continue;
    for (int s : zero_before_[k]) grads_[static_cast<size_t>(s)].zero();
    st.bwd.din_stats = observer_ && st.op->reports_input_gradient() ? observer_->backward_in_sink(k) : nullptr;
    st.bwd.dout_stats = observer_ ? observer_->backward_sink(k, st) : nullptr;
    if (!st.grad_view) st.op->backward(st.bwd);  // (its input gradient is its output's)
    if (observer_) observer_->on_backward(k, st);
  }
}

}  // namespace dl::rt
