// The op interface of the execution graph. Everything about one ONNX op lives in
// runtime/ops/<op>.cpp (attributes, shape inference, forward, backward, traits, sample
// cases) and is registered by one line in runtime/ops/op_list.def.
#pragma once

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "analysis/trace.h"
#include "converter/ir.h"
#include "runtime/tensor.h"
#include "runtime/value_sums.h"

namespace dl::rt {

// What the analysis needs to know about an op without knowing its name. Rules ask
// traits, never op types.
struct OpTraits {
  enum class Role {
    kOther,          // e.g. Concat, Gather: kept in the current layer
    kParameterized,  // starts a layer when it reads a trainable initializer (Gemm, Conv, ...)
    kElementwise,    // Add, Mul, ... : follows the layer it is in
    kActivation,     // non-linearity: Relu, Sigmoid, Softmax, ...
    kShape,          // moves data without changing values: Reshape, Flatten, Transpose, ...
  };
  Role role = Role::kOther;
  bool linear = false;  // output is affine in the data input (Gemm, Conv, MatMul, Add, ...)
  // Range of the output; infinite when unbounded (Sigmoid [0,1], Relu [0,inf)).
  double out_lo = -std::numeric_limits<double>::infinity();
  double out_hi = std::numeric_limits<double>::infinity();
  // Dead zone: outputs equal to dead_value have zero gradient (Relu: 0).
  bool has_dead_zone = false;
  double dead_value = 0.0;
  // Saturation: outputs within sat_margin of out_lo/out_hi have vanishing gradient.
  bool saturates = false;
  double sat_margin = 0.0;
  // Normalises along an axis so the outputs sum to 1 (Softmax); normalized_axis as given.
  bool normalizes = false;
  int64_t normalized_axis = -1;
  // While training, zeroes this fraction of its inputs at random (Dropout's ratio).
  double drop_rate = 0.0;
  // Outputs hold values of the inputs, moved, selected or repeated, none computed
  // (Reshape, Transpose, Slice, Concat, Split, ...): a parameter read through such ops
  // is still that parameter (torch exports an LSTM's weights as Concat(Slice(W), ...)).
  bool rearranges = false;
  // Each output value is one of its float inputs' values as it is: picked per element
  // by a condition (Where: masked_fill's export) or unchanged (a float -> float Cast).
  bool passes_values = false;
  // ---- recurrent and embedding traits (issue 16) ----
  // A recurrent op (LSTM, GRU, RNN): reports its gates and hidden states (FwdCtx::inner).
  bool recurrent = false;
  // Its hidden state is bounded by its activations (tanh/sigmoid: |h| <= 1); false when
  // an unbounded activation (Relu) makes it so the state can grow without limit.
  bool bounded_state = true;
  // A lookup of rows of a trainable table read as input 0 (Gather of an initializer along
  // axis 0): the probes count the table rows each update changes.
  bool embedding = false;
};

// The traits as the analysis reads them (an::OpDescription) for an op whose output has
// this shape: its role, range, bands and units (runtime/op_traits.cpp).
an::OpDescription describe(const OpTraits& traits, const Shape& output_shape);

// ---- recurrent inner values (issue 16) ----
// What a recurrent op reports of the values it keeps for backward through time, reduced
// from its own gate and state buffers after the time loop, only when a probe asks
// (FwdCtx::inner, a recorded iteration). Gates: the sigmoid-type gates (LSTM i, o, f; GRU
// z, r); candidates: the candidate values (LSTM c~, GRU h~, RNN h) when their activation
// saturates; saturated: within `margin` of the activation's bounds. States: the hidden
// state after the first and after the last time step, every row and direction.
struct InnerStats {
  struct Part {
    int64_t n = 0, saturated = 0, nan = 0, inf = 0;
    double sum = 0, sumsq = 0;
    float min = INFINITY, max = -INFINITY;  // of the values (states: of |h|)
  };
  Part gates, candidates, first, last;
  double margin = 0.01;
  void reset() { gates = candidates = first = last = Part{}; }
};

// Traits of the ops that start a layer and are affine in their data input (Gemm, MatMul,
// Conv).
inline OpTraits linear_layer_traits() {
  OpTraits t;
  t.role = OpTraits::Role::kParameterized;
  t.linear = true;
  return t;
}

// What an initializer read through one of an op's inputs is to the op (mlpack 4's
// layers expose their weights the same way): the op decides, never a table elsewhere.
// Trainable kinds are optimised by gradient; running statistics are model state the op
// updates itself. fan_in/fan_out are set for weights and embeddings (Keras' definitions
// for glorot/he initialisation); a fresh layer sets biases and running means to 0,
// scales and running variances to 1.
struct ParamRole {
  enum class Kind { kNone, kWeight, kEmbedding, kBias, kScale, kRunningMean, kRunningVar };
  Kind kind = Kind::kNone;
  int64_t fan_in = 0, fan_out = 0;
  bool trainable() const {
    return kind == Kind::kWeight || kind == Kind::kEmbedding || kind == Kind::kBias || kind == Kind::kScale;
  }
  bool has_fans() const { return kind == Kind::kWeight || kind == Kind::kEmbedding; }
};
const char* param_kind_name(ParamRole::Kind k);  // "weight", "embedding", "running variance", ...

inline ParamRole weight_role(int64_t fan_in, int64_t fan_out) {
  ParamRole r;
  r.kind = ParamRole::Kind::kWeight;
  r.fan_in = fan_in;
  r.fan_out = fan_out;
  return r;
}
inline ParamRole param_role_of(ParamRole::Kind kind) {
  ParamRole r;
  r.kind = kind;
  return r;
}

// Plan-time view of one node: input shapes and dtypes always, values where known
// (constants, shape computations). The op declares its outputs with Tensor::plan()
// (no storage yet: the graph checks the memory budget first). An op that can compute
// an output from shapes alone (Shape) calls reset(), fills it and sets out_known.
struct InferCtx {
  std::vector<const Tensor*> in;  // nullptr for an omitted optional input
  std::vector<bool> known;        // in[i]'s values are valid at plan time
  std::vector<bool> param;        // in[i] is a trainable parameter (empty: none is)
  std::vector<Tensor*> out;       // nullptr for an omitted optional output
  std::vector<bool> out_known;    // set by ops such as Shape
  bool training = false;
  // What the graph may still plan (its memory cap minus what is planned so far): an op
  // that allocates plan-time buffers of its own (e.g. Pad's index maps) checks them
  // against it before allocating, as the graph checks every output after infer().
  int64_t max_bytes = std::numeric_limits<int64_t>::max();
  // Charges an op's own plan-time buffers (gate storage, masks, index maps) to the run's
  // memory budget, so that they count like the graph's tensors (throws ResourceError over
  // the cap). Set by the graph; unset in tests that plan an op alone.
  std::function<void(int64_t bytes, const std::string& what)> charge_buffer;
  void charge(int64_t bytes, const std::string& what) const {
    if (charge_buffer) charge_buffer(bytes, what);
  }
  // For plan-time buffers sized by the model's shapes or attributes, before allocating:
  // `bytes` (a double, so that a product of huge sizes cannot wrap) must fit in max_bytes,
  // else ResourceError "WHERE: WHAT would need X, over what the memory cap leaves (Y; raise it
  // with --max-memory)"; then charges the buffer. `also` counts bytes that fit alongside
  // but are charged elsewhere (the op's output, which the graph charges after infer()).
  void reserve(const std::string& where, double bytes, const std::string& what, double also = 0) const;
};

// Statistics of a tensor that an op reduces while it writes or reads the tensor anyway,
// instead of a separate pass over it afterwards (the probes' sink, runtime/probes.h).
// An op reports every value of the tensor exactly once, or none (the probe then reduces
// the tensor itself). Values go in parts fixed by the shapes (part < kParts), each
// part's values in order; distinct parts may be reported from different threads at once.
//
// A light sink wants only the light sums (stats::light_pass, runtime/value_sums.h): an op
// that holds the values in vector registers anyway may run light_pass on them and report
// the sums of n values with add_sums instead of add.
class ValueSink {
 public:
  static constexpr int64_t kParts = 8;
  virtual void add(int64_t part, const float* x, int64_t n) = 0;
  virtual bool light() const = 0;
  virtual void add_sums(int64_t part, const stats::Sums& sums, int64_t n) = 0;

