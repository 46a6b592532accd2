// Optimizers with tf.keras 2.x (optimizer_v2, the "legacy" optimizers of TF >= 2.11)
// semantics and defaults. Every step:
//   1. iterations t (0 on the first step) gives lr_t = lr / (1 + decay * t)   [_decayed_lr]
//   2. each gradient tensor g is transformed as Keras' _transform_gradients does, in this
//      order: clipvalue  g = clip(g, -clipvalue, clipvalue) element-wise; then clipnorm
//      g = g * clipnorm / max(||g||_2, clipnorm), the norm taken over that ONE parameter
//      tensor (tf.clip_by_norm per gradient, not the global norm).
//   3. the rule below updates the parameter; t += 1.
// Rules (TF kernels in core/kernels/training_ops.cc, Keras files optimizer_v2/*.py), with
// T = t + 1:
//   sgd       momentum == 0: w -= lr_t * g                    (ResourceApplyGradientDescent)
//             else a = momentum*a - lr_t*g; w += a, or with nesterov
//             w += momentum*a - lr_t*g                          (ResourceApplyKerasMomentum)
//   adam      m += (g - m)(1-b1); v += (g^2 - v)(1-b2);
//             w -= lr_t*sqrt(1-b2^T)/(1-b1^T) * m / (sqrt(v) + eps)      (ResourceApplyAdam)
//   rmsprop   momentum == 0: v = rho*v + (1-rho)*g^2; w -= lr_t*g/(sqrt(v) + eps)
//             momentum > 0:  v = rho*v + (1-rho)*g^2; a = momentum*a + lr_t*g/sqrt(v + eps);
//                            w -= a                            (ResourceApplyRMSProp)
//   adagrad   acc += g^2 (acc starts at 0.1); w -= lr_t*g/(sqrt(acc) + eps)   (AdagradV2)
//   adadelta  acc = rho*acc + (1-rho)*g^2; u = sqrt(accu + eps)/sqrt(acc + eps) * g;
//             w -= lr_t*u; accu = rho*accu + (1-rho)*u^2               (ResourceApplyAdadelta)
//   adamax    m += (g - m)(1-b1); v = max(b2*v, |g|); w -= lr_t/(1-b1^T) * m/(v + eps)
//   nadam     Keras' Nadam, momentum schedule mu_T = b1*(1 - 0.5*0.96^(0.004*T)),
//             ms_T = prod mu_1..mu_T; g' = g/(1-ms_T); m = b1*m + (1-b1)g; m' = m/(1-ms_T*mu_{T+1});
//             v = b2*v + (1-b2)g^2; v' = v/(1-b2^T); mbar = (1-mu_T)g' + mu_{T+1}m';
//             w -= lr*mbar/(sqrt(v') + eps). tf.keras' Nadam takes over the `decay` argument
//             for this schedule (0.004), so the learning rate is never decayed: `decay` is
//             ignored for nadam, as in Keras.
// Defaults: sgd lr 0.01; adam, rmsprop, adamax, nadam 0.001; adagrad 0.01 (classic Keras;
// tf.keras 2.x uses 0.001); adadelta 1.0 (classic Keras; tf.keras 2.x uses 0.001);
// b1 0.9, b2 0.999, rho 0.9 (rmsprop) / 0.95 (adadelta), eps 1e-7.
// Arithmetic is float32 for the state like TF's kernels; scalar coefficients in double.
#pragma once

#include <cstdint>
#include <memory>
#include <map>
#include <optional>
#include <string>
#include <set>
#include <vector>

#include "runtime/graph.h"

