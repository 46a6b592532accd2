// Losses against the Keras reference values of tests/fixtures/gen_loss_refs.py, their
// gradients against central differences, the clipping behaviour behind the classic faults,
// the metrics and the errors.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "converter/errors.h"
#include "runtime/loss.h"

using dl::rt::DType;
using dl::rt::Tensor;

namespace {

struct LossCase {
  std::string label, loss;
  bool from_logits = false;
  Tensor pred, target;
  double value = 0;
  std::vector<double> grad;
};

Tensor read_tensor(std::istringstream& in) {
  int rank = 0;
  in >> rank;
  dl::rt::Shape shape(static_cast<size_t>(rank));
  for (auto& d : shape) in >> d;
  std::vector<float> v(static_cast<size_t>(dl::rt::shape_numel(shape)));
  for (auto& x : v) {
    double d;
    in >> d;
    x = static_cast<float>(d);
  }
  return Tensor::floats(shape, v);
}

std::vector<LossCase> load_cases() {
  std::ifstream f(std::string(DL_SOURCE_DIR) + "/tests/fixtures/loss_refs.txt");
  REQUIRE(f.good());
  std::vector<LossCase> cases;
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string key;
    if (!(in >> key) || key[0] == '#') continue;
    if (key == "case") {
      cases.emplace_back();
      int logits = 0;
      in >> cases.back().label >> cases.back().loss >> logits;
      cases.back().from_logits = logits != 0;
    } else if (key == "pred") {
      cases.back().pred = read_tensor(in);
    } else if (key == "target") {
      cases.back().target = read_tensor(in);
    } else if (key == "loss") {
      in >> cases.back().value;
    } else if (key == "grad") {
      double d;
      while (in >> d) cases.back().grad.push_back(d);
    }
  }
  return cases;
}

constexpr double kEps = double(1e-7f), kHi = double(1.0f - 1e-7f);

// Distance (in pred units) from element k to the nearest clip boundary of the quantity
// the loss clips, so a finite-difference step never crosses one; +inf when nothing clips.
double clip_margin(const LossCase& c, int64_t k) {
  if (c.from_logits) return std::numeric_limits<double>::infinity();
  const double p = c.pred.f()[k];
  if (c.loss == "binary_crossentropy" || c.loss == "sparse_categorical_crossentropy")
    return std::min(std::fabs(p - kEps), std::fabs(p - kHi));
  if (c.loss == "categorical_crossentropy") {
    const int64_t w = c.pred.dim(-1), row = k / w;
    double s = 0;
    for (int64_t j = 0; j < w; ++j) s += c.pred.f()[row * w + j];
    return std::fabs(s) * std::min(std::fabs(p / s - kEps), std::fabs(p / s - kHi));
  }
  return std::numeric_limits<double>::infinity();
}

}  // namespace

TEST_CASE("losses match the Keras reference values and gradients") {
  const std::vector<LossCase> cases = load_cases();
  REQUIRE(cases.size() >= 20);
  for (const LossCase& c : cases) {
    INFO("case " << c.label);
    auto loss = dl::rt::make_loss(c.loss, c.from_logits);
    CHECK(loss->name() == c.loss);
    Tensor grad(DType::kFloat32, c.pred.shape());
    const double value = loss->compute(c.pred, c.target, &grad);
    CHECK(value == doctest::Approx(c.value).epsilon(1e-6));
    CHECK(loss->compute(c.pred, c.target, nullptr) == value);
    REQUIRE(static_cast<int64_t>(c.grad.size()) == grad.numel());
    for (int64_t k = 0; k < grad.numel(); ++k) {
      INFO("element " << k);
      if (c.grad[static_cast<size_t>(k)] == 0.0) {
        CHECK(grad.f()[k] == 0.0f);  // clipped (or exact kink): exactly zero, as in TF
      } else {
        CHECK(grad.f()[k] == doctest::Approx(c.grad[static_cast<size_t>(k)]).epsilon(2e-6));
      }
    }
  }
}

TEST_CASE("loss gradients equal central differences, zero where clipping is active") {
  for (LossCase c : load_cases()) {
    INFO("case " << c.label);
    auto loss = dl::rt::make_loss(c.loss, c.from_logits);
    Tensor grad(DType::kFloat32, c.pred.shape());
    loss->compute(c.pred, c.target, &grad);
    for (int64_t k = 0; k < c.pred.numel(); ++k) {
      INFO("element " << k);
      const float orig = c.pred.f()[k];
      // A power-of-two step is exact in float for these magnitudes, so the two evaluation
      // points are symmetric (which matters at kinks such as |e| at e = 0).
      const double h = std::exp2(std::floor(std::log2(std::min(1e-4, clip_margin(c, k) / 2))));
      c.pred.f()[k] = static_cast<float>(orig + h);
      const double up = loss->compute(c.pred, c.target, nullptr);
      const double x_up = c.pred.f()[k];
      c.pred.f()[k] = static_cast<float>(orig - h);
      const double down = loss->compute(c.pred, c.target, nullptr);
      const double x_down = c.pred.f()[k];
      c.pred.f()[k] = orig;
      if (x_up == x_down) continue;  // step below float resolution
      const double fd = (up - down) / (x_up - x_down);
      CHECK(double(grad.f()[k]) == doctest::Approx(fd).epsilon(1e-4).scale(1e-3));
    }
  }
}

