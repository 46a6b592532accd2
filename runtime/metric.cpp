// The accuracy Keras reports for metrics=["accuracy"], or the mean absolute error for
// regression targets. Keras (tf.keras 2.x engine/compile_utils.py _get_metric_object)
// picks the accuracy from the shapes alone: prediction width 1 -> binary_accuracy;
// one target per row with width > 1 -> sparse_categorical_accuracy; otherwise
// categorical_accuracy. We follow it, except that the binary threshold is 0 (not 0.5)
// when binary_crossentropy takes logits.
#include <cmath>

#include "converter/errors.h"
#include "runtime/loss.h"
#include "runtime/loss_impl.h"

namespace dl::rt {

namespace {

using loss_detail::Layout;
using loss_detail::layout_of;

int64_t argmax(const float* x, int64_t c) {
  int64_t best = 0;
  for (int64_t j = 1; j < c; ++j)
    if (x[j] > x[best]) best = j;  // first maximum wins, like tf.argmax
  return best;
}

void check(const std::string& what, const Tensor& pred, const Tensor& target) {
  if (pred.dtype() != DType::kFloat32 || !pred.allocated() || !target.allocated())
    throw ShapeError(what + ": predictions must be float32 and both tensors allocated");
}

class Accuracy final : public Metric {
 public:
  explicit Accuracy(double threshold) : threshold_(threshold) {}

  double compute(const Tensor& pred, const Tensor& target) const override {
    check(name_, pred, target);
    const Layout l = layout_of(pred);
    if (l.rows == 0) return 0.0;
    const float* p = pred.f();
    if (l.width == 1) {
      if (target.numel() != pred.numel()) mismatch(pred, target);
      int64_t hits = 0;
      for (int64_t k = 0; k < pred.numel(); ++k)
        hits += target.at(k) == (double(p[k]) > threshold_ ? 1.0 : 0.0);
      return double(hits) / double(pred.numel());
    }
    int64_t hits = 0;
    if (target.numel() == l.rows) {  // class ids
      for (int64_t r = 0; r < l.rows; ++r) hits += double(argmax(p + r * l.width, l.width)) == target.at(r);
    } else if (target.numel() == pred.numel()) {  // one-hot
      for (int64_t r = 0; r < l.rows; ++r) {
        const int64_t base = r * l.width;
        int64_t best = 0;
        for (int64_t j = 1; j < l.width; ++j)
          if (target.at(base + j) > target.at(base + best)) best = j;
        hits += argmax(p + base, l.width) == best;
      }
    } else {
      mismatch(pred, target);
    }
    return double(hits) / double(l.rows);
  }
  bool higher_is_better() const override { return true; }
  const std::string& name() const override { return name_; }

 private:
  [[noreturn]] void mismatch(const Tensor& pred, const Tensor& target) const {
    throw ShapeError("metric accuracy: targets " + shape_str(target.shape()) + " do not fit predictions " +
                     shape_str(pred.shape()));
  }

  double threshold_;
  std::string name_ = "accuracy";
};

class MeanAbsoluteError final : public Metric {
 public:
  double compute(const Tensor& pred, const Tensor& target) const override {
    check(name_, pred, target);
    if (target.numel() != pred.numel())
      throw ShapeError("metric mae: targets " + shape_str(target.shape()) + " do not match predictions " +
                       shape_str(pred.shape()));
    if (pred.numel() == 0) return 0.0;
    double sum = 0.0;
    for (int64_t k = 0; k < pred.numel(); ++k) sum += std::fabs(double(pred.f()[k]) - target.at(k));
    return sum / double(pred.numel());
  }
  bool higher_is_better() const override { return false; }
  const std::string& name() const override { return name_; }

 private:
  std::string name_ = "mae";
};

}  // namespace

std::unique_ptr<Metric> make_metric(const std::string& loss, bool from_logits, bool targets_are_classes) {
  const std::unique_ptr<Loss> canonical = make_loss(loss, from_logits);  // validates the name
  const std::string& name = canonical->name();
  const bool crossentropy = name == "binary_crossentropy" || name == "categorical_crossentropy" ||
                            name == "sparse_categorical_crossentropy";
  if (crossentropy || targets_are_classes) {
    const double threshold = (from_logits && name == "binary_crossentropy") ? 0.0 : 0.5;
    return std::make_unique<Accuracy>(threshold);
  }
  return std::make_unique<MeanAbsoluteError>();
}

}  // namespace dl::rt
