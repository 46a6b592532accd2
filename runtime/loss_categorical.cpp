// categorical_crossentropy and sparse_categorical_crossentropy: a row's loss is a sum over
// the class axis; the batch loss is the mean over rows (keras/backend.py, TF 2.x).
#include <algorithm>
#include <cmath>

#include "converter/errors.h"
#include "runtime/loss_impl.h"

namespace dl::rt::loss_detail {

namespace {

// log(sum(exp(x))) over one row, shifted by the row maximum for stability.
double log_sum_exp(const float* x, int64_t c) {
  double m = x[0];
  for (int64_t j = 1; j < c; ++j) m = std::max(m, double(x[j]));
  if (!std::isfinite(m)) {  // +inf, or NaN somewhere: let it propagate
    double s = 0;
    for (int64_t j = 0; j < c; ++j) s += std::exp(double(x[j]));
    return std::log(s);
  }
  double s = 0;
  for (int64_t j = 0; j < c; ++j) s += std::exp(double(x[j]) - m);
  return m + std::log(s);
}

double target_at(const Tensor& t, int64_t k) { return t.dtype() == DType::kFloat32 ? double(t.f()[k]) : double(t.i()[k]); }

class CategoricalBase : public Loss {
 public:
  CategoricalBase(std::string name, bool from_logits) : name_(std::move(name)), from_logits_(from_logits) {}
  const std::string& name() const override { return name_; }
  bool from_logits() const override { return from_logits_; }

 protected:
  std::string name_;
  bool from_logits_;
};

// One-hot (or soft) targets of pred's shape.
class Categorical final : public CategoricalBase {
 public:
  using CategoricalBase::CategoricalBase;

  double compute(const Tensor& pred, const Tensor& target, Tensor* grad) override {
    const Layout l = check_same_shape(name_, pred, target, grad);
    if (l.rows == 0 || l.width == 0) return 0.0;
    const double scale = 1.0 / double(l.rows);
    double sum = 0.0;
    for (int64_t r = 0; r < l.rows; ++r) {
      const int64_t base = r * l.width;
      float* g = grad != nullptr ? grad->f() + base : nullptr;
      sum += from_logits_ ? row_logits(pred.f() + base, target, base, l.width, g, scale)
                          : row_probabilities(pred.f() + base, target, base, l.width, g, scale);
    }
    return sum * scale;
  }

 private:
  // -sum(y * log_softmax(x)); d/dx_j = softmax_j * sum(y) - y_j.
  static double row_logits(const float* x, const Tensor& t, int64_t base, int64_t c, float* g, double scale) {
    const double lse = log_sum_exp(x, c);
    double loss = 0.0, ysum = 0.0;
    for (int64_t j = 0; j < c; ++j) {
      const double y = target_at(t, base + j);
      loss -= y * (double(x[j]) - lse);
      ysum += y;
    }
    if (g != nullptr)
      for (int64_t j = 0; j < c; ++j)
        g[j] = static_cast<float>((std::exp(double(x[j]) - lse) * ysum - target_at(t, base + j)) * scale);
    return loss;
  }

  // q = p / sum(p); qc = clip(q); -sum(y * log(qc)).
  // With G_j = dL/dq_j = -y_j / q_j where the clip passes (else 0):
  // dL/dp_i = (G_i - sum_j G_j q_j) / S.
  // q is computed in double; whether the clip is active is decided on float32(q), the
  // value TF clips (a one-unit softmax gives q = 1 > 0.99999988: clipped, zero gradient).
  static double row_probabilities(const float* p, const Tensor& t, int64_t base, int64_t c, float* g, double scale) {
    double s = 0.0;
    for (int64_t j = 0; j < c; ++j) s += p[j];
    double loss = 0.0, dot = 0.0;
    for (int64_t j = 0; j < c; ++j) {
      const double q = double(p[j]) / s;
      const float qf = static_cast<float>(q);
      const bool passes = clip_passes(qf);
      const double y = target_at(t, base + j);
      loss -= y * std::log(passes ? q : clip_prob(qf));
      if (passes) dot -= y;  // G_j * q_j
    }
    if (g != nullptr) {
      for (int64_t j = 0; j < c; ++j) {
        const double q = double(p[j]) / s;
        const double gj = clip_passes(static_cast<float>(q)) ? -target_at(t, base + j) / q : 0.0;
        g[j] = static_cast<float>((gj - dot) / s * scale);
      }
    }
    return loss;
  }
};

// One class id per row.
class SparseCategorical final : public CategoricalBase {
 public:
  using CategoricalBase::CategoricalBase;

  double compute(const Tensor& pred, const Tensor& target, Tensor* grad) override {
    const Layout l = check_sparse_shape(name_, pred, target, grad);
    if (l.rows == 0) return 0.0;
    const double scale = 1.0 / double(l.rows);
    double sum = 0.0;
    for (int64_t r = 0; r < l.rows; ++r) {
      const int64_t id = class_id(name_, target, r, l.width);
      const int64_t base = r * l.width;
      float* g = grad != nullptr ? grad->f() + base : nullptr;
      if (id < 0) {  // invalid class id: reported by the analysis, skipped here
        if (g != nullptr) std::fill(g, g + l.width, 0.0f);
        continue;
      }
      sum += from_logits_ ? row_logits(pred.f() + base, id, l.width, g, scale)
                          : row_probabilities(pred.f() + base, id, l.width, g, scale);
    }
    return sum * scale;
  }

 private:
  // -log_softmax(x)[id]; d/dx_j = softmax_j - [j == id].
  static double row_logits(const float* x, int64_t id, int64_t c, float* g, double scale) {
    const double lse = log_sum_exp(x, c);
    if (g != nullptr)
      for (int64_t j = 0; j < c; ++j)
        g[j] = static_cast<float>((std::exp(double(x[j]) - lse) - (j == id ? 1.0 : 0.0)) * scale);
    return lse - double(x[id]);
  }

  // Keras: qc = clip(p); logits = log(qc); sparse_softmax_cross_entropy(logits)
  //   = -log(qc[id]) + log(sum(qc)); d/dp_j = [clip passes] * (1/S - [j == id] / qc_j).
  static double row_probabilities(const float* p, int64_t id, int64_t c, float* g, double scale) {
    double s = 0.0;
    for (int64_t j = 0; j < c; ++j) s += clip_prob(p[j]);
    const double qid = clip_prob(p[id]);
    if (g != nullptr) {
      for (int64_t j = 0; j < c; ++j) {
        const double d = clip_passes(p[j]) ? 1.0 / s - (j == id ? 1.0 / qid : 0.0) : 0.0;
        g[j] = static_cast<float>(d * scale);
      }
    }
    return std::log(s) - std::log(qid);
  }
};

}  // namespace

std::unique_ptr<Loss> make_categorical_loss(const std::string& canonical, bool from_logits) {
  if (canonical == "categorical_crossentropy") return std::make_unique<Categorical>(canonical, from_logits);
  if (canonical == "sparse_categorical_crossentropy")
    return std::make_unique<SparseCategorical>(canonical, from_logits);
  throw InternalError("make_categorical_loss: not a categorical loss: " + canonical);
}

}  // namespace dl::rt::loss_detail
