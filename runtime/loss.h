// Training losses and the accuracy-style metric, with tf.keras 2.x semantics.
//
// Layout: the last axis of `pred` is the class/feature axis ("width" C; a rank-0/1 pred
// has C = 1); every other element index is a "row" (rows = numel / C, i.e. B for [B, C]).
// A row's loss is the mean over its C elements (mse, mae, huber, hinge,
// binary_crossentropy) or the sum over classes (categorical ones). The batch loss is the
// sum of the row losses / rows: Keras' SUM_OVER_BATCH_SIZE reduction, which divides by
// the number of per-sample loss elements (B for [B, C], B*T for [B, T, C]).
//
// Exact formulas (tf.keras 2.x, keras/backend.py and keras/losses.py; eps = float32(1e-7),
// hi = float32(1 - eps) = 0.99999988, clip(x) = min(max(x, eps), hi)):
//   mse     mean((p - y)^2)
//   mae     mean(|p - y|)                        d/dp = sign(p - y), 0 at p == y
//   huber   mean(|e| <= 1 ? e^2/2 : |e| - 1/2)   e = p - y, delta 1
//   hinge   mean(max(1 - y*p, 0)); when every target of the batch is 0 or 1 they are first
//           mapped to -1/1 (Keras' _maybe_convert_labels). d/dp = -y where 1 - y*p >= 0.
//   binary_crossentropy, probabilities:
//           q = clip(p); -(y*log(q + eps) + (1-y)*log(1 - q + eps))
//   binary_crossentropy, logits: max(x,0) - x*y + log1p(exp(-|x|))   (sigmoid_cross_entropy)
//   categorical_crossentropy, probabilities: q = clip(p / sum_row(p)); -sum(y*log(q))
//   categorical_crossentropy, logits: -sum(y * log_softmax(x))
//   sparse_categorical_crossentropy, probabilities: q = clip(p); -log_softmax(log q)[id]
//           = -log(q[id]) + log(sum_row(q))   (Keras clips, takes log and feeds the result
//           to sparse_softmax_cross_entropy_with_logits: the clipped row is renormalised)
//   sparse_categorical_crossentropy, logits: -log_softmax(x)[id]
// Gradients are the exact derivatives of these, with TF's clip gradient: 1 on the closed
// interval [eps, hi], 0 strictly outside (so a ReLU output of 0 or a one-unit softmax
// output of 1 gets exactly zero gradient). from_logits has no effect on mse/mae/huber/hinge.
//
// Keras difference (keras/backend.py _get_logits): when the model's output tensor is
// produced by a Softmax op (categorical/sparse) or a Sigmoid op (binary), Keras ignores
// from_logits=False and computes the loss from that op's INPUT as logits (so a saturated
// sigmoid + binary_crossentropy is NOT clipped in Keras). The trainer does not do this
// bypass: it computes the loss on the model's output as the configuration says. ReLU/linear
// outputs and a one-unit softmax behave the same either way.
#pragma once

#include <memory>
#include <string>

#include "runtime/tensor.h"

namespace dl::rt {

class Loss {
 public:
  virtual ~Loss() = default;
  // pred and target have the same shape [B, ...] (trailing 1-dims may differ: [B] vs
  // [B, 1]). For sparse_categorical_crossentropy pred is [B, ..., C] and target holds one
  // class id per row ([B], [B, 1], ...; float or int64). Returns the batch loss (see the
  // file comment). When grad != nullptr writes (overwrites) dLoss/dpred into it; grad must
  // be an allocated float tensor with pred's element count. No heap allocation per call.
  // Throws ShapeError for mismatched shapes, DataError for a class id that is not an
  // integer in [0, C).
  virtual double compute(const Tensor& pred, const Tensor& target, Tensor* grad) = 0;
  virtual const std::string& name() const = 0;
  virtual bool from_logits() const = 0;
};

// name: mse, mae, huber, hinge, binary_crossentropy, categorical_crossentropy,
// sparse_categorical_crossentropy (Keras' long names mean_squared_error,
// mean_absolute_error are accepted too). Throws ConfigError naming the option and the
// valid names for anything else.
std::unique_ptr<Loss> make_loss(const std::string& name, bool from_logits);

// The loss names make_loss accepts (canonical ones), for help texts.
const char* valid_loss_names();

// The metric Keras reports for compile(metrics=["accuracy"]) with this loss.
//   categorical_crossentropy         -> categorical accuracy (argmax of pred == argmax of
//                                       the one-hot target; first maximum wins ties)
//   sparse_categorical_crossentropy  -> sparse categorical accuracy (argmax == class id)
//   binary_crossentropy              -> binary accuracy: (p > 0.5) == y, threshold 0 on
//                                       logits when from_logits
//   mse, mae, huber, hinge           -> when targets_are_classes (every target 0 or 1):
//                                       binary accuracy (width 1, threshold 0.5) or
//                                       categorical accuracy (width > 1); otherwise "mae",
//                                       the mean absolute error (lower is better).
class Metric {
 public:
  virtual ~Metric() = default;
  // Mean over the batch (over all elements for binary accuracy and mae). No allocation.
  virtual double compute(const Tensor& pred, const Tensor& target) const = 0;
  virtual bool higher_is_better() const = 0;
  virtual const std::string& name() const = 0;  // "accuracy" or "mae"
};

std::unique_ptr<Metric> make_metric(const std::string& loss, bool from_logits, bool targets_are_classes);

}  // namespace dl::rt
