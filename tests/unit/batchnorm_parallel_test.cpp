// BatchNormalization's channels on the compute threads: training-mode forward and
// backward give the same bits on 1 and 2 threads, and the values of the serial formula.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "runtime/attrs.h"
#include "runtime/ops/batch_norm_sums.h"
#include "tests/unit/op_harness.h"
#include "tests/unit/parallel_test_util.h"

namespace {

using dl::rt::Tensor;
using dl::test::OpRun;
using dl::test::random_values;

void check_batchnorm(int64_t n, int64_t c, int64_t h, int64_t w) {
  const int64_t inner = h * w;
  const std::vector<float> x = random_values(n * c * inner, 7), dyv = random_values(n * c * inner, 8);
  std::vector<float> scale = random_values(c, 9), bias = random_values(c, 10);
  std::vector<std::vector<float>> by_threads[2];
  dl::test::on_two_then_one([&](int threads) {
    auto node = dl::rt::sample_node("BatchNormalization", 5, 3, {{"training_mode", dl::rt::attr_i(1)}}, 15);
    OpRun run(node,
              {Tensor::floats({n, c, h, w}, x), Tensor::floats({c}, scale), Tensor::floats({c}, bias),
               Tensor::floats({c}, std::vector<float>(size_t(c), 0.0f)),
               Tensor::floats({c}, std::vector<float>(size_t(c), 1.0f))},
              true);
    run.forward();
    const Tensor dy = Tensor::floats({n, c, h, w}, dyv);
    std::vector<Tensor> d = run.backward({&dy, nullptr, nullptr}, {true, true, true});
    by_threads[threads - 1] = {run.outputs[0].fvec(), run.outputs[1].fvec(), d[0].fvec(), d[1].fvec(), d[2].fvec()};
  });
  for (size_t i = 0; i < by_threads[0].size(); ++i) CHECK(by_threads[0][i] == by_threads[1][i]);
  // Channel 5 by the formula: y = (x - mean) / sqrt(var + 1e-5) * scale + bias, dB = sum dY.
  const int64_t ch = 5;
  double s = 0, ss = 0, db = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < inner; ++k) s += x[size_t((i * c + ch) * inner + k)];
  const double mean = s / double(n * inner);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < inner; ++k) {
      const double dv = x[size_t((i * c + ch) * inner + k)] - mean;
      ss += dv * dv;
      db += dyv[size_t((i * c + ch) * inner + k)];
    }
  const double invstd = 1.0 / std::sqrt(ss / double(n * inner) + 1e-5);
  const size_t at = size_t((3 * c + ch) * inner + 11 % inner);
  CHECK(by_threads[0][0][at] == doctest::Approx((x[at] - mean) * invstd * scale[ch] + bias[ch]).epsilon(1e-5));
  CHECK(by_threads[0][4][size_t(ch)] == doctest::Approx(db).epsilon(1e-4));
  // dScale = sum dY * xhat.
  double dscale = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < inner; ++k) {
      const size_t j = size_t((i * c + ch) * inner + k);
      dscale += double(dyv[j]) * (x[j] - mean) * invstd;
    }
  CHECK(by_threads[0][3][size_t(ch)] == doctest::Approx(dscale).epsilon(1e-4));
  // dX = scale * invstd * (dY - mean(dY) - xhat * mean(dY * xhat)).
  const double count = double(n * inner), xhat = (x[at] - mean) * invstd;
  const double dx = scale[ch] * invstd * (dyv[at] - db / count - xhat * dscale / count);
  CHECK(by_threads[0][2][at] == doctest::Approx(dx).epsilon(1e-4).scale(1e-3));
}

}  // namespace

TEST_CASE("BatchNormalization training mode: the same bits on 1 and 2 threads, and the batch statistics") {
  check_batchnorm(16, 64, 8, 8);  // 65,536 values: the size from which channels go to the helpers
  check_batchnorm(16, 1024, 2, 2);  // rows shorter than sum_of's lanes (mobilenet_v2's last maps)
  check_batchnorm(16, 4096, 1, 1);
  check_batchnorm(4, 24, 3, 3);  // short rows of a length without their own loops (bn_short::with_inner)
}

