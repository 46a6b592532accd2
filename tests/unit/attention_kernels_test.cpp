// The attention paths (issue 17): MatMul over batch dimensions (products spread over the
// threads, broadcast batches accumulating their gradient in batch order), Transpose's
// row-copy and tiled walks (forward and the inverse walk of backward), and Softmax /
// LogSoftmax rows on packet exp. Values against a double reference; bit-identical
// results for 1 and 2 threads.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "runtime/attrs.h"
#include "runtime/ops/gemm_kernel.h"
#include "tests/unit/op_harness.h"
#include "tests/unit/parallel_test_util.h"

namespace {

using dl::rt::Shape;
using dl::rt::Tensor;
using dl::test::OpRun;
using dl::test::on_two_then_one;
using dl::test::random_values;

// Row-major index of `idx` in `dims`, broadcasting size-1 dims (idx right-aligned).
int64_t bcast_index(const Shape& dims, const std::vector<int64_t>& idx) {
  int64_t off = 0;
  const size_t shift = idx.size() - dims.size();
  for (size_t d = 0; d < dims.size(); ++d) off = off * dims[d] + (dims[d] == 1 ? 0 : idx[d + shift]);
  return off;
}

struct MatMulRef {
  std::vector<double> y, da, db;
};

// numpy.matmul of A [..., M, K] and B [..., K, N] (rank >= 3 both, batch dims broadcast),
// and the gradients for dY.
MatMulRef matmul_ref(const Shape& as, const std::vector<float>& a, const Shape& bs, const std::vector<float>& b,
                     const Shape& ys, const std::vector<float>& dy) {
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  const Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2), yb(ys.begin(), ys.end() - 2);
  int64_t batches = 1;
  for (int64_t d : yb) batches *= d;
  MatMulRef r;
  r.y.assign(static_cast<size_t>(batches * m * n), 0.0);
  r.da.assign(a.size(), 0.0);
  r.db.assign(b.size(), 0.0);
  std::vector<int64_t> idx(yb.size(), 0);
  for (int64_t t = 0; t < batches; ++t) {
    int64_t rem = t;
    for (size_t d = yb.size(); d-- > 0;) idx[d] = rem % yb[d], rem /= yb[d];
    const int64_t ao = bcast_index(ab, idx) * m * k, bo = bcast_index(bb, idx) * k * n, yo = t * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) s += double(a[size_t(ao + i * k + p)]) * b[size_t(bo + p * n + j)];
        r.y[size_t(yo + i * n + j)] = s;
        const double g = dy[size_t(yo + i * n + j)];
        for (int64_t p = 0; p < k; ++p) {
          r.da[size_t(ao + i * k + p)] += g * b[size_t(bo + p * n + j)];
          r.db[size_t(bo + p * n + j)] += g * a[size_t(ao + i * k + p)];
        }
      }
  }
  return r;
}

void check_close(const std::vector<float>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    REQUIRE(std::fabs(got[i] - want[i]) <= tol * (1.0 + std::fabs(want[i])));
  }
}

// MatMul forward and backward on 2 threads, then 1: reference values, the same bits.
void check_matmul(const Shape& as, const Shape& bs, unsigned seed) {
  int64_t na = 1, nb = 1;
  for (int64_t d : as) na *= d;
  for (int64_t d : bs) nb *= d;
  const std::vector<float> av = random_values(na, seed), bv = random_values(nb, seed + 1);
  std::vector<float> y[2], da[2], db[2];
  on_two_then_one([&](int threads) {
    OpRun run(dl::rt::sample_node("MatMul", 2, 1, {}, 13), {Tensor::floats(as, av), Tensor::floats(bs, bv)}, true);
    run.forward();
    const Shape ys = run.outputs[0].shape();
    const Tensor dy = Tensor::floats(ys, random_values(run.outputs[0].numel(), seed + 2));
    std::vector<Tensor> g = run.backward({&dy}, {true, true});
    const int u = threads - 1;
    y[u] = run.outputs[0].fvec();
    da[u] = g[0].fvec();
    db[u] = g[1].fvec();
    if (threads == 1) {
      const MatMulRef r = matmul_ref(as, av, bs, bv, ys, dy.fvec());
      // float sums of up to 40 * 64 terms of magnitude <= 1
      check_close(y[u], r.y, 1e-5);
      check_close(da[u], r.da, 1e-4);
      check_close(db[u], r.db, 1e-4);
    }
  });
  CHECK(y[0] == y[1]);
  CHECK(da[0] == da[1]);
  CHECK(db[0] == db[1]);
}

