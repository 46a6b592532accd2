// Broadcasting helper: shape rules, collapsing of the iteration, and forward/backward
// results against a naive per-element reference on many shape pairs.
#include <doctest/doctest.h>

#include <random>

#include "converter/errors.h"
#include "runtime/ops/broadcast.h"

using dl::rt::BroadcastPlan;
using dl::rt::Shape;

namespace {

// Flat index into `in` (right-aligned, size-1 dims repeat) of output element `o`.
int64_t naive_index(const Shape& out, const Shape& in, int64_t o) {
  int64_t idx = 0, step = 1;
  for (size_t k = 0; k < out.size(); ++k) {
    const size_t d = out.size() - 1 - k;
    const int64_t coord = o % out[d];
    o /= out[d];
    if (k < in.size()) {
      const int64_t n = in[in.size() - 1 - k];
      if (n != 1) idx += coord * step;
      step *= n;
    }
  }
  return idx;
}

std::vector<float> iota(int64_t n, float start) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[size_t(k)] = start + 0.5f * float(k);
  return v;
}

void check_pair(const Shape& a, const Shape& b) {
  INFO("a " << dl::rt::shape_str(a) << " b " << dl::rt::shape_str(b));
  BroadcastPlan p = BroadcastPlan::make(a, b, "test");
  const std::vector<float> va = iota(dl::rt::shape_numel(a), 1.0f), vb = iota(dl::rt::shape_numel(b), -3.0f);
  std::vector<float> y(static_cast<size_t>(p.numel), -99.0f);
  dl::rt::broadcast_apply(p, va.data(), vb.data(), y.data(), [](float x, float z) { return x * 10.0f + z; });
  for (int64_t o = 0; o < p.numel; ++o) {
    const float want = va[size_t(naive_index(p.out, a, o))] * 10.0f + vb[size_t(naive_index(p.out, b, o))];
    REQUIRE(y[size_t(o)] == want);
  }
  // Gradient of sum(w * y) w.r.t. a and b with y = a * b: reduction over broadcast dims.
  std::vector<float> w = iota(p.numel, 0.25f);
  std::vector<float> ga(va.size(), 0.0f), gb(vb.size(), 0.0f), ra(va.size(), 0.0f), rb(vb.size(), 0.0f);
  dl::rt::broadcast_accumulate(p, 0, ga.data(), [&](int64_t o, int64_t, int64_t ib) { return w[size_t(o)] * vb[size_t(ib)]; });
  dl::rt::broadcast_accumulate(p, 1, gb.data(), [&](int64_t o, int64_t ia, int64_t) { return w[size_t(o)] * va[size_t(ia)]; });
  for (int64_t o = 0; o < p.numel; ++o) {
    const int64_t ia = naive_index(p.out, a, o), ib = naive_index(p.out, b, o);
    ra[size_t(ia)] += w[size_t(o)] * vb[size_t(ib)];
    rb[size_t(ib)] += w[size_t(o)] * va[size_t(ia)];
  }
  for (size_t k = 0; k < ga.size(); ++k) CHECK(ga[k] == doctest::Approx(ra[k]).epsilon(1e-5));
  for (size_t k = 0; k < gb.size(); ++k) CHECK(gb[k] == doctest::Approx(rb[k]).epsilon(1e-5));
}

}  // namespace

TEST_CASE("broadcast: output shapes and errors") {
  CHECK(dl::rt::broadcast_shape({2, 3}, {3}, "t") == Shape{2, 3});
  CHECK(dl::rt::broadcast_shape({2, 1, 3}, {4, 1}, "t") == Shape{2, 4, 3});
  CHECK(dl::rt::broadcast_shape({}, {2}, "t") == Shape{2});
  CHECK(dl::rt::broadcast_shape({0, 1}, {1, 5}, "t") == Shape{0, 5});
  CHECK_THROWS_AS(dl::rt::broadcast_shape({2, 3}, {2}, "t"), dl::ShapeError);
  try {
    dl::rt::broadcast_shape({4, 3}, {2, 3}, "node 'n' (Add)");
    FAIL("expected ShapeError");
  } catch (const dl::ShapeError& e) {
    const std::string msg = e.what();
    CHECK(msg.find("node 'n' (Add)") != std::string::npos);
    CHECK(msg.find("[4, 3]") != std::string::npos);
    CHECK(msg.find("[2, 3]") != std::string::npos);
  }
}

