// Optimizers: the first three updates of each rule against the Keras reference values of
// tests/fixtures/gen_loss_refs.py, decay, clipping and the configuration errors.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "converter/errors.h"
#include "runtime/optimizer.h"
#include "runtime/train_config.h"

using dl::rt::DType;
using dl::rt::OptimizerConfig;
using dl::rt::Param;
using dl::rt::Tensor;

namespace {

struct OptCase {
  std::string label;
  OptimizerConfig config;
  std::vector<std::vector<double>> steps;
};

struct OptRefs {
  std::vector<double> w0, a, c;
  std::vector<OptCase> cases;
};

std::vector<double> read_values(std::istringstream& in) {
  std::vector<double> v;
  double d;
  while (in >> d) v.push_back(d);
  return v;
}

std::optional<double> read_optional(std::istringstream& in) {
  std::string s;
  in >> s;
  if (s == "none" || s == "default") return std::nullopt;
  return std::stod(s);
}

OptRefs load_refs() {
  std::ifstream f(std::string(DL_SOURCE_DIR) + "/tests/fixtures/optimizer_refs.txt");
  REQUIRE(f.good());
  OptRefs refs;
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string key;
    if (!(in >> key) || key[0] == '#') continue;
    if (key == "w0") refs.w0 = read_values(in);
    if (key == "a") refs.a = read_values(in);
    if (key == "c") refs.c = read_values(in);
    if (key == "opt") {
      OptCase oc;
      int nesterov = 0;
      in >> oc.label >> oc.config.name;
      oc.config.learning_rate = read_optional(in);
      in >> oc.config.momentum >> nesterov >> oc.config.decay;
      oc.config.nesterov = nesterov != 0;
      oc.config.clipnorm = read_optional(in);
      oc.config.clipvalue = read_optional(in);
      refs.cases.push_back(oc);
    }
    if (key == "step") {
      int t;
      in >> t;
      refs.cases.back().steps.push_back(read_values(in));
    }
  }
  return refs;
}

OptimizerConfig named(const char* name) {
  OptimizerConfig c;
  c.name = name;
  return c;
}

// One float parameter and its gradient buffer, as the execution graph would hold them.
struct Holder {
  Tensor w, g;
  std::vector<Param> params;
  explicit Holder(const std::vector<float>& values) {
    w = Tensor::floats({static_cast<int64_t>(values.size())}, values);
    g.reset(DType::kFloat32, w.shape());
    params.push_back(Param{"w", &w, &g});
  }
};

}  // namespace

TEST_CASE("optimizers: first three updates match the Keras rules") {
  const OptRefs refs = load_refs();
  REQUIRE(refs.cases.size() >= 14);
  for (const OptCase& oc : refs.cases) {
    INFO("case " << oc.label);
    auto opt = dl::rt::make_optimizer(oc.config);
    Holder h({float(refs.w0[0]), float(refs.w0[1]), float(refs.w0[2])});
    REQUIRE(oc.steps.size() == 3);
    for (size_t t = 0; t < oc.steps.size(); ++t) {
      for (int k = 0; k < 3; ++k)
        h.g.f()[k] = static_cast<float>(2.0 * refs.a[size_t(k)] * (double(h.w.f()[k]) - refs.c[size_t(k)]));
      opt->step(h.params);
      for (int k = 0; k < 3; ++k) {
        INFO("step " << t + 1 << " element " << k);
        CHECK(double(h.w.f()[k]) == doctest::Approx(oc.steps[t][size_t(k)]).epsilon(2e-6));
      }
    }
    CHECK(opt->iterations() == 3);
  }
}