// y[o] = x[perm view]; the reference of Transpose forward (and of backward: dX[i] = dY[o]).
std::vector<float> transpose_ref(const Shape& in, const std::vector<int64_t>& perm, const std::vector<float>& x) {
  const size_t r = in.size();
  std::vector<int64_t> st(r, 1);
  for (size_t k = r; k-- > 1;) st[k - 1] = st[k] * in[k];
  Shape out(r);
  for (size_t k = 0; k < r; ++k) out[k] = in[size_t(perm[k])];
  std::vector<float> y(x.size());
  std::vector<int64_t> idx(r, 0);
  for (size_t o = 0; o < y.size(); ++o) {
    int64_t rem = int64_t(o), off = 0;
    for (size_t k = r; k-- > 0;) idx[k] = rem % out[k], rem /= out[k];
    for (size_t k = 0; k < r; ++k) off += idx[k] * st[size_t(perm[k])];
    y[o] = x[size_t(off)];
  }
  return y;
}

}  // namespace

TEST_CASE("MatMul batched: attention's head products, reference values, the same bits on 1 and 2 threads") {
  // 64 products of 64x32x64 (above the size where the batch goes to two threads).
  dl::rt::set_helper_policy(dl::rt::HelperPolicy::kAlways);
  dl::rt::set_compute_threads(2);
  REQUIRE(dl::rt::gemm_threads(64 * 64, 64, 32) == 2);
  dl::rt::set_compute_threads(0);
  dl::rt::set_helper_policy(dl::rt::HelperPolicy::kAuto);
  check_matmul({64, 64, 32}, {64, 32, 64}, 1);
  check_matmul({64, 64, 64}, {64, 64, 32}, 4);
}

TEST_CASE("MatMul batched: odd shapes and broadcast batches (gradients summed over the broadcast products)") {
  check_matmul({3, 1, 5, 7}, {1, 4, 7, 6}, 11);   // both broadcast
  check_matmul({2, 3, 9, 17}, {3, 17, 13}, 21);   // B broadcast over A's first batch dim
  check_matmul({1, 33, 19}, {40, 19, 31}, 31);    // A broadcast over 40 products
  // Large enough for two threads: dA (dB) is one group of 40 products, summed in order.
  check_matmul({1, 64, 48}, {40, 48, 64}, 41);
  check_matmul({40, 64, 48}, {1, 48, 64}, 51);
}

TEST_CASE("Transpose: row copies, tiles and the generic walk, forward and backward, against a reference") {
  struct Case {
    Shape in;
    std::vector<int64_t> perm;
  };
  const Case cases[] = {
      {{64, 16, 128}, {1, 0, 2}},     // head merge: row copies
      {{17, 5, 33}, {1, 0, 2}},       // odd sizes
      {{64, 64, 32}, {1, 2, 0}},      // K for the scores: tiles
      {{17, 19, 35}, {1, 2, 0}},      // tiles with partial edges
      {{37, 23}, {1, 0}},             // a weight's transpose
      {{2, 1, 3, 1, 5}, {4, 1, 0, 3, 2}},  // size-1 axes dropped
      {{3, 4, 5, 6}, {0, 2, 1, 3}},   // two middle axes swapped
      {{3, 4, 5, 6}, {3, 2, 1, 0}},   // reversed
      {{4, 6, 5}, {0, 1, 2}},         // identity: one merged run
  };
  for (const Case& c : cases) {
    int64_t n = 1;
    for (int64_t d : c.in) n *= d;
    const std::vector<float> xv = random_values(n, 7);
    OpRun run(dl::rt::sample_node("Transpose", 1, 1, {{"perm", dl::rt::attr_ints(c.perm)}}), {Tensor::floats(c.in, xv)},
              true);
    run.forward();
    INFO("shape rank " << c.in.size() << ", first dim " << c.in[0] << ", perm[0] " << c.perm[0]);
    CHECK(run.outputs[0].fvec() == transpose_ref(c.in, c.perm, xv));
    // Backward: dX = dY through the inverse permutation.
    const std::vector<float> dyv = random_values(n, 8);
    const Tensor dy = Tensor::floats(run.outputs[0].shape(), dyv);
    std::vector<Tensor> g = run.backward({&dy}, {true});
    std::vector<float> want(size_t(n), 0.0f);
    const std::vector<float> idx_y = transpose_ref(c.in, c.perm, [&] {
      std::vector<float> ids(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) ids[size_t(i)] = float(i);
      return ids;
    }());
    for (size_t o = 0; o < idx_y.size(); ++o) want[size_t(idx_y[o])] = dyv[o];
    CHECK(g[0].fvec() == want);
  }
}

