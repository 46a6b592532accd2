// The update rules, one class each, written as TF's float32 kernels compute them (see the
// formulas in optimizer.h). Scalar coefficients are computed in double, then rounded.
#include <cmath>

#include "runtime/optimizer_impl.h"

namespace dl::rt::opt_detail {

namespace {

constexpr float kEpsilon = 1e-7f;
constexpr double kBeta1 = 0.9, kBeta2 = 0.999;

class Sgd final : public Optimizer {
 public:
  explicit Sgd(const OptimizerConfig& c) : Optimizer(c, 0.01, c.momentum > 0 ? 1 : 0) {}

 protected:
  void update(float* w, const float* g, float* const* s, int64_t n, double lr_t, float* before) override {
    const float lr = static_cast<float>(lr_t);
    if (config_.momentum <= 0) {  // ResourceApplyGradientDescent
      each_value(w, before, n, [&](int64_t k) { w[k] -= g[k] * lr; });
      return;
    }
    const float mu = static_cast<float>(config_.momentum);  // ResourceApplyKerasMomentum
    float* a = s[0];
    if (config_.nesterov) {
      each_value(w, before, n, [&](int64_t k) {
        a[k] = a[k] * mu - g[k] * lr;
        w[k] += a[k] * mu - g[k] * lr;
      });
    } else {
      each_value(w, before, n, [&](int64_t k) {
        a[k] = a[k] * mu - g[k] * lr;
        w[k] += a[k];
      });
    }
  }
};

class Adam final : public Optimizer {
 public:
  explicit Adam(const OptimizerConfig& c) : Optimizer(c, 0.001, 2) {}

 protected:
  void begin_step(int64_t t) override {
    const double step = double(t + 1);
    b1_power_ = std::pow(kBeta1, step);
    b2_power_ = std::pow(kBeta2, step);
  }
  void update(float* w, const float* g, float* const* s, int64_t n, double lr_t, float* before) override {
    const float alpha = static_cast<float>(lr_t * std::sqrt(1.0 - b2_power_) / (1.0 - b1_power_));
    const float c1 = static_cast<float>(1.0 - kBeta1), c2 = static_cast<float>(1.0 - kBeta2);
    float* m = s[0];
    float* v = s[1];
    each_value(w, before, n, [&](int64_t k) {
      m[k] += (g[k] - m[k]) * c1;
      v[k] += (g[k] * g[k] - v[k]) * c2;
      w[k] -= (m[k] * alpha) / (std::sqrt(v[k]) + kEpsilon);
    });
  }

 private:
  double b1_power_ = 1.0, b2_power_ = 1.0;
};

class RmsProp final : public Optimizer {
 public:
  explicit RmsProp(const OptimizerConfig& c) : Optimizer(c, 0.001, c.momentum > 0 ? 2 : 1) {}

 protected:
  void update(float* w, const float* g, float* const* s, int64_t n, double lr_t, float* before) override {
    const float lr = static_cast<float>(lr_t);
    const float rho = 0.9f, one_minus_rho = 1.0f - rho;
    float* ms = s[0];
    if (config_.momentum <= 0) {  // keras rmsprop.py _resource_apply_dense, no momentum
      each_value(w, before, n, [&](int64_t k) {
        ms[k] = rho * ms[k] + one_minus_rho * (g[k] * g[k]);
        w[k] -= lr * g[k] / (std::sqrt(ms[k]) + kEpsilon);
      });
      return;
    }
    const float mu = static_cast<float>(config_.momentum);  // ResourceApplyRMSProp
    float* mom = s[1];
    each_value(w, before, n, [&](int64_t k) {
      ms[k] += (g[k] * g[k] - ms[k]) * one_minus_rho;
      mom[k] = mom[k] * mu + (g[k] * lr) / std::sqrt(ms[k] + kEpsilon);
      w[k] -= mom[k];
    });
  }
};

class Adagrad final : public Optimizer {
 public:
  explicit Adagrad(const OptimizerConfig& c) : Optimizer(c, 0.01, 1) {}

 protected:
  float init_slot(int) const override { return 0.1f; }  // initial_accumulator_value
  void update(float* w, const float* g, float* const* s, int64_t n, double lr_t, float* before) override {
    const float lr = static_cast<float>(lr_t);
    float* acc = s[0];
    each_value(w, before, n, [&](int64_t k) {  // ResourceApplyAdagradV2
      acc[k] += g[k] * g[k];
      w[k] -= g[k] * lr / (std::sqrt(acc[k]) + kEpsilon);
    });
  }
};

class Adadelta final : public Optimizer {
 public:
  explicit Adadelta(const OptimizerConfig& c) : Optimizer(c, 1.0, 2) {}