TEST_CASE("optimizer defaults follow Keras") {
  const std::pair<const char*, double> defaults[] = {{"sgd", 0.01},    {"adam", 0.001},   {"rmsprop", 0.001},
                                                     {"adagrad", 0.01}, {"adadelta", 1.0}, {"adamax", 0.001},
                                                     {"nadam", 0.001}};
  for (const auto& [name, lr] : defaults) {
    OptimizerConfig c;
    c.name = name;
    auto opt = dl::rt::make_optimizer(c);
    CHECK(opt->name() == name);
    CHECK(opt->learning_rate() == lr);
    CHECK(opt->iterations() == 0);
  }
  OptimizerConfig upper;
  upper.name = "RMSprop";
  CHECK(dl::rt::make_optimizer(upper)->name() == "rmsprop");
  CHECK(dl::rt::make_optimizer(OptimizerConfig{})->name() == "rmsprop");
}

TEST_CASE("time-based decay: lr / (1 + decay * iterations); nadam ignores it like Keras") {
  OptimizerConfig c;
  c.name = "sgd";
  c.learning_rate = 0.1;
  c.decay = 0.5;
  auto opt = dl::rt::make_optimizer(c);
  Holder h({1.0f});
  CHECK(opt->current_learning_rate() == doctest::Approx(0.1));
  h.g.f()[0] = 1.0f;
  opt->step(h.params);
  CHECK(h.w.f()[0] == doctest::Approx(0.9));
  CHECK(opt->current_learning_rate() == doctest::Approx(0.1 / 1.5));
  opt->step(h.params);
  CHECK(h.w.f()[0] == doctest::Approx(0.9 - 0.1 / 1.5));
  CHECK(opt->current_learning_rate() == doctest::Approx(0.05));
  CHECK(opt->learning_rate() == 0.1);

  c.name = "nadam";
  auto nadam = dl::rt::make_optimizer(c);
  nadam->step(h.params);
  CHECK(nadam->current_learning_rate() == 0.1);
}

TEST_CASE("clipnorm is per parameter tensor, clipvalue element-wise; gradients stay untouched") {
  OptimizerConfig c;
  c.name = "sgd";
  c.learning_rate = 1.0;
  c.clipnorm = 1.0;
  auto opt = dl::rt::make_optimizer(c);
  Tensor w1 = Tensor::floats({2}, {0, 0}), g1 = Tensor::floats({2}, {3, 4});      // norm 5: scaled to 1
  Tensor w2 = Tensor::floats({2}, {0, 0}), g2 = Tensor::floats({2}, {0.3f, 0.4f});  // norm 0.5: kept
  std::vector<Param> params{{"a", &w1, &g1}, {"b", &w2, &g2}};
  opt->step(params);
  CHECK(w1.f()[0] == doctest::Approx(-0.6));
  CHECK(w1.f()[1] == doctest::Approx(-0.8));
  CHECK(w2.f()[0] == doctest::Approx(-0.3));  // a global norm would have scaled this too
  CHECK(w2.f()[1] == doctest::Approx(-0.4));
  CHECK(g1.f()[0] == 3.0f);

  c.clipnorm.reset();
  c.clipvalue = 0.5;
  auto clipper = dl::rt::make_optimizer(c);
  Tensor w = Tensor::floats({3}, {0, 0, 0}), g = Tensor::floats({3}, {-2.0f, 0.25f, 7.0f});
  std::vector<Param> one{{"w", &w, &g}};
  clipper->step(one);
  CHECK(w.f()[0] == doctest::Approx(0.5));
  CHECK(w.f()[1] == doctest::Approx(-0.25));
  CHECK(w.f()[2] == doctest::Approx(-0.5));
  CHECK(g.f()[2] == 7.0f);
}

TEST_CASE("optimizer state is keyed by position: a changed parameter list is an internal error") {
  auto opt = dl::rt::make_optimizer(named("adam"));
  Holder h({1.0f, 2.0f});
  opt->step(h.params);
  Tensor w3 = Tensor::floats({3}, {0, 0, 0}), g3(DType::kFloat32, {3});
  std::vector<Param> other{{"w3", &w3, &g3}};
  CHECK_THROWS_AS(opt->step(other), dl::InternalError);
  other.push_back(h.params[0]);
  CHECK_THROWS_AS(opt->step(other), dl::InternalError);
  std::vector<Param> no_grad{{"w", &h.w, nullptr}};
  CHECK_THROWS_AS(opt->step(no_grad), dl::InternalError);
}

