// Helpers of the static-check and trend rule tests (rules_stat*_test.cpp,
// rules_trend_test.cpp): the rules under test, --set overrides, and rewriting a trace's
// loss/metric curves.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "analysis/context.h"
#include "rules_test_util.h"

namespace dl::test::rules_stat {

using namespace dl::test::rules;

inline const std::set<std::string> kMine = {"loss_activation_mismatch", "output_range", "labels_invalid",
                                            "unnormalized_inputs", "linear_stack", "bad_initialization",
                                            "loss_not_decreasing", "oscillating_loss", "accuracy_not_increasing",
                                            "training_too_short", "loss_plateau"};

// Findings and warnings of the rules in kMine only.
inline std::vector<Finding> mine(const std::vector<Finding>& all) { return of_rules(all, kMine); }

// Rewrites the loss/metric curves (per iteration, records and epoch means).
inline void set_curve(Trace& t, const std::function<double(int64_t, double)>& loss,
                      const std::function<double(int64_t, double)>& metric) {
  const int64_t n = static_cast<int64_t>(t.loss.size());
  const int64_t b = t.header.batches_per_epoch;
  t.epochs.clear();
  double el = 0, em = 0;
  for (int64_t it = 0; it < n; ++it) {
    const double p = double(it) / double(std::max<int64_t>(n - 1, 1));
    t.loss[size_t(it)] = float(loss(it, p));
    t.metric[size_t(it)] = float(metric(it, p));
    el += t.loss[size_t(it)], em += t.metric[size_t(it)];
    if ((it + 1) % b == 0) {
      an::EpochRecord e;
      e.epoch = it / b;
      e.loss = el / double(b);
      e.metric = em / double(b);
      t.epochs.push_back(e);
      el = em = 0;
    }
  }
  for (an::IterationRecord& r : t.records) {
    r.loss = t.loss[size_t(r.iteration)];
    r.metric = t.metric[size_t(r.iteration)];
  }
}

// A run that does not learn: loss flat around 1.1 with a little noise, accuracy at chance.
inline void flat_run(Trace& t) {
  set_curve(
      t, [](int64_t it, double) { return 1.1 + 0.01 * std::sin(double(it)); },
      [](int64_t it, double) { return 0.33 + 0.01 * std::sin(0.7 * double(it)); });
}

}  // namespace dl::test::rules_stat