 protected:
  void update(float* w, const float* g, float* const* s, int64_t n, double lr_t, float* before) override {
    const float lr = static_cast<float>(lr_t);
    const float rho = 0.95f, one_minus_rho = 1.0f - rho;
    float* acc = s[0];
    float* acc_update = s[1];
    each_value(w, before, n, [&](int64_t k) {  // ResourceApplyAdadelta
      acc[k] = acc[k] * rho + g[k] * g[k] * one_minus_rho;
      const float u = std::sqrt(acc_update[k] + kEpsilon) / std::sqrt(acc[k] + kEpsilon) * g[k];
      w[k] -= u * lr;
      acc_update[k] = acc_update[k] * rho + u * u * one_minus_rho;
    });
  }
};

class Adamax final : public Optimizer {
 public:
  explicit Adamax(const OptimizerConfig& c) : Optimizer(c, 0.001, 2) {}

 protected:
  void begin_step(int64_t t) override { b1_power_ = std::pow(kBeta1, double(t + 1)); }
  void update(float* w, const float* g, float* const* s, int64_t n, double lr_t, float* before) override {
    const float scaled_lr = static_cast<float>(lr_t / (1.0 - b1_power_));
    const float c1 = static_cast<float>(1.0 - kBeta1), b2 = static_cast<float>(kBeta2);
    float* m = s[0];
    float* v = s[1];
    each_value(w, before, n, [&](int64_t k) {  // ResourceApplyAdaMax
      m[k] += (g[k] - m[k]) * c1;
      const float decayed = b2 * v[k], a = std::fabs(g[k]);
      v[k] = decayed < a ? a : decayed;  // Eigen cwiseMax
      w[k] -= scaled_lr * (m[k] / (v[k] + kEpsilon));
    });
  }

 private:
  double b1_power_ = 1.0;
};

class Nadam final : public Optimizer {
 public:
  explicit Nadam(const OptimizerConfig& c) : Optimizer(c, 0.001, 2) {}

 protected:
  static constexpr double kScheduleDecay = 0.004;
  bool decays_lr() const override { return false; }  // Keras' Nadam uses `decay` for its schedule
  void begin_step(int64_t t) override {
    const double step = double(t + 1);
    mu_t_ = kBeta1 * (1.0 - 0.5 * std::pow(0.96, kScheduleDecay * step));
    mu_next_ = kBeta1 * (1.0 - 0.5 * std::pow(0.96, kScheduleDecay * (step + 1.0)));
    m_schedule_ *= mu_t_;  // the momentum cache, updated once per step
    m_schedule_next_ = m_schedule_ * mu_next_;
    v_denominator_ = 1.0 - std::pow(kBeta2, step);
  }
  void update(float* w, const float* g, float* const* s, int64_t n, double lr_t, float* before) override {
    const float lr = static_cast<float>(lr_t);
    const float g_scale = static_cast<float>(1.0 / (1.0 - m_schedule_));
    const float m_scale = static_cast<float>(1.0 / (1.0 - m_schedule_next_));
    const float v_scale = static_cast<float>(1.0 / v_denominator_);
    const float b1 = static_cast<float>(kBeta1), b2 = static_cast<float>(kBeta2);
    const float one_minus_mu = static_cast<float>(1.0 - mu_t_), mu_next = static_cast<float>(mu_next_);
    float* m = s[0];
    float* v = s[1];
    each_value(w, before, n, [&](int64_t k) {
      const float g_prime = g[k] * g_scale;
      m[k] = b1 * m[k] + (1.0f - b1) * g[k];
      const float m_prime = m[k] * m_scale;
      v[k] = b2 * v[k] + (1.0f - b2) * (g[k] * g[k]);
      const float v_prime = v[k] * v_scale;
      const float m_bar = one_minus_mu * g_prime + mu_next * m_prime;
      w[k] -= lr * m_bar / (std::sqrt(v_prime) + kEpsilon);
    });
  }

 private:
  double mu_t_ = 0, mu_next_ = 0, m_schedule_ = 1.0, m_schedule_next_ = 1.0, v_denominator_ = 1.0;
};

}  // namespace

bool known(const std::string& n) {
  return n == "sgd" || n == "adam" || n == "rmsprop" || n == "adagrad" || n == "adadelta" || n == "adamax" ||
         n == "nadam";
}

std::unique_ptr<Optimizer> make_rule(const OptimizerConfig& c) {
  if (c.name == "sgd") return std::make_unique<Sgd>(c);
  if (c.name == "adam") return std::make_unique<Adam>(c);
  if (c.name == "rmsprop") return std::make_unique<RmsProp>(c);
  if (c.name == "adagrad") return std::make_unique<Adagrad>(c);
  if (c.name == "adadelta") return std::make_unique<Adadelta>(c);
  if (c.name == "adamax") return std::make_unique<Adamax>(c);
  if (c.name == "nadam") return std::make_unique<Nadam>(c);
  return nullptr;
}

}  // namespace dl::rt::opt_detail