TEST_CASE("optimizer configuration errors name the option") {
  auto expect = [](OptimizerConfig c, const std::string& option) {
    try {
      dl::rt::make_optimizer(c);
      FAIL("expected ConfigError for " << option);
    } catch (const dl::ConfigError& e) {
      CHECK(std::string(e.what()).find(option) != std::string::npos);
    }
  };
  OptimizerConfig c;
  c.name = "adamw";
  expect(c, "--optimizer");
  try {
    dl::rt::make_optimizer(c);
  } catch (const dl::ConfigError& e) {
    CHECK(std::string(e.what()).find("sgd, adam, rmsprop") != std::string::npos);
  }
  c = OptimizerConfig{};
  c.learning_rate = -0.1;
  expect(c, "--lr");
  c.learning_rate = NAN;
  expect(c, "--lr");
  c = named("sgd");
  c.momentum = 1.0;
  expect(c, "--momentum");
  c.momentum = -0.1;
  expect(c, "--momentum");
  c = named("adam");
  c.momentum = 0.9;
  expect(c, "--momentum");
  c = named("rmsprop");
  c.nesterov = true;
  expect(c, "--nesterov");
  c = named("sgd");
  c.decay = -1;
  expect(c, "decay");
  c = named("sgd");
  c.clipnorm = 0.0;
  expect(c, "clipnorm");
  c = named("sgd");
  c.clipvalue = -1.0;
  expect(c, "clipvalue");
  c = named("sgd");
  c.learning_rate = 0.0;  // a zero learning rate is a fault to diagnose, not a bad option
  CHECK_NOTHROW(dl::rt::make_optimizer(c));
}

TEST_CASE("the values of Keras' own optimizer documentation examples") {
  // var = 10, loss = var^2 / 2 (gradient = var); one minimize() step each.
  auto one_step = [](OptimizerConfig c) {
    auto opt = dl::rt::make_optimizer(c);
    Holder h({10.0f});
    h.g.f()[0] = h.w.f()[0];
    opt->step(h.params);
    return double(h.w.f()[0]);
  };
  OptimizerConfig c = named("rmsprop");
  c.learning_rate = 0.1;
  CHECK(one_step(c) == doctest::Approx(9.683772).epsilon(1e-6));
  c = named("adam");
  c.learning_rate = 0.1;
  CHECK(one_step(c) == doctest::Approx(9.9).epsilon(1e-6));
  c = named("nadam");
  c.learning_rate = 0.2;
  CHECK(std::fabs(one_step(c) - 9.8) < 0.05);  // the docstring prints "{:.1f}": 9.8 (9.78871)
  // SGD(learning_rate=0.1, momentum=0.9), var = 1: steps of 0.1, then 0.18.
  c = named("sgd");
  c.learning_rate = 0.1;
  c.momentum = 0.9;
  auto opt = dl::rt::make_optimizer(c);
  Holder h({1.0f});
  float before = h.w.f()[0];
  for (double expected : {0.1, 0.18}) {
    h.g.f()[0] = h.w.f()[0];
    opt->step(h.params);
    CHECK(double(before - h.w.f()[0]) == doctest::Approx(expected).epsilon(1e-5));
    before = h.w.f()[0];
  }
}

TEST_CASE("an optimizer setting from the model's metadata is named by its key, not by a flag") {
  const auto c = dl::rt::config_from_metadata(
      {{"deeplocalize.optimizer", "adam"}, {"deeplocalize.momentum", "0.9"}, {"deeplocalize.loss", "mse"}}, "m.onnx");
  try {
    dl::rt::make_optimizer(c.optimizer);
    FAIL("adam with momentum must be refused");
  } catch (const dl::ConfigError& e) {
    const std::string what = e.what();
    CHECK(what.find("m.onnx: model metadata 'deeplocalize.momentum'") != std::string::npos);
    CHECK(what.find("--momentum") == std::string::npos);
    CHECK(what.find("adam optimizer has no momentum") != std::string::npos);
  }
}
