// The rules that read op features (an::OpFeature, op_features_test.cpp):
// uniform_attention, collapsed_attention, collapsed_layer_norm, on synthetic traces.
#include <doctest/doctest.h>

#include "rules_test_util.h"

namespace {

using namespace dl;
using test::rules::run;

// The healthy classifier with a feature probe in layer 1 (`units` values per row), whose
// statistics at record r are stats(r).
template <class F>
an::Trace with_feature(an::OpFeature feature, int64_t units, F stats) {
  test::TraceBuilder b;
  b.batches_per_epoch(10);
  an::Trace base = test::rules::healthy(b);
  an::Trace t;
  t.header = base.header;
  an::Probe p;
  p.kind = an::ProbeKind::kFeature;
  p.feature = feature;
  p.layer = 1;
  p.step = 99;
  p.node = "/attn/Softmax";
  p.op_type = "Softmax";
  p.op.units = units;
  t.header.probes.push_back(p);
  const size_t n = base.header.probes.size();
  for (size_t r = 0; r < base.size(); ++r) {
    an::TensorStats* s = t.begin_record(base.records[r]);
    for (size_t k = 0; k < n; ++k) s[k] = base.at(r, k);
    s[n] = stats(r);
    t.add_loss(base.records[r].iteration, base.loss[r], base.metric[r]);
  }
  t.epochs = base.epochs;
  return t;
}

an::TensorStats rows(float mean, float mn, float mx) {
  an::TensorStats s;
  s.count = 64;
  s.mean = mean, s.min = mn, s.max = mx;
  return s;
}

TEST_CASE("rule uniform_attention: every row uniform from the start, localised to the softmax's layer") {
  const an::Trace t = with_feature(an::OpFeature::kRowEntropy, 16, [](size_t) { return rows(1, 0.99999f, 1); });
  const auto f = run("uniform_attention", t);
  REQUIRE(f.size() == 1);
  CHECK(f[0].symptom == "uniform_attention");
  CHECK(f[0].layer == 1);
  CHECK(f[0].iteration == 0);
  CHECK(f[0].root_cause == an::RootCause::kInitialization);
  CHECK(f[0].evidence["row_length"] == 16);
  // Online: only after 2 epochs (20 iterations) of it.
  CHECK(run("uniform_attention", t, false).size() == 1);
  an::Trace early = t;
  early.records.resize(15), early.stats.resize(15 * t.header.probes.size());
  CHECK(run("uniform_attention", early, false).empty());
  CHECK(run("uniform_attention", early, true).size() == 1);
}

TEST_CASE("rule uniform_attention: healthy attention, and one that leaves the uniform state, are not flagged") {
  CHECK(run("uniform_attention", with_feature(an::OpFeature::kRowEntropy, 16, [](size_t) {
          return rows(0.95f, 0.9f, 0.999f);
        })).empty());
  // Uniform at first (a tiny initialisation), spread from record 5 on.
  CHECK(run("uniform_attention", with_feature(an::OpFeature::kRowEntropy, 16, [](size_t r) {
          return r < 5 ? rows(1, 0.99999f, 1) : rows(0.97f, 0.9f, 1);
        })).empty());
  // Records where the op reported nothing are skipped, not read as uniform or not.
  CHECK(run("uniform_attention", with_feature(an::OpFeature::kRowEntropy, 16, [](size_t r) {
          return r % 2 ? an::TensorStats{} : rows(1, 0.99999f, 1);
        })).size() == 1);
  // A LayerNorm feature is not an attention.
  CHECK(run("uniform_attention", with_feature(an::OpFeature::kNormalizedScale, 16, [](size_t) {
          return rows(1, 0.99999f, 1);
        })).empty());
}

TEST_CASE("rule collapsed_attention: one-hot rows from the first record; not a sharpening one") {
  const auto f = run("collapsed_attention", with_feature(an::OpFeature::kRowEntropy, 16, [](size_t) {
    return rows(0.01f, 0.0f, 0.2f);
  }));
  REQUIRE(f.size() == 1);
  CHECK(f[0].symptom == "collapsed_attention");
  CHECK(f[0].layer == 1);
  CHECK(f[0].root_cause == an::RootCause::kInitialization);
  // Trained attention that grows sharp (spread at first).
  CHECK(run("collapsed_attention", with_feature(an::OpFeature::kRowEntropy, 16, [](size_t r) {
          return r < 50 ? rows(0.9f, 0.7f, 1) : rows(0.02f, 0.0f, 0.1f);
        })).empty());
  CHECK(run("collapsed_attention", with_feature(an::OpFeature::kRowEntropy, 16, [](size_t) {
          return rows(0.06f, 0.0f, 0.3f);
        })).empty());
}

TEST_CASE("rule collapsed_layer_norm: a row of one value at once; epsilon-dominated rows after an epoch") {
  const auto single = run("collapsed_layer_norm", with_feature(an::OpFeature::kNormalizedScale, 1, [](size_t) {
    return rows(0, 0, 0);
  }), false);
  REQUIRE(single.size() == 1);
  CHECK(single[0].symptom == "collapsed_layer_norm");
  CHECK(single[0].layer == 1);
  CHECK(single[0].root_cause == an::RootCause::kArchitecture);
  CHECK(single[0].message.find("single value") != std::string::npos);
  const an::Trace eps = with_feature(an::OpFeature::kNormalizedScale, 32, [](size_t) { return rows(0.03f, 0.01f, 0.05f); });
  const auto f = run("collapsed_layer_norm", eps);
  REQUIRE(f.size() == 1);
  CHECK(f[0].message.find("epsilon") != std::string::npos);
  an::Trace early = eps;
  early.records.resize(5), early.stats.resize(5 * eps.header.probes.size());
  CHECK(run("collapsed_layer_norm", early, false).empty());
  // Healthy: normalised rows.
  CHECK(run("collapsed_layer_norm", with_feature(an::OpFeature::kNormalizedScale, 32, [](size_t) {
          return rows(0.999f, 0.99f, 1);
        })).empty());
  // Rows that grow out of it within the first epoch.
  CHECK(run("collapsed_layer_norm", with_feature(an::OpFeature::kNormalizedScale, 32, [](size_t r) {
          return r < 3 ? rows(0.05f, 0.01f, 0.08f) : rows(0.9f, 0.5f, 1);
        })).empty());
}

}  // namespace