namespace {

// The per-channel loops BatchNormalization ran on rows shorter than 16 values before
// they went to runtime/ops/batch_norm_short.h (session 27): the reference the short path
// must match bit for bit. Returns Y, dX, dScale, dB for dY.
std::vector<std::vector<float>> short_rows_reference(int64_t n, int64_t c, int64_t inner, bool batch_stats,
                                                     const std::vector<float>& x, const std::vector<float>& dy,
                                                     const std::vector<float>& scale, const std::vector<float>& bias,
                                                     const std::vector<float>& in_mean,
                                                     const std::vector<float>& in_var) {
  std::vector<float> y(x.size()), dx(x.size()), dscale(static_cast<size_t>(c)), dbias(static_cast<size_t>(c));
  const auto at = [&](int64_t i, int64_t ch, int64_t k) { return size_t((i * c + ch) * inner + k); };
  for (int64_t ch = 0; ch < c; ++ch) {
    const double count = double(n * inner);
    double mean = in_mean[size_t(ch)], var = in_var[size_t(ch)];
    if (batch_stats) {
      double s = 0.0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t k = 0; k < inner; ++k) s += double(x[at(i, ch, k)]);
      mean = count > 0 ? s / count : 0.0;
      const float m = float(mean);
      double ss = 0.0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t k = 0; k < inner; ++k) {
          const double d = double(x[at(i, ch, k)]) - m;
          ss += d * d;
        }
      var = count > 0 ? ss / count : 0.0;
    }
    const float mean_f = float(mean), invstd = float(1.0 / std::sqrt(var + 1e-5f));
    const float a = scale[size_t(ch)] * invstd, b = bias[size_t(ch)] - mean_f * a;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < inner; ++k) y[at(i, ch, k)] = x[at(i, ch, k)] * a + b;
    double sd = 0.0, sxd = 0.0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < inner; ++k) {
        sd += dy[at(i, ch, k)];
        sxd += double(dy[at(i, ch, k)]) * (x[at(i, ch, k)] - mean_f);
      }
    const float s = float(sd), sx = float(sxd) * invstd, cnt = float(n * inner);
    dscale[size_t(ch)] = 0.0f + sx;
    dbias[size_t(ch)] = 0.0f + s;
    const float ms = batch_stats && cnt > 0 ? s / cnt : 0.0f, msx = batch_stats && cnt > 0 ? sx / cnt * invstd : 0.0f;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < inner; ++k)
        dx[at(i, ch, k)] = 0.0f + a * (dy[at(i, ch, k)] - ms - (x[at(i, ch, k)] - mean_f) * msx);
  }
  return {y, dx, dscale, dbias};
}

}  // namespace

TEST_CASE("BatchNormalization over rows shorter than 16 values: the bits of the former per-channel loops") {
  for (const int64_t inner : {1, 4, 9}) {
    for (const bool training : {true, false}) {
      CAPTURE(inner);
      CAPTURE(training);
      const int64_t n = 6, c = 37;
      const std::vector<float> x = random_values(n * c * inner, 21), dy = random_values(n * c * inner, 22),
                               scale = random_values(c, 23), bias = random_values(c, 24), in_mean = random_values(c, 25);
      std::vector<float> in_var = random_values(c, 26);
      for (float& v : in_var) v = 0.5f + std::fabs(v);
      const std::vector<int64_t> shape = inner == 9 ? std::vector<int64_t>{n, c, 3, 3}
                                                    : std::vector<int64_t>{n, c, inner == 4 ? 2 : 1, inner == 4 ? 2 : 1};
      auto node = dl::rt::sample_node("BatchNormalization", 5, 1, {{"training_mode", dl::rt::attr_i(training ? 1 : 0)}}, 15);
      OpRun run(node,
                {Tensor::floats(shape, x), Tensor::floats({c}, scale), Tensor::floats({c}, bias),
                 Tensor::floats({c}, in_mean), Tensor::floats({c}, in_var)},
                training);
      run.forward();
      const Tensor dyt = Tensor::floats(shape, dy);
      const std::vector<Tensor> d = run.backward({&dyt}, {true, true, true});
      const auto want = short_rows_reference(n, c, inner, training, x, dy, scale, bias, in_mean, in_var);
      CHECK(run.outputs[0].fvec() == want[0]);
      CHECK(d[0].fvec() == want[1]);
      CHECK(d[1].fvec() == want[2]);
      CHECK(d[2].fvec() == want[3]);
      // As the gradients' first writer (BwdCtx::assign, as in training): the same bits.
      const std::vector<Tensor> first = run.backward({&dyt}, {true, true, true}, 7);
      CHECK(first[0].fvec() == want[1]);
      CHECK(first[1].fvec() == want[2]);
      CHECK(first[2].fvec() == want[3]);
      // Adding onto a gradient another reader wrote: that gradient plus dX (each value
      // rounded once or twice: the compiler may contract the product and the sum).
      run.din_fill = 0.5f;
      const std::vector<Tensor> added = run.backward({&dyt}, {true, false, false});
      for (size_t i = 0; i < want[1].size(); ++i) CHECK(added[0].f()[i] == doctest::Approx(0.5f + want[1][i]).epsilon(1e-6));
    }
  }
}

// Without batch statistics, with light sinks, the loop that writes Y = X * a + b sums it
// (bn_sums::normalize_summing). A shift b of -0 reaches the vector lanes as -0, as the
// scalar tail adds it: -0 * 1 + -0 is -0 in every element. (Broadcast as 0 + b, the shift
// was +0 in the vector lanes, which gave +0 in the body and -0 in the tail.)
TEST_CASE("BatchNormalization's summing loop: a shift of -0 gives the bits of the scalar formula in every lane") {
  const int64_t rows = 2, inner = 37;
  const std::vector<float> x(size_t(rows * inner), -0.0f);
  std::vector<float> y(x.size(), 1.0f);
  dl::rt::stats::Sums ys, xs;
  dl::rt::bn_sums::normalize_summing(x.data(), y.data(), rows, inner, inner, 1.0f, -0.0f, &ys, &xs);
  for (size_t k = 0; k < y.size(); ++k) {
    INFO("element " << k);
    CHECK(y[k] == 0.0f);
    CHECK(std::signbit(y[k]));
  }
  CHECK(ys.sum == 0.0);
  CHECK(xs.sum == 0.0);
}
