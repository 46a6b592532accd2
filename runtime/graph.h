// The execution graph: the imperative program built from an imported model. One op
// object per ONNX node, shapes inferred once for the given input shapes, every buffer
// allocated once at construction and reused by every forward/backward call.
//
// Planning also folds what can be computed from shapes and constants alone (Shape ->
// Gather -> Unsqueeze -> Concat chains, Constant nodes): those nodes run once here and
// are not steps of the program.
//
// Defined in graph.cpp (running), graph_plan.cpp (planning) and graph_params.cpp
// (parameters, layers).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "converter/ir.h"
#include "runtime/memory_budget.h"
#include "runtime/op.h"
#include "runtime/tensor.h"

namespace dl::rt {

// Float initializers, shared by the graphs built for different batch sizes of one
// model (the full batch and Keras' last partial batch), so they train one set of weights.
struct ParamStore {
  std::map<std::string, Tensor> values;
  static std::shared_ptr<ParamStore> from_model(const ir::Model& model);
  int64_t bytes() const;
};

// Bytes the initializers of `model` hold (its immutable copy of the weights).
int64_t initializer_bytes(const ir::Model& model);

struct GraphOptions {
  bool training = false;
  // Batch size substituted for symbolic (or unknown) leading input dimensions.
  int64_t batch_size = 1;
  // Full shapes for inputs, overriding the declared ones (optional).
  std::map<std::string, Shape> input_shapes;
  // Inputs whose values are fixed at plan time (e.g. int64 shape or index inputs).
  std::map<std::string, Tensor> known_inputs;
  uint64_t seed = 0;
  // Refuse to plan a graph whose buffers (forward, and gradients when training) would
  // exceed this many bytes (0 = 4 GiB). Ignored when `budget` is set.
  int64_t max_memory_bytes = 0;
  // The run's budget the graph charges its buffers to (and gives back when destroyed),
  // shared with the other graphs and the trainer of one run. Null: a budget of its own.
  std::shared_ptr<MemoryBudget> budget;
  // ONNX allows empty tensors (a 0 dimension); a model to train never has one, so
  // they are rejected unless allowed (the conformance tests use them).
  bool allow_empty_inputs = false;
  // Run a MatMul, the Transpose of its weight and the Add of its bias as one step
  // (runtime/graph_fuse.cpp); off, every
  // node is a step of its own (tests compare the two).
  bool fuse = true;
  // Make the outputs of steps that only re-view their input (Op::views_input: Reshape,
  // Flatten, ...) views of it, and skip those steps (runtime/graph_views.cpp); off, each
  // copies (tests compare the two).
  bool views = true;
};

// A trainable parameter: a float initializer some differentiable input reads.
struct Param {
  std::string name;
  Tensor* value = nullptr;
  Tensor* grad = nullptr;  // owned by the graph that last ran backward
};

// One instruction of the imperative program.
struct Step {
  // Owned by the graph's (shared) model, or by the graph (a fused step's node).
  const ir::Node* node = nullptr;
  std::unique_ptr<Op> op;
  std::vector<int> inputs;   // value slots, -1 for omitted optional inputs
  std::vector<int> outputs;  // value slots, -1 for omitted optional outputs
  FwdCtx fwd;
  BwdCtx bwd;
  bool needs_backward = false;
  bool recurrent = false;  // op traits say recurrent (reports FwdCtx::inner)
  // out[0] is a view of in[0] (Op::views_input): forward() skips the op; and din[0] is
  // one of dout[0] (grad_view): backward() skips it too (runtime/graph_views.cpp).
  bool view = false;
  bool grad_view = false;
  int layer = -1;
  // A node this step also runs after `node` (the bias Add or the output's Transpose fused
  // into a MatMul: then `node` is a copy of the MatMul's node with the bias as input 2, or
  // that node's output), or null.
  const ir::Node* merged = nullptr;
  // Nodes this step runs first (Transposes folded into a MatMul: then `node` is a copy of
  // the MatMul's node reading their inputs), in program order.
  std::vector<const ir::Node*> merged_before;
  size_t order = 0;  // `node`'s index in the model's graph (program order)
};

// User-level layer (contract): a parameterised node plus the nodes that follow it up to
// the next parameterised node. Steps before the first one join the first layer.
struct Layer {
  int index = 0;
  std::vector<size_t> steps;
  std::vector<std::string> nodes;     // ONNX node names, program order
  std::vector<std::string> op_types;  // their op types
  std::vector<std::string> params;  // parameter names read by this layer
  size_t anchor_step = 0;           // the parameterised step (or first step)
  size_t output_step = 0;           // last step of the layer: its output is the layer's
};

// The index of the first layer (program order) that reads parameter `name`, or -1 when
// no layer does.
int layer_of_param(const std::vector<Layer>& layers, const std::string& name);

// Called by the executor after each step writes its output (forward) or its input
// gradients (backward). Observers must not modify tensors.
class Observer {
 public:
  virtual ~Observer() = default;
  virtual void on_forward(size_t step_index, const Step& step) { (void)step_index; (void)step; }
  virtual void on_backward(size_t step_index, const Step& step) { (void)step_index; (void)step; }
  // A sink the step's op may fill with the statistics of its out[0] (forward) or of
  // dout[0] (backward) while it runs (see ValueSink); null when none is wanted.
  virtual ValueSink* forward_sink(size_t step_index) { (void)step_index; return nullptr; }
  virtual ValueSink* backward_sink(size_t step_index, const Step& step) {
    (void)step_index;
    (void)step;
    return nullptr;
  }
  // A sink for the step's in[0] (FwdCtx::in_stats), asked only of steps whose op
  // reports its input (Op::reports_input); null when none is wanted.
  virtual ValueSink* forward_in_sink(size_t step_index) { (void)step_index; return nullptr; }
  // A sink for the step's din[0] (BwdCtx::din_stats), asked only of steps whose op reports
  // its input gradient (Op::reports_input_gradient); null when none is wanted.
  virtual ValueSink* backward_in_sink(size_t step_index) { (void)step_index; return nullptr; }
  // A sink for the step's per-row feature (FwdCtx::feature_stats, Op::feature); null
  // when none is wanted.
  virtual ValueSink* feature_sink(size_t step_index) { (void)step_index; return nullptr; }
  // Where a recurrent op reports its inner values (FwdCtx::inner), asked only of steps
  // whose op traits say recurrent; null when none is wanted.
  virtual InnerStats* inner_sink(size_t step_index) { (void)step_index; return nullptr; }
};

class ExecutionGraph {
 public:
  // Throws ModelError / ShapeError / ResourceError naming the node at fault. The graph
  // keeps `model` alive and reads it, never copies it: graphs of one run share one model
  // and (with `store`) one set of parameters. Without a store, the graph makes its own
  // from the model's float initializers.
  ExecutionGraph(std::shared_ptr<const ir::Model> model, const GraphOptions& options,
                 std::shared_ptr<ParamStore> store = nullptr);
  // A stand-alone graph: copies `model` once (tests, single plans).
  ExecutionGraph(const ir::Model& model, const GraphOptions& options, std::shared_ptr<ParamStore> store = nullptr);
  ~ExecutionGraph();
  ExecutionGraph(const ExecutionGraph&) = delete;
  ExecutionGraph& operator=(const ExecutionGraph&) = delete;