TEST_CASE("broadcast: legacy broadcast=1 with axis") {
  CHECK(dl::rt::legacy_broadcast_shape({2, 3, 4, 5}, {3, 4}, 1, true, "t") == Shape{1, 3, 4, 1});
  CHECK(dl::rt::legacy_broadcast_shape({2, 3, 4, 5}, {4, 5}, 0, false, "t") == Shape{1, 1, 4, 5});
  CHECK(dl::rt::legacy_broadcast_shape({2, 3, 4, 5}, {2}, 0, true, "t") == Shape{2, 1, 1, 1});
  CHECK(dl::rt::legacy_broadcast_shape({2, 3, 4, 5}, {}, 0, false, "t") == Shape{1, 1, 1, 1});
  CHECK_THROWS_AS(dl::rt::legacy_broadcast_shape({2, 3, 4, 5}, {3, 4}, 0, false, "t"), dl::ShapeError);
  CHECK_THROWS_AS(dl::rt::legacy_broadcast_shape({2, 3}, {3, 2, 3}, 0, false, "t"), dl::ShapeError);
}

TEST_CASE("broadcast: common cases collapse to one or two loops") {
  BroadcastPlan same = BroadcastPlan::make({4, 5, 6}, {4, 5, 6}, "t");
  CHECK(same.rank == 1);
  CHECK(same.dims[0] == 120);
  BroadcastPlan scalar = BroadcastPlan::make({4, 5}, {}, "t");
  CHECK(scalar.rank == 1);
  CHECK(scalar.stride_b[0] == 0);
  BroadcastPlan row = BroadcastPlan::make({8, 2, 16}, {16}, "t");
  CHECK(row.rank == 2);
  CHECK(row.dims[0] == 16);
  CHECK(row.stride_b[0] == 0);
  CHECK(row.stride_b[1] == 1);
  BroadcastPlan channel = BroadcastPlan::make({2, 3, 4, 4}, {3, 1, 1}, "t");
  CHECK(channel.rank == 3);  // [2, 3, 16]: batch, channel, spatial
}

TEST_CASE("broadcast: apply and accumulate match a naive reference") {
  const std::vector<std::pair<Shape, Shape>> pairs = {
      {{2, 3}, {2, 3}},       {{2, 3}, {}},         {{}, {2, 3}},         {{2, 3}, {3}},
      {{3}, {2, 3}},          {{2, 3}, {2, 1}},     {{2, 1, 3}, {4, 1}},  {{1, 4, 1}, {3, 1, 5}},
      {{2, 3, 4, 5}, {3, 1, 1}}, {{2, 1, 4, 1}, {1, 3, 1, 5}}, {{1}, {1}}, {{0, 3}, {3}},
      {{2, 2, 2, 2, 2}, {2, 1, 2, 1, 2}}, {{5, 1}, {1, 1}}};
  for (const auto& [a, b] : pairs) check_pair(a, b);
}

TEST_CASE("broadcast: reduce_to_shape sums over broadcast dimensions") {
  const std::vector<float> g = {1, 2, 3, 4, 5, 6};  // shape [2, 3]
  std::vector<float> row(3, 0.5f), col(2, 0.0f), all(1, 0.0f);
  dl::rt::reduce_to_shape(g.data(), {2, 3}, row.data(), {3});
  dl::rt::reduce_to_shape(g.data(), {2, 3}, col.data(), {2, 1});
  dl::rt::reduce_to_shape(g.data(), {2, 3}, all.data(), {});
  CHECK(row == std::vector<float>{5.5f, 7.5f, 9.5f});  // accumulates onto 0.5
  CHECK(col == std::vector<float>{6.0f, 15.0f});
  CHECK(all[0] == 21.0f);
  std::vector<float> bad(4, 0.0f);
  CHECK_THROWS_AS(dl::rt::reduce_to_shape(g.data(), {2, 3}, bad.data(), {4}), dl::ShapeError);
}
