// When the online analysis looks at the trace: early in a run at iterations 1, 2, 4, 8,
// ... so that a fault complete after a few iterations stops training there, then every
// `interval` iterations.
#include <doctest/doctest.h>

#include <vector>

#include "cli/online_analysis.h"

TEST_CASE("online analysis: checks after iterations 1, 2, 4, ... then every interval") {
  std::vector<int64_t> at;
  for (int64_t i = 0; i < 700; ++i)
    if (dl::cli::OnlineAnalysis::checks_after(i, 200)) at.push_back(i + 1);
  CHECK(at == std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 128, 200, 400, 600});
  // An interval of 1 checks every iteration.
  for (int64_t i = 0; i < 5; ++i) CHECK(dl::cli::OnlineAnalysis::checks_after(i, 1));
}