TEST_CASE("softmax over one unit with categorical crossentropy: loss ~ 0, gradient exactly 0") {
  Tensor pred = Tensor::floats({8, 1}, std::vector<float>(8, 1.0f));
  Tensor target = Tensor::floats({8, 1}, std::vector<float>(8, 1.0f));
  Tensor grad(DType::kFloat32, {8, 1});
  for (const char* name : {"categorical_crossentropy", "sparse_categorical_crossentropy"}) {
    auto loss = dl::rt::make_loss(name, false);
    Tensor t = std::string(name) == "categorical_crossentropy" ? target : Tensor::floats({8}, std::vector<float>(8, 0.0f));
    const double v = loss->compute(pred, t, &grad);
    CHECK(v >= 0.0);
    CHECK(v < 2e-7);
    for (int64_t k = 0; k < 8; ++k) CHECK(grad.f()[k] == 0.0f);
  }
}

TEST_CASE("ReLU output 0 with binary crossentropy gives the clipped constant and no gradient") {
  auto loss = dl::rt::make_loss("binary_crossentropy", false);
  Tensor pred = Tensor::floats({4, 1}, {0, 0, 0, 0});
  Tensor grad(DType::kFloat32, {4, 1});
  // y = 1: -log(eps + eps); eps = float32(1e-7)
  const double v = loss->compute(pred, Tensor::floats({4, 1}, {1, 1, 1, 1}), &grad);
  CHECK(v == doctest::Approx(-std::log(2.0 * kEps)).epsilon(1e-12));
  CHECK(v == doctest::Approx(15.4249484).epsilon(1e-8));
  for (int64_t k = 0; k < 4; ++k) CHECK(grad.f()[k] == 0.0f);
  // Targets 0: -log(1 - eps + eps) = 0 exactly (up to rounding).
  CHECK(loss->compute(pred, Tensor::floats({4, 1}, {0, 0, 0, 0}), &grad) == doctest::Approx(0.0).scale(1.0));
}

TEST_CASE("sparse targets may be int64 ids, [B] or [B, 1]") {
  auto loss = dl::rt::make_loss("sparse_categorical_crossentropy", true);
  Tensor pred = Tensor::floats({2, 3}, {1, 2, 3, 0, 0, 5});
  const double a = loss->compute(pred, Tensor::ints({2}, {2, 0}), nullptr);
  const double b = loss->compute(pred, Tensor::floats({2, 1}, {2, 0}), nullptr);
  CHECK(a == b);
  auto cce = dl::rt::make_loss("categorical_crossentropy", true);
  CHECK(cce->compute(pred, Tensor::floats({2, 3}, {0, 0, 1, 1, 0, 0}), nullptr) == doctest::Approx(a).epsilon(1e-12));
}

TEST_CASE("loss errors name the option, the shapes or the bad class id") {
  try {
    dl::rt::make_loss("cross_entropy", false);
    FAIL("expected ConfigError");
  } catch (const dl::ConfigError& e) {
    const std::string m = e.what();
    CHECK(m.find("--loss") != std::string::npos);
    CHECK(m.find("cross_entropy") != std::string::npos);
    CHECK(m.find("sparse_categorical_crossentropy") != std::string::npos);
  }
  CHECK(dl::rt::make_loss("mean_squared_error", false)->name() == "mse");
  auto mse = dl::rt::make_loss("mse", false);
  CHECK_THROWS_AS(mse->compute(Tensor::floats({2, 3}, std::vector<float>(6)), Tensor::floats({3, 2}, std::vector<float>(6)), nullptr),
                  dl::ShapeError);
  Tensor small_grad(DType::kFloat32, {2});
  CHECK_THROWS_AS(mse->compute(Tensor::floats({2, 3}, std::vector<float>(6)), Tensor::floats({2, 3}, std::vector<float>(6)), &small_grad),
                  dl::ShapeError);
  auto scce = dl::rt::make_loss("sparse_categorical_crossentropy", false);
  Tensor pred = Tensor::floats({2, 3}, {0.2f, 0.3f, 0.5f, 0.1f, 0.1f, 0.8f});
  // Invalid class ids (reported by the analysis as a labels fault) are skipped: the row
  // contributes neither loss nor gradient.
  Tensor g(DType::kFloat32, {2, 3});
  const double only_first = scce->compute(pred, Tensor::floats({2}, {1, 3}), &g);
  CHECK(only_first == doctest::Approx(-std::log(0.3) / 2).epsilon(1e-5));
  for (int k = 3; k < 6; ++k) CHECK(g.f()[k] == 0.0f);
  CHECK(scce->compute(pred, Tensor::floats({2}, {1, 0.5f}), nullptr) == doctest::Approx(only_first));
  CHECK_THROWS_AS(scce->compute(pred, Tensor::floats({3}, {1, 0, 0}), nullptr), dl::ShapeError);
}

