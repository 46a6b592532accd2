// Losses whose row value is the mean over the last axis of an element-wise term:
// mse, mae, huber, hinge, binary_crossentropy (keras/losses.py: backend.mean(..., axis=-1)
// followed by SUM_OVER_BATCH_SIZE, i.e. the mean over every element).
#include <cmath>
#include <type_traits>

#include "converter/errors.h"
#include "runtime/loss_impl.h"

namespace dl::rt::loss_detail {

namespace {

// One element's loss and its derivative w.r.t. the prediction.
struct Term {
  double value;
  double deriv;
};

struct Mse {
  Term operator()(double p, double y) const {
    const double e = p - y;
    return {e * e, 2.0 * e};
  }
};

struct Mae {
  // TF's Abs gradient is sign(x): 0 at x == 0.
  Term operator()(double p, double y) const {
    const double e = p - y;
    return {std::fabs(e), e > 0 ? 1.0 : (e < 0 ? -1.0 : 0.0)};
  }
};

struct Huber {
  static constexpr double kDelta = 1.0;
  // keras/losses.py huber: where(|e| <= delta, 0.5*e^2, delta*|e| - 0.5*delta^2).
  Term operator()(double p, double y) const {
    const double e = p - y;
    const double a = std::fabs(e);
    if (a <= kDelta) return {0.5 * e * e, e};
    return {kDelta * a - 0.5 * kDelta * kDelta, e > 0 ? kDelta : -kDelta};
  }
};

struct Hinge {
  // Set per batch: Keras' _maybe_convert_labels maps 0/1 targets to -1/1 only when every
  // target of the batch is 0 or 1.
  bool convert = false;
  // max(1 - y*p, 0); TF's Maximum gradient passes to the first input when x >= 0.
  Term operator()(double p, double y) const {
    if (convert) y = 2.0 * y - 1.0;
    const double m = 1.0 - y * p;
    return m >= 0 ? Term{m, -y} : Term{0.0, 0.0};
  }
};

struct BceProbabilities {
  // keras/backend.py binary_crossentropy: q = clip(p, eps, 1-eps);
  // -(y*log(q + eps) + (1-y)*log(1 - q + eps)); zero gradient where the clip is active.
  Term operator()(float p, double y) const {
    const double q = clip_prob(p);
    const double a = q + kEps, b = 1.0 - q + kEps;
    const double value = -(y * std::log(a) + (1.0 - y) * std::log(b));
    const double deriv = clip_passes(p) ? -y / a + (1.0 - y) / b : 0.0;
    return {value, deriv};
  }
};

struct BceLogits {
  // tf.nn.sigmoid_cross_entropy_with_logits: max(x,0) - x*y + log1p(exp(-|x|)).
  Term operator()(double x, double y) const {
    const double value = (x > 0 ? x : 0.0) - x * y + std::log1p(std::exp(-std::fabs(x)));
    const double sig = x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x));
    return {value, sig - y};
  }
};

template <class F>
class ElementwiseLoss final : public Loss {
 public:
  ElementwiseLoss(std::string name, bool from_logits) : name_(std::move(name)), from_logits_(from_logits) {}

  double compute(const Tensor& pred, const Tensor& target, Tensor* grad) override {
    check_same_shape(name_, pred, target, grad);
    const int64_t n = pred.numel();
    if (n == 0) return 0.0;
    F f{};
    prepare(f, target);
    const float* p = pred.f();
    float* g = grad != nullptr ? grad->f() : nullptr;
    const double scale = 1.0 / double(n);
    double sum = 0.0;
    if (target.dtype() == DType::kFloat32) {
      const float* y = target.f();
      for (int64_t k = 0; k < n; ++k) sum += apply(f, p[k], y[k], g, k, scale);
    } else {
      const int64_t* y = target.i();
      for (int64_t k = 0; k < n; ++k) sum += apply(f, p[k], double(y[k]), g, k, scale);
    }
    return sum * scale;
  }
  const std::string& name() const override { return name_; }
  bool from_logits() const override { return from_logits_; }

 private:
  static double apply(const F& f, float p, double y, float* g, int64_t k, double scale) {
    const Term t = f(p, y);
    if (g != nullptr) g[k] = static_cast<float>(t.deriv * scale);
    return t.value;
  }
  static void prepare(F& f, const Tensor& target) {
    if constexpr (std::is_same_v<F, Hinge>) {
      f.convert = true;
      for (int64_t k = 0; k < target.numel() && f.convert; ++k) {
        const double y = target.at(k);
        f.convert = y == 0.0 || y == 1.0;
      }
    } else {
      (void)f;
      (void)target;
    }
  }

  std::string name_;
  bool from_logits_;
};

template <class F>
std::unique_ptr<Loss> make(const std::string& name, bool from_logits) {
  return std::make_unique<ElementwiseLoss<F>>(name, from_logits);
}

}  // namespace

std::unique_ptr<Loss> make_elementwise_loss(const std::string& canonical, bool from_logits) {
  if (canonical == "mse") return make<Mse>(canonical, from_logits);
  if (canonical == "mae") return make<Mae>(canonical, from_logits);
  if (canonical == "huber") return make<Huber>(canonical, from_logits);
  if (canonical == "hinge") return make<Hinge>(canonical, from_logits);
  if (canonical == "binary_crossentropy")
    return from_logits ? make<BceLogits>(canonical, true) : make<BceProbabilities>(canonical, false);
  throw InternalError("make_elementwise_loss: not an element-wise loss: " + canonical);
}

}  // namespace dl::rt::loss_detail
