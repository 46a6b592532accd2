// Line charts as inline SVG for the HTML report: well-formed XML (every element closed,
// attributes quoted, text escaped), no scripts, no external references. Long series are
// downsampled to min/max per bucket so spikes survive; NaN/Inf values break the line
// and are shaded; a log scale is used when asked or when the data spans > 3 decades.
#pragma once

#include <limits>
#include <string>
#include <vector>

namespace dl::an::svg {

// Escapes text for XML/HTML content and attribute values (& < > " '); control
// characters and invalid UTF-8 become U+FFFD so the output always parses.
std::string escape(const std::string& s);

// A number for text: "%.4g", "NaN", "Inf", "-Inf".
std::string num(double v);

struct Downsampled {
  std::vector<double> x, y;  // y is NaN where the line breaks (a bucket without finite values)
  std::vector<std::pair<double, double>> bad;  // x ranges holding NaN/Inf values, merged
};

// At most `max_points` points: the series itself when short enough, else for each of
// max_points/2 buckets its minimum and maximum finite values in x order.
Downsampled downsample(const std::vector<double>& x, const std::vector<double>& y, size_t max_points);

enum class Scale { kAuto, kLinear, kLog };

struct Series {
  std::string label;
  std::string color = "#2563eb";
  std::vector<double> x, y;  // NaN/Inf allowed
  bool dashed = false;
  bool dots = false;  // markers only (e.g. per-epoch validation values)
  double opacity = 1;  // < 1: drawn faintly (e.g. raw values under a moving average)
};

struct ChartOptions {
  int width = 560, height = 220;
  std::string title;  // empty: none (small multiples are titled by their column)
  std::string x_label = "iteration";
  Scale scale = Scale::kAuto;
  double y_min = std::numeric_limits<double>::quiet_NaN();  // fixed range when set (data may widen it)
  double y_max = std::numeric_limits<double>::quiet_NaN();
  double x_min = std::numeric_limits<double>::quiet_NaN();  // shared domain when set
  double x_max = std::numeric_limits<double>::quiet_NaN();
  double mark_x = std::numeric_limits<double>::quiet_NaN();  // first failure: a vertical line
  std::string mark_label;                                    // drawn beside it (not in compact charts)
  bool compact = false;                                      // small multiple: fewer ticks, no legend
  std::string aria_label;                                    // the chart's <title>
};

// The <svg> element. Says "log scale" in the chart when it used one.
std::string chart(const std::vector<Series>& series, const ChartOptions& o);

// A centred moving average over `window` values (geometric when `geometric`, for log
// scales; non-positive values then count as skipped); NaN/Inf values are skipped and
// stay NaN, so the average breaks where the data does.
std::vector<double> moving_average(const std::vector<double>& y, size_t window, bool geometric = false);

// Whether `chart` would use a log scale for these values under `scale`.
bool uses_log_scale(const std::vector<Series>& series, Scale scale);

}  // namespace dl::an::svg
