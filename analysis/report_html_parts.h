// Internal to the HTML report (report_html.cpp, report_html_charts.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "analysis/analyzer.h"
#include "analysis/report.h"
#include "analysis/trace.h"

namespace dl::an::html {

// What every chart shares: the iteration axis and the first failure (-1: none).
struct Domain {
  double x0 = 0, x1 = 1;
  int64_t failure = -1;
};

// CSS class of a layer status: "primary", "fault", "consequence", "warning", "ok".
std::string status_class(const std::string& status);
// A coloured badge naming the status.
std::string status_badge(const std::string& status);

std::string curves_section(const Trace& t, const RunInfo& run, const Domain& dom);
std::string layers_section(const Diagnosis& d, const Trace& t, const Domain& dom);
// With --verify-fixes: the repairs tried, and the curves before/after the best one.
std::string fixes_section(const Diagnosis& d, const RunInfo& run);

}  // namespace dl::an::html