  // Graph inputs that must be fed each step (not initializers, not known at plan time).
  const std::vector<std::string>& input_names() const { return input_names_; }
  const std::vector<std::string>& output_names() const { return output_names_; }
  Tensor& input(size_t i);
  Tensor& input(const std::string& name);
  const Tensor& output(size_t i) const;
  // Gradient of the loss w.r.t. output i: written by the caller before backward().
  Tensor& output_grad(size_t i);

  void forward();
  // Runs the steps in reverse, accumulating into the gradients of every value that leads
  // to a parameter: each gradient starts from zeros (zeroed before its first writer, or
  // written whole by it: Op::assigns_gradient).
  void backward();

  void set_training(bool training);
  bool training() const { return training_; }
  void set_observer(Observer* observer) { observer_ = observer; }

  std::vector<Param>& params() { return params_; }
  const std::vector<Step>& steps() const { return steps_; }
  const std::vector<Layer>& layers() const { return layers_; }
  const Tensor& value(int slot) const { return *slot_ptr_[static_cast<size_t>(slot)]; }  // (a parameter's: the store's)
  const std::string& value_name(int slot) const { return value_names_[static_cast<size_t>(slot)]; }
  int slot_of(const std::string& name) const;  // -1 when unknown
  std::shared_ptr<ParamStore> store() const { return store_; }
  const ir::Model& model() const { return *model_; }
  std::shared_ptr<const ir::Model> shared_model() const { return model_; }
  // Bytes of the graph's own buffers charged to its budget: forward values, plus the
  // gradients once allocated (at construction when training), plus the parameter store
  // when the graph made its own.
  int64_t planned_bytes() const { return planned_bytes_; }
  // Bytes the gradient buffers take (planned, whether allocated yet or not).
  int64_t gradient_bytes() const;
  // Gradient values backward() zeroes per pass: those whose first writer does not write
  // every element itself (Op::assigns_gradient). Plans the zeroing (allocating the
  // gradients) if backward() has not yet.
  int64_t zeroed_values();

 private:
  void plan(const GraphOptions& options);
  void fuse_linear_steps(const std::vector<bool>& is_param_source, bool training);
  void plan_views(const std::vector<bool>& known_at_plan, const std::vector<bool>& is_param_source);
  void build_layers();
  void wire_contexts();
  void allocate_grads();

  std::shared_ptr<const ir::Model> model_;
  std::shared_ptr<ParamStore> store_;
  std::shared_ptr<MemoryBudget> budget_;
  std::vector<Tensor> values_;  // slot storage (parameters live in store_)
  std::vector<Tensor*> slot_ptr_;
  std::vector<std::string> value_names_;
  std::map<std::string, int> slots_;
  std::vector<Tensor> grads_;  // gradient per slot (sized only where needed)
  std::vector<int> grad_view_of_;  // per slot: the slot whose gradient its gradient is a view of, or -1
  bool grad_view(size_t s) const { return s < grad_view_of_.size() && grad_view_of_[s] >= 0; }
  std::vector<bool> needs_grad_;
  std::vector<int> input_slots_, output_slots_;
  std::vector<std::string> input_names_, output_names_;
  std::vector<Step> steps_;
  std::deque<ir::Node> fused_nodes_;  // the nodes of fused steps (Step::node)
  std::vector<Layer> layers_;
  std::vector<Param> params_;
  Observer* observer_ = nullptr;
  bool training_ = false;
  int64_t batch_size_ = 1;  // for messages
  std::mt19937_64 rng_;
  int64_t planned_bytes_ = 0;
  bool grads_allocated_ = false;
  std::vector<bool> is_output_scratch_;
  // backward(): the gradients zeroed before each step's backward (the slots it is the
  // first, in backward order, to add to), and those no step adds to (zeroed first).
  bool zeroing_planned_ = false;
  void plan_zeroing();  // (fills zero_before_, zero_first_ and the steps' BwdCtx::assign, once)
  std::vector<std::vector<int>> zero_before_;
  std::vector<int> zero_first_;
};

}  // namespace dl::rt