TEST_CASE("metrics: Keras' accuracy for the loss, or mae for regression targets") {
  Tensor probs = Tensor::floats({3, 3}, {0.7f, 0.2f, 0.1f, 0.3f, 0.3f, 0.4f, 0.5f, 0.5f, 0.0f});
  Tensor onehot = Tensor::floats({3, 3}, {1, 0, 0, 0, 1, 0, 1, 0, 0});
  auto cat = dl::rt::make_metric("categorical_crossentropy", false, true);
  CHECK(cat->name() == "accuracy");
  CHECK(cat->higher_is_better());
  CHECK(cat->compute(probs, onehot) == doctest::Approx(2.0 / 3.0));  // ties: first maximum
  auto sparse = dl::rt::make_metric("sparse_categorical_crossentropy", false, true);
  CHECK(sparse->compute(probs, Tensor::floats({3}, {0, 2, 1})) == doctest::Approx(2.0 / 3.0));
  CHECK(sparse->compute(probs, Tensor::ints({3, 1}, {0, 2, 1})) == doctest::Approx(2.0 / 3.0));

  Tensor p1 = Tensor::floats({4, 1}, {0.9f, 0.5f, 0.2f, -1.0f});
  Tensor y1 = Tensor::floats({4, 1}, {1, 1, 1, 0});
  CHECK(dl::rt::make_metric("binary_crossentropy", false, true)->compute(p1, y1) == doctest::Approx(0.5));
  // From logits the threshold is 0: 0.5 and 0.2 now count as class 1.
  CHECK(dl::rt::make_metric("binary_crossentropy", true, true)->compute(p1, y1) == doctest::Approx(1.0));
  // Width 1 is binary accuracy whatever the loss (Keras decides by shape).
  CHECK(dl::rt::make_metric("categorical_crossentropy", false, true)->compute(p1, y1) == doctest::Approx(0.5));
  CHECK(dl::rt::make_metric("mse", false, true)->compute(p1, y1) == doctest::Approx(0.5));
  CHECK(dl::rt::make_metric("hinge", false, true)->compute(probs, onehot) == doctest::Approx(2.0 / 3.0));

  auto mae = dl::rt::make_metric("mse", false, false);
  CHECK(mae->name() == "mae");
  CHECK_FALSE(mae->higher_is_better());
  CHECK(mae->compute(p1, Tensor::floats({4, 1}, {1, 0, 0, 0})) == doctest::Approx((0.1 + 0.5 + 0.2 + 1.0) / 4));
  CHECK_THROWS_AS(dl::rt::make_metric("nope", false, true), dl::ConfigError);
}

TEST_CASE("the values of Keras' own documentation examples") {
  // tf.keras.metrics.BinaryCrossentropy docstring: y [1, 0, 1, 0], p [1, 1, 1, 0] -> 3.833
  auto bce = dl::rt::make_loss("binary_crossentropy", false);
  CHECK(bce->compute(Tensor::floats({4, 1}, {1, 1, 1, 0}), Tensor::floats({4, 1}, {1, 0, 1, 0}), nullptr) ==
        doctest::Approx(3.833).epsilon(1e-3));
  // tf.keras.backend.categorical_crossentropy docstring: rows -> [0.10536 0.11653 0.06188]
  auto cce = dl::rt::make_loss("categorical_crossentropy", false);
  const float rows[3][3] = {{.9f, .05f, .05f}, {.05f, .89f, .06f}, {.05f, .01f, .94f}};
  const double expected[3] = {0.10536, 0.11653, 0.06188};
  for (int r = 0; r < 3; ++r) {
    std::vector<float> onehot(3, 0.0f);
    onehot[size_t(r)] = 1.0f;
    const double v = cce->compute(Tensor::floats({1, 3}, {rows[r][0], rows[r][1], rows[r][2]}), Tensor::floats({1, 3}, onehot), nullptr);
    CHECK(v == doctest::Approx(expected[r]).epsilon(5e-5));
  }
}