TEST_CASE("Softmax and LogSoftmax rows: reference values, odd lengths, -inf gives exactly 0, NaN stays NaN") {
  for (int64_t len : {1, 7, 16, 64, 67}) {
    const int64_t rows = 5;
    std::vector<float> xv = random_values(rows * len, unsigned(len));
    for (float& v : xv) v *= 6.0f;
    if (len > 1) xv[size_t(len) + 1] = -std::numeric_limits<float>::infinity();  // row 1 masked at 1
    for (bool log : {false, true}) {
      OpRun run(dl::rt::sample_node(log ? "LogSoftmax" : "Softmax", 1, 1, {}, 13), {Tensor::floats({rows, len}, xv)},
                true);
      run.forward();
      const std::vector<float> y = run.outputs[0].fvec();
      const std::vector<float> dyv = random_values(rows * len, 99);
      const Tensor dy = Tensor::floats({rows, len}, dyv);
      std::vector<Tensor> g = run.backward({&dy}, {true});
      for (int64_t r = 0; r < rows; ++r) {
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < len; ++j) mx = std::max(mx, double(xv[size_t(r * len + j)]));
        for (int64_t j = 0; j < len; ++j) sum += std::exp(double(xv[size_t(r * len + j)]) - mx);
        std::vector<double> p(static_cast<size_t>(len));
        double dot = 0, dsum = 0;
        for (int64_t j = 0; j < len; ++j) {
          p[size_t(j)] = std::exp(double(xv[size_t(r * len + j)]) - mx) / sum;
          dot += p[size_t(j)] * dyv[size_t(r * len + j)];
          dsum += dyv[size_t(r * len + j)];
        }
        for (int64_t j = 0; j < len; ++j) {
          const size_t k = size_t(r * len + j);
          INFO("len " << len << " log " << log << " row " << r << " col " << j);
          const double dx = log ? dyv[k] - p[size_t(j)] * dsum : p[size_t(j)] * (dyv[k] - dot);
          CHECK(g[0].fvec()[k] == doctest::Approx(dx).epsilon(1e-5).scale(1.0));
          if (std::isinf(xv[k])) {
            if (!log) CHECK(y[k] == 0.0f);
            else CHECK(std::isinf(y[k]));
            continue;
          }
          if (log) CHECK(y[k] == doctest::Approx(std::log(p[size_t(j)])).epsilon(1e-5).scale(1.0));
          else CHECK(y[k] == doctest::Approx(p[size_t(j)]).epsilon(1e-5));
        }
      }
    }
  }
  // A NaN anywhere in a row makes that row NaN and leaves the others alone.
  std::vector<float> xv = random_values(3 * 40, 5);
  xv[40 + 33] = std::nanf("");
  OpRun run(dl::rt::sample_node("Softmax", 1, 1, {}, 13), {Tensor::floats({3, 40}, xv)});
  run.forward();
  const std::vector<float> y = run.outputs[0].fvec();
  for (int64_t j = 0; j < 40; ++j) {
    CHECK(std::isnan(y[size_t(40 + j)]));
    CHECK(std::isfinite(y[size_t(j)]));
    CHECK(std::isfinite(y[size_t(80 + j)]));
  }
}

TEST_CASE("Softmax over a middle axis (strided rows) agrees with the same values as contiguous rows") {
  // [2, 37, 3] over axis 1 against the transposed [2, 3, 37] over the last axis: the same
  // packet exp per value; the sums run in another order (rounding only).
  const int64_t a = 2, n = 37, c = 3;
  const std::vector<float> xv = random_values(a * n * c, 17);
  OpRun strided(dl::rt::sample_node("Softmax", 1, 1, {{"axis", dl::rt::attr_i(1)}}, 13), {Tensor::floats({a, n, c}, xv)});
  strided.forward();
  std::vector<float> xt(xv.size());
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t k = 0; k < c; ++k) xt[size_t((i * c + k) * n + j)] = xv[size_t((i * n + j) * c + k)];
  OpRun rows(dl::rt::sample_node("Softmax", 1, 1, {}, 13), {Tensor::floats({a, c, n}, xt)});
  rows.forward();
  const std::vector<float> ys = strided.outputs[0].fvec(), yr = rows.outputs[0].fvec();
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t k = 0; k < c; ++k)
        CHECK(ys[size_t((i * n + j) * c + k)] ==
              doctest::Approx(yr[size_t((i * c + k) * n + j)]).epsilon(1e-6));
}