namespace dl::rt {

namespace stats {
struct ParamSums;  // runtime/probe_stats.h
}

struct OptimizerConfig {
  std::string name = "rmsprop";
  std::optional<double> learning_rate;  // unset: the optimizer's default (see above)
  double momentum = 0;                  // sgd and rmsprop only
  bool nesterov = false;                // sgd only
  double decay = 0;                     // time-based learning-rate decay
  std::optional<double> clipnorm, clipvalue;
  // Comma-separated parameter (initializer) names whose learning rate is 0: the optimizer
  // leaves them as they are and keeps no state moving for them (torch's requires_grad=False,
  // Keras' trainable=False). Every name must be a trainable parameter (checked by the trainer).
  std::string frozen;
  // Where a value came from, by option key ("momentum" -> "m.onnx: model metadata
  // 'deeplocalize.momentum'"), for messages; a key not listed came from its command-line flag.
  std::map<std::string, std::string> origin;
};

class Optimizer {
 public:
  virtual ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Applies one update to every parameter from its gradient (params[i].grad). State is
  // keyed by position i, so callers must pass the params in the same order every call
  // (sizes are checked: InternalError if they change). Allocates state on the first call
  // only. Gradients are read, never modified.
  //
  // A large parameter is updated in the fixed parts of elementwise_parts(n)
  // (runtime/parallel.h: from its size alone) on the compute threads: the rules are
  // element-wise, so the update is the same for any thread count.
  //
  // With an observer, either the rule takes the statistics of weights, gradients and
  // updates in its own loop over each part (UpdateObserver::chunk_sums), or each part is
  // updated in chunks of at most kChunk values and the observer sees every chunk right
  // after its update, while the chunk's gradient, old and new values are in L1
  // (on_chunk): no extra pass over memory and no copy of the parameters either way.
  class UpdateObserver {
   public:
    virtual ~UpdateObserver() = default;
    // Values [offset, offset + n) of parameter `param` (index into params), in its part
    // `part` (< kMaxElementwiseParts): the raw gradient (before clipping), the values
    // before and after this update. The chunks of one part come in order, on one thread;
    // different parts of a parameter may come at once from different threads when
    // concurrent_parts(param), else all in order on the calling thread.
    virtual void on_chunk(size_t param, int64_t part, int64_t offset, const float* grad, const float* before,
                          const float* after, int64_t n) = 0;
    virtual bool concurrent_parts(size_t /*param*/) const { return false; }
    // Instead of on_chunk, where the observer wants only the statistics: the sums that
    // part `part` of parameter `param` adds them to (stats::ParamSums, as
    // stats::add_param_chunk over its chunks would), which the rule then takes in its
    // own loop over the whole part from the registers that hold the gradient and the old
    // and new values (opt_detail::each_vector); nullptr: on_chunk. Asked once per part,
    // on the part's thread; never for a clipped gradient (the statistics are the raw
    // gradient's: on_chunk then).
    virtual stats::ParamSums* chunk_sums(size_t /*param*/, int64_t /*part*/) { return nullptr; }
  };
  static constexpr size_t kChunk = 2048;  // floats (8 KiB)
  void step(std::vector<Param>& params, UpdateObserver* observer = nullptr);

  // Bytes of the state step() allocates for these parameters (its slots, the clipping
  // scratch and one chunk), for the memory budget.
  int64_t state_bytes(const std::vector<Param>& params) const;

  double learning_rate() const { return lr_; }          // the configured (initial) rate
  double current_learning_rate() const;                 // lr_t the next step will use
  int64_t iterations() const { return iterations_; }
  const std::string& name() const { return name_; }
  const OptimizerConfig& config() const { return config_; }
  bool frozen(const std::string& param) const { return frozen_.count(param) > 0; }

 protected:
  Optimizer(const OptimizerConfig& config, double default_lr, int slots);
  // Updates w (n elements) in place from the transformed gradient g; s[k] is slot k's
  // state for this parameter (n floats each, zero-initialised unless init_slot says).
  // `before`, when not null (an UpdateObserver's on_chunk watches), receives w's values
  // before the update; `sums`, when not null (its chunk_sums), the values' statistics;
  // both taken in the rule's own loop (opt_detail::each_vector).
  virtual void update(float* w, const float* g, float* const* s, int64_t n, double lr_t, float* before,
                      stats::ParamSums* sums) = 0;
  virtual float init_slot(int /*slot*/) const { return 0.0f; }
  virtual void begin_step(int64_t /*t*/) {}  // once per step, before any update()
  virtual bool decays_lr() const { return true; }

  OptimizerConfig config_;

 private:
  void allocate(const std::vector<Param>& params);
  const float* transform(const Param& p);
  // One parameter's update, part `part` of `parts` (see step()).
  struct Part {
    Optimizer* self;
    size_t param;
    float* w;
    const float* g;    // the transformed gradient
    const float* raw;  // the gradient the observer sees
    int64_t n, parts;
    double lr_t;
    UpdateObserver* observer;
  };
  void update_part(const Part& p, int64_t part);

  std::string name_;
  std::set<std::string> frozen_;  // config_.frozen, split
  double lr_;
  int slots_;
  int64_t iterations_ = 0;
  std::vector<std::vector<std::vector<float>>> state_;  // [param][slot][element]
  std::vector<int64_t> sizes_;                          // [param]: its values at the first step
  std::vector<float> scratch_;                          // transformed gradient
  std::vector<float> before_;                           // per part: one chunk of weights before its update
  std::vector<float*> slot_ptrs_;                       // the current parameter's slots
  bool allocated_ = false;
};

// Throws ConfigError naming the option for an unknown name (listing the valid ones), a
// negative or non-finite learning rate, decay, clipnorm or clipvalue, a momentum outside
// [0, 1), momentum on an optimizer without it (only sgd and rmsprop have one), or
// nesterov on anything but sgd.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config);

const char* valid_optimizer_names();

// Whether the optimizer `name` (lower case) takes the setting with option key `key`: only
// sgd and rmsprop have "momentum", only sgd "nesterov"; every other setting applies to all.
bool optimizer_takes(const std::string& name, const std::string& key);

// After the command line chose the optimizer: resets the settings that came from the
// model's metadata (config.origin) and that config.name does not take, e.g. the model's
// SGD momentum under --optimizer adam. Returns one note per setting dropped. A setting
// given on the command line is kept, so that make_optimizer rejects a real contradiction.
std::vector<std::string> drop_settings_not_taken(OptimizerConfig& config);

// The names of OptimizerConfig::frozen: split at commas, blanks around a name dropped,
// empty items skipped.
std::vector<std::string> frozen_names(const std::string& list);

}  // namespace dl::rt