 protected:
  ~ValueSink() = default;
};

// ---- Op features (issue 16: attention and LayerNorm), see an::OpFeature ----
// The per-row feature an op's forward() can report (FwdCtx::feature_stats): up to `rows`
// values (rows whose feature is undefined may be left out), each computed over
// `row_length` values of the op's data.
struct OpFeatureInfo {
  an::OpFeature kind = an::OpFeature::kNone;
  int64_t rows = 0, row_length = 0;
};
// ---- end of op features ----

struct FwdCtx {
  std::vector<const Tensor*> in;
  std::vector<Tensor*> out;
  bool training = false;
  std::mt19937_64* rng = nullptr;  // seeded by the graph owner; used by Dropout
  ValueSink* out_stats = nullptr;  // set by the executor when a probe wants out[0]'s statistics
  // Set when a probe wants in[Op::reported_input()]'s statistics and the op reports its
  // input (Op::reports_input): that input is the output of an earlier step, not yet reduced.
  ValueSink* in_stats = nullptr;
  // Set when a probe wants the op's feature (Op::feature): forward() then reports the
  // feature of every row, in row order, to part 0 (or reports nothing); rows whose feature
  // is undefined may be left out (a softmax row with one position not masked).
  ValueSink* feature_stats = nullptr;
  InnerStats* inner = nullptr;  // set when a probe wants a recurrent op's inner values
};

// Backward: dout[k] is the gradient of the loss w.r.t. out[k] (nullptr when no gradient
// flows there); din[i] is nullptr when input i needs no gradient, else it is
// accumulated into (+=), never overwritten.
struct BwdCtx {
  std::vector<const Tensor*> in;
  std::vector<const Tensor*> out;
  std::vector<const Tensor*> dout;
  std::vector<Tensor*> din;
  bool training = false;
  ValueSink* dout_stats = nullptr;  // set by the executor when a probe wants dout[0]'s statistics
  // Set when a probe wants din[0]'s statistics and the op reports them (Op::reports_input_gradient):
  // backward() then reports din[0]'s final values to this light sink, whole or not at all.
  ValueSink* din_stats = nullptr;
  // Bit i set: this step is the first to write din[i] in the backward pass and the
  // executor did not zero it (Op::assigns_gradient(i)): the op writes every element.
  uint32_t assign = 0;
  bool assigns(size_t i) const { return i < 32 && ((assign >> i) & 1u) != 0; }
};

class Op {
 public:
  explicit Op(const ir::Node& node) : name_(node.name), type_(node.op_type) {}
  virtual ~Op() = default;
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;

