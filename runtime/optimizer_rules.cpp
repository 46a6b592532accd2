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
  void update(float* w, const float* g, float* const* s, int64_t n, double lr_t, float* before,
              stats::ParamSums* sums) override {
    const float lr = static_cast<float>(lr_t);
    if (config_.momentum <= 0) {  // ResourceApplyGradientDescent
      each_vector<0>(w, g, s, n, before, sums, [=](auto& x, auto gk, auto*) { x -= gk * lr; });
      return;
    }
    const float mu = static_cast<float>(config_.momentum);  // ResourceApplyKerasMomentum
    if (config_.nesterov) {
      each_vector<1>(w, g, s, n, before, sums, [=](auto& x, auto gk, auto* st) {
        st[0] = st[0] * mu - gk * lr;
        x += st[0] * mu - gk * lr;
      });
    } else {
      each_vector<1>(w, g, s, n, before, sums, [=](auto& x, auto gk, auto* st) {
        st[0] = st[0] * mu - gk * lr;
        x += st[0];
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
  void update(float* w, const float* g, float* const* s, int64_t n, double lr_t, float* before,
              stats::ParamSums* sums) override {
    const float alpha = static_cast<float>(lr_t * std::sqrt(1.0 - b2_power_) / (1.0 - b1_power_));
    const float c1 = static_cast<float>(1.0 - kBeta1), c2 = static_cast<float>(1.0 - kBeta2);
    each_vector<2>(w, g, s, n, before, sums, [=](auto& x, auto gk, auto* st) {
      auto& m = st[0];
      auto& v = st[1];
      m += (gk - m) * c1;
      v += (gk * gk - v) * c2;
      x -= (m * alpha) / (root(v) + kEpsilon);
    });
  }

 private:
  double b1_power_ = 1.0, b2_power_ = 1.0;
};

class RmsProp final : public Optimizer {
 public:
  explicit RmsProp(const OptimizerConfig& c) : Optimizer(c, 0.001, c.momentum > 0 ? 2 : 1) {}

 protected:
  void update(float* w, const float* g, float* const* s, int64_t n, double lr_t, float* before,
              stats::ParamSums* sums) override {
    const float lr = static_cast<float>(lr_t);
    const float rho = 0.9f, one_minus_rho = 1.0f - rho;
    if (config_.momentum <= 0) {  // keras rmsprop.py _resource_apply_dense, no momentum
      each_vector<1>(w, g, s, n, before, sums, [=](auto& x, auto gk, auto* st) {
        auto& ms = st[0];
        ms = rho * ms + one_minus_rho * (gk * gk);
        x -= lr * gk / (root(ms) + kEpsilon);
      });
      return;
    }
    const float mu = static_cast<float>(config_.momentum);  // ResourceApplyRMSProp
    each_vector<2>(w, g, s, n, before, sums, [=](auto& x, auto gk, auto* st) {
      auto& ms = st[0];
      auto& mom = st[1];
      ms += (gk * gk - ms) * one_minus_rho;
      mom = mom * mu + (gk * lr) / root(ms + kEpsilon);
      x -= mom;
    });
  }
};

class Adagrad final : public Optimizer {
 public:
  explicit Adagrad(const OptimizerConfig& c) : Optimizer(c, 0.01, 1) {}

 protected:
  float init_slot(int) const override { return 0.1f; }  // initial_accumulator_value
  void update(float* w, const float* g, float* const* s, int64_t n, double lr_t, float* before,
              stats::ParamSums* sums) override {
    const float lr = static_cast<float>(lr_t);
    each_vector<1>(w, g, s, n, before, sums, [=](auto& x, auto gk, auto* st) {  // ResourceApplyAdagradV2
      auto& acc = st[0];
      acc += gk * gk;
      x -= gk * lr / (root(acc) + kEpsilon);
    });
  }
};

class Adadelta final : public Optimizer {
 public:
  explicit Adadelta(const OptimizerConfig& c) : Optimizer(c, 1.0, 2) {}

 protected:
  void update(float* w, const float* g, float* const* s, int64_t n, double lr_t, float* before,
              stats::ParamSums* sums) override {
    const float lr = static_cast<float>(lr_t);
    const float rho = 0.95f, one_minus_rho = 1.0f - rho;
    each_vector<2>(w, g, s, n, before, sums, [=](auto& x, auto gk, auto* st) {  // ResourceApplyAdadelta
      auto& acc = st[0];
      auto& acc_update = st[1];
      acc = acc * rho + gk * gk * one_minus_rho;
      const auto u = root(acc_update + kEpsilon) / root(acc + kEpsilon) * gk;
      x -= u * lr;
      acc_update = acc_update * rho + u * u * one_minus_rho;
    });
  }
};

class Adamax final : public Optimizer {
 public:
  explicit Adamax(const OptimizerConfig& c) : Optimizer(c, 0.001, 2) {}

 protected:
  void begin_step(int64_t t) override { b1_power_ = std::pow(kBeta1, double(t + 1)); }
  void update(float* w, const float* g, float* const* s, int64_t n, double lr_t, float* before,
              stats::ParamSums* sums) override {
    const float scaled_lr = static_cast<float>(lr_t / (1.0 - b1_power_));
    const float c1 = static_cast<float>(1.0 - kBeta1), b2 = static_cast<float>(kBeta2);
    each_vector<2>(w, g, s, n, before, sums, [=](auto& x, auto gk, auto* st) {  // ResourceApplyAdaMax
      auto& m = st[0];
      auto& v = st[1];
      m += (gk - m) * c1;
      v = larger(magnitude(gk), b2 * v);  // Eigen cwiseMax
      x -= scaled_lr * (m / (v + kEpsilon));
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
  void update(float* w, const float* g, float* const* s, int64_t n, double lr_t, float* before,
              stats::ParamSums* sums) override {
    const float lr = static_cast<float>(lr_t);
    const float g_scale = static_cast<float>(1.0 / (1.0 - m_schedule_));
    const float m_scale = static_cast<float>(1.0 / (1.0 - m_schedule_next_));
    const float v_scale = static_cast<float>(1.0 / v_denominator_);
    const float b1 = static_cast<float>(kBeta1), b2 = static_cast<float>(kBeta2);
    const float one_minus_mu = static_cast<float>(1.0 - mu_t_), mu_next = static_cast<float>(mu_next_);
    each_vector<2>(w, g, s, n, before, sums, [=](auto& x, auto gk, auto* st) {
      auto& m = st[0];
      auto& v = st[1];
      const auto g_prime = gk * g_scale;
      m = b1 * m + (1.0f - b1) * gk;
      const auto m_prime = m * m_scale;
      v = b2 * v + (1.0f - b2) * (gk * gk);
      const auto v_prime = v * v_scale;
      const auto m_bar = one_minus_mu * g_prime + mu_next * m_prime;
      x -= lr * m_bar / (root(v_prime) + kEpsilon);
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