  const std::string& name() const { return name_; }
  const std::string& type() const { return type_; }

  // Validates inputs and sizes outputs (throws ShapeError naming the node). Called once
  // per plan; scratch buffers are sized here, never in forward/backward.
  virtual void infer(InferCtx& ctx) = 0;
  virtual void forward(FwdCtx& ctx) = 0;
  // Default: gradients pass through nothing (throws InternalError when asked).
  virtual void backward(BwdCtx& ctx);

  virtual OpTraits traits() const { return {}; }
  // Whether forward() reports input reported_input() (in[0] unless the op says otherwise,
  // after infer()) to a light FwdCtx::in_stats (whole, or not at all).
  virtual bool reports_input() const { return false; }
  virtual size_t reported_input() const { return 0; }
  // Whether forward() reports out[0] whole to a light FwdCtx::out_stats in a training
  // pass from what it computes anyway, at less cost than a later step that reports its
  // input would (BatchNormalization: from its batch statistics): the probes then leave
  // the output to it rather than to the step that reads it next (runtime/probes.h).
  virtual bool reports_output() const { return false; }
  // Whether backward() can report din[0] (BwdCtx::din_stats) as it writes it: the gradient
  // of its producer's output when this step alone reads it, which the producer's own
  // backward pass would otherwise reduce from memory (BatchNormalization before a Conv's
  // products, whose dY no loop of theirs reads; Relu and Clip from their registers;
  // Softmax and LogSoftmax over contiguous rows, each row from L1: attention's scores;
  // Mul and Div, chunk by chunk, where A is not broadcast; runtime/probes.h).
  virtual bool reports_input_gradient() const { return false; }
  // Whether backward(), given a light BwdCtx::dout_stats, reduces dY within work it does
  // anyway (a Conv's bias gradient or its batched copy of dY, BatchNormalization's long
  // channels): a step that alone reads this op's output then leaves that gradient to it
  // rather than report it as its input gradient (runtime/probes.h).
  virtual bool sums_output_gradient() const { return false; }
  // Whether, after the last forward(), out[0] holds exactly in[0]'s values (the same bits,
  // in the same or another order: Reshape, Flatten, Squeeze, Unsqueeze, Identity,
  // Transpose, a Dropout that dropped nothing): its statistics are in[0]'s, and a probe
  // takes them from in[0]'s reduction instead of a pass of its own (runtime/probes.h).
  virtual bool copies_input() const { return false; }
  // Whether out[0] holds in[0]'s values in the same row-major order at every forward(),
  // in training and inference alike, and backward() adds dout[0] to din[0] as it is
  // (asked after infer(); Reshape, Flatten, Squeeze, Unsqueeze, Identity, a Dropout of
  // constant ratio 0). The graph may then make out[0] a view of in[0] and skip forward(),
  // and din[0] one of dout[0] and skip backward() (runtime/graph_views.cpp). A skipped
  // forward() writes none of the op's other outputs: the graph views only where nothing
  // reads those.
  virtual bool views_input() const { return false; }
  // Whether, in the last backward(), din[i] received exactly dout[0]'s values (the same
  // bits, maybe reordered: a copy's input, either input of an Add that is not broadcast):
  // when nothing else adds to it, its statistics are dout[0]'s.
  virtual bool passes_gradient(size_t i) const { return i == 0 && copies_input(); }
  // Whether out[0] holds exactly the values of all its inputs, each input's once (the same
  // bits, placed anywhere: Concat): its statistics are theirs merged, which a probe takes
  // instead of a report or a pass of its own (runtime/probes_reduce.cpp, join_sums).
  virtual bool joins_inputs() const { return false; }
  // Whether out[0] holds the box [begin[d], end[d]) of in[0] on every axis d, in row-major
  // order, and backward() adds dout[0] into that box of din[0] (a Slice with steps of 1;
  // asked after infer()): Slices that partition a tensor give its statistics, and its
  // gradient's, from theirs (runtime/probes_wait.cpp).
  virtual bool selects_box(Shape& begin, Shape& end) const { (void)begin, (void)end; return false; }
  // Whether backward(), when BwdCtx::assigns(i), writes every element of din[i] (the
  // first write of that gradient in the pass) instead of adding onto a buffer the
  // executor zeroed: as 0 + what it adds (the same bits), or a product's beta = 0 (the
  // same up to the sign of a zero). Asked after infer(); only where it always writes
  // every element, also for a zero dout. Zeroing the gradient buffers was 6.6% of a
  // transformer's profile samples (bench/README.md, run 31).
  virtual bool assigns_gradient(size_t i) const { (void)i; return false; }
  // Whether a gradient can flow into input i (false for indices, shapes, BN running stats).
  virtual bool differentiable_input(size_t i) const { (void)i; return true; }
  // Whether input i's values must be known at plan time because they decide output
  // shapes (Resize's scales and sizes): a float input that is, read from a graph input,
  // must be fixed when planning (the conformance runner asks this).
  virtual bool plan_time_input(size_t i) const { (void)i; return false; }
  // What an initializer of `shape` read as input i is to this op (kNone: a constant).
  // Needs only the node's attributes, not infer(): parameters are decided before planning.
  virtual ParamRole param_role(size_t i, const Shape& shape) const { (void)i; (void)shape; return {}; }
  // The per-row feature forward() reports to FwdCtx::feature_stats (asked after infer());
  // kind kNone when it has none. Ops that normalise rows compute it in their own loops.
  virtual OpFeatureInfo feature() const { return {}; }
  // Output depends on a random stream in training mode (Dropout): never folded.
  virtual bool stochastic() const { return false; }
  // What inspect and convert say of the node beyond its type and attributes, after
  // infer() (a recurrent op: its gates with their activations); empty: nothing.
  virtual std::string describe() const { return {}; }

 protected:
  std::string where() const { return "node '" + name_ + "' (" + type_ + ")"; }

 private:
  std::string name_;
  std::string type_;
};

// A small, kink-free case for the generic gradient checker and the op unit tests.
struct OpSample {
  std::string label;
  ir::Node node;
  std::vector<Tensor> inputs;
  // Inputs the checker differentiates (others are indices, shapes, constants).
  std::vector<bool> check_grad;
  // Outputs the checker sends a gradient into (empty: output 0 only, as the extra
  // outputs of most ops, e.g. BN's running statistics, are not differentiable).
  std::vector<bool> grad_outputs;
  bool training = false;
};

using OpFactory = std::unique_ptr<Op> (*)(const ir::Node&);
using SampleFactory = std::vector<OpSample> (*)();

struct OpInfo {
  const char* type;           // ONNX op type
  std::vector<int> versions;  // since-versions whose semantics the op implements
  OpFactory make;
  SampleFactory samples;
};

}  // namespace dl::rt
