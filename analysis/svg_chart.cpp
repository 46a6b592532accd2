#include "analysis/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dl::an::svg {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const char* const kReplacement = "\xEF\xBF\xBD";

// A coordinate: one decimal is plenty at screen resolution.
std::string c(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string attr(const char* name, const std::string& v) { return std::string(" ") + name + "=\"" + v + "\""; }

// Tick labels: "1.5k", "2M" for round thousands/millions, "1e-05" for tiny or huge
// values, else as many decimals as the tick step needs ("1.1000", "1.1002").
std::string tick_text(double v, double step) {
  if (v == 0) return "0";
  char buf[32];
  const double a = std::fabs(v);
  if (a >= 1e6 && a < 1e9 && std::fmod(a, 1e5) == 0) {
    std::snprintf(buf, sizeof buf, "%gM", v / 1e6);
  } else if (a >= 1e3 && a < 1e6 && std::fmod(a, 100) == 0) {
    std::snprintf(buf, sizeof buf, "%gk", v / 1e3);
  } else if (a >= 1e5 || a < 1e-3) {
    std::snprintf(buf, sizeof buf, "%.3g", v);
  } else {
    int decimals = 0;
    for (double s = std::fabs(step); decimals < 8 && std::fabs(s - std::round(s)) > 1e-6 * std::max(s, 1.0); s *= 10)
      ++decimals;
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  }
  std::string s = buf;
  for (const char* from : {"e+0", "e+", "e-0"}) {
    const size_t at = s.find(from);
    if (at != std::string::npos) s.replace(at, std::string(from).size(), std::string(from) == "e-0" ? "e-" : "e");
  }
  return s;
}

double nice_step(double span, int ticks) {
  const double raw = span / std::max(ticks, 1);
  if (!(raw > 0) || !std::isfinite(raw)) return 1;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

struct Range {
  double lo = kNaN, hi = kNaN, min_positive = kNaN;
  bool negative = false;
  int positives = 0;
  void add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::isnan(lo) ? v : std::min(lo, v);
    hi = std::isnan(hi) ? v : std::max(hi, v);
    if (v > 0) min_positive = std::isnan(min_positive) ? v : std::min(min_positive, v), ++positives;
    if (v < 0) negative = true;
  }
};

bool log_for(const Range& r, Scale scale) {
  if (scale == Scale::kLinear || r.positives == 0) return false;
  if (scale == Scale::kLog) return true;
  return !r.negative && r.positives >= 2 && r.hi / r.min_positive > 1e3;
}

}  // namespace

std::string escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char ch = static_cast<unsigned char>(s[i]);
    if (ch < 0x80) {
      static const char* const kEntities[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&#39;"};
      const size_t e = std::string("&<>\"'").find(char(ch));
      if (e != std::string::npos)
        out += kEntities[e];
      else
        out += (ch < 0x20 && ch != '\n' && ch != '\t') || ch == 0x7f ? kReplacement : std::string(1, char(ch));
      ++i;
      continue;
    }
    size_t len = ch >= 0xC2 && ch <= 0xDF ? 2 : ch >= 0xE0 && ch <= 0xEF ? 3 : ch >= 0xF0 && ch <= 0xF4 ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t j = 1; ok && j < len; ++j) ok = (static_cast<unsigned char>(s[i + j]) & 0xC0) == 0x80;
    if (ok) {
      const unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
      if ((ch == 0xE0 && c1 < 0xA0) || (ch == 0xED && c1 >= 0xA0) || (ch == 0xF0 && c1 < 0x90) ||
          (ch == 0xF4 && c1 >= 0x90) || (ch == 0xEF && c1 == 0xBF && static_cast<unsigned char>(s[i + 2]) >= 0xBE))
        ok = false;  // overlong, surrogate, beyond U+10FFFF, or U+FFFE/U+FFFF
    }
    out += ok ? s.substr(i, len) : std::string(kReplacement);
    i += ok ? len : 1;
  }
  return out;
}

std::string num(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Inf" : "-Inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

Downsampled downsample(const std::vector<double>& x, const std::vector<double>& y, size_t max_points) {
  Downsampled d;
  const size_t n = std::min(x.size(), y.size());
  bool previous_bad = false;
  for (size_t i = 0; i < n; ++i) {
    const bool bad = !std::isfinite(y[i]);
    if (bad && previous_bad)
      d.bad.back().second = x[i];
    else if (bad)
      d.bad.emplace_back(x[i], x[i]);
    previous_bad = bad;
  }
  max_points = std::max<size_t>(max_points, 2);
  if (n <= max_points) {
    for (size_t i = 0; i < n; ++i) {
      d.x.push_back(x[i]);
      d.y.push_back(std::isfinite(y[i]) ? y[i] : kNaN);
    }
    return d;
  }
  const size_t buckets = max_points / 2;
  for (size_t b = 0; b < buckets; ++b) {
    const size_t from = b * n / buckets, to = (b + 1) * n / buckets;
    size_t lo = n, hi = n;
    for (size_t i = from; i < to; ++i) {
      if (!std::isfinite(y[i])) continue;
      if (lo == n || y[i] < y[lo]) lo = i;
      if (hi == n || y[i] > y[hi]) hi = i;
    }
    if (lo == n) {
      d.x.push_back(x[from]);
      d.y.push_back(kNaN);
      continue;
    }
    const size_t first = std::min(lo, hi), second = std::max(lo, hi);
    d.x.push_back(x[first]);
    d.y.push_back(y[first]);
    if (second != first) {
      d.x.push_back(x[second]);
      d.y.push_back(y[second]);
    }
  }
  return d;
}

std::vector<double> moving_average(const std::vector<double>& y, size_t window, bool geometric) {
  const size_t n = y.size(), half = window / 2;
  std::vector<double> sum(n + 1, 0.0), count(n + 1, 0.0), out(n, kNaN);
  for (size_t i = 0; i < n; ++i) {
    const bool ok = std::isfinite(y[i]) && (!geometric || y[i] > 0);
    sum[i + 1] = sum[i] + (ok ? (geometric ? std::log(y[i]) : y[i]) : 0.0);
    count[i + 1] = count[i] + (ok ? 1.0 : 0.0);
  }
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(y[i])) continue;  // keep NaN/Inf visible as gaps
    const size_t from = i > half ? i - half : 0, to = std::min(n, i + half + 1);
    const double k = count[to] - count[from], mean = (sum[to] - sum[from]) / k;
    if (k > 0) out[i] = geometric ? std::exp(mean) : mean;
  }
  return out;
}

bool uses_log_scale(const std::vector<Series>& series, Scale scale) {
  Range r;
  for (const Series& s : series)
    for (double v : s.y) r.add(v);
  return log_for(r, scale);
}

namespace {

std::string line(double x1, double y1, double x2, double y2, const std::string& style) {
  return "<line" + attr("x1", c(x1)) + attr("y1", c(y1)) + attr("x2", c(x2)) + attr("y2", c(y2)) + " " + style + "/>";
}

std::string text(double x, double y, const std::string& style, const std::string& content) {
  return "<text" + attr("x", c(x)) + attr("y", c(y)) + " " + style + ">" + escape(content) + "</text>";
}

std::string stroke(const Series& s) {
  return attr("stroke", escape(s.color)) + (s.opacity < 1 ? attr("stroke-opacity", num(s.opacity)) : "") +
         (s.dashed ? " stroke-dasharray=\"4 3\"" : "");
}

// The y axis: decades on a log scale, nice steps on a linear one.
struct YAxis {
  bool log = false;
  double y0 = 0, y1 = 1, step = 1;
  std::vector<double> ticks;  // exponents on a log scale
  YAxis(const Range& r, const ChartOptions& o) : log(log_for(r, o.scale)) {
    const int want = o.compact ? 3 : 5;
    if (log) {
      y0 = std::floor(std::log10(r.min_positive));
      y1 = std::max(std::ceil(std::log10(r.hi)), y0 + 1);
      const double every = std::max(1.0, std::ceil((y1 - y0) / want));
      for (double e = y0; e <= y1 + 1e-9; e += every) ticks.push_back(e);
      return;
    }
    double lo = std::isnan(r.lo) ? 0 : r.lo, hi = std::isnan(r.hi) ? 1 : r.hi;
    if (std::isfinite(o.y_min)) lo = std::min(lo, o.y_min);
    if (std::isfinite(o.y_max)) hi = std::max(hi, o.y_max);
    if (!(hi > lo) && hi == 0) hi = 1;  // constant: 0 shows as [0, 1], others with 10% around
    if (!(hi > lo)) lo -= std::fabs(hi) * 0.1, hi += std::fabs(hi) * 0.1;
    step = nice_step(hi - lo, want);
    y0 = std::floor(lo / step) * step;
    y1 = std::ceil(hi / step) * step;
    for (double v = y0; v <= y1 + step * 1e-6; v += step) ticks.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  }
  double frac(double y) const {  // 0 at the bottom, 1 at the top
    const double v = log ? (y > 0 ? std::clamp(std::log10(y), y0, y1) : y0) : std::clamp(y, y0, y1);
    return (v - y0) / (y1 - y0);
  }
};

}  // namespace

std::string chart(const std::vector<Series>& series, const ChartOptions& o) {
  const bool compact = o.compact;
  const double W = o.width, H = o.height, fs = compact ? 9 : 11;
  const double left = compact ? 36 : 58, right = compact ? 6 : 14;
  const double top = compact ? 8 : (o.title.empty() ? 14 : 30), bottom = compact ? 18 : 34;
  const double pw = std::max(W - left - right, 10.0), ph = std::max(H - top - bottom, 10.0);
  const size_t max_points = std::min<size_t>(400, static_cast<size_t>(2 * pw));

  std::vector<Downsampled> data;
  Range xr, yr;
  for (const Series& s : series) {
    data.push_back(downsample(s.x, s.y, max_points));
    for (double v : s.x) xr.add(v);
    for (double v : data.back().y) yr.add(v);
  }
  const double x0 = std::isfinite(o.x_min) ? o.x_min : (std::isnan(xr.lo) ? 0 : xr.lo);
  double x1 = std::isfinite(o.x_max) ? o.x_max : (std::isnan(xr.hi) ? 1 : xr.hi);
  if (!(x1 > x0)) x1 = x0 + 1;
  const YAxis ya(yr, o);
  const auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * pw; };
  const auto py = [&](double y) { return top + ph * (1 - ya.frac(y)); };

  std::string out = "<svg class=\"chart\"" + attr("viewBox", "0 0 " + c(W) + " " + c(H)) + attr("width", c(W)) +
                    attr("height", c(H)) + " role=\"img\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\"" +
                    attr("font-size", c(fs)) + ">";
  if (!o.aria_label.empty()) out += "<title>" + escape(o.aria_label) + "</title>";
  out += "<rect" + attr("x", c(left)) + attr("y", c(top)) + attr("width", c(pw)) + attr("height", c(ph)) +
         " fill=\"#ffffff\" stroke=\"#cbd5e1\"/>";
  // Grid and tick labels.
  for (double t : ya.ticks) {
    const double v = ya.log ? std::pow(10.0, t) : t, y = py(v);
    out += line(left, y, left + pw, y, "stroke=\"#e2e8f0\"");
    out += text(left - 4, y + fs * 0.35, "text-anchor=\"end\" fill=\"#475569\"", tick_text(v, ya.log ? v : ya.step));
  }
  const double xstep = std::max(nice_step(x1 - x0, compact ? 3 : 6), 1.0);
  for (double t = std::ceil(x0 / xstep) * xstep; t <= x1 + 1e-9; t += xstep) {
    out += line(px(t), top, px(t), top + ph, "stroke=\"#f1f5f9\"");
    out += text(px(t), top + ph + fs + 3, "text-anchor=\"middle\" fill=\"#475569\"", tick_text(t, xstep));
  }
  if (!compact && !o.x_label.empty())
    out += text(left + pw / 2, H - 4, "text-anchor=\"middle\" fill=\"#334155\"", o.x_label);
  // NaN/Inf spans, merged when closer than 2 px.
  std::vector<std::pair<double, double>> spans, merged;
  for (const Downsampled& d : data)
    for (const auto& [a, b] : d.bad) spans.emplace_back(px(a), px(b));
  std::sort(spans.begin(), spans.end());
  for (const auto& s : spans) {
    if (!merged.empty() && s.first <= merged.back().second + 2)
      merged.back().second = std::max(merged.back().second, s.second);
    else
      merged.push_back(s);
  }
  for (const auto& [a, b] : merged) {
    const double w = std::max(b - a, 2.0);
    out += "<rect" + attr("x", c(std::min(a, left + pw - w))) + attr("y", c(top)) + attr("width", c(w)) +
           attr("height", c(ph)) + " fill=\"#dc2626\" fill-opacity=\"0.14\"/>";
  }
  if (!merged.empty() && !compact)
    out += text(std::min(merged.front().first + 3, left + pw - 40), top + ph - 5, "fill=\"#b91c1c\"", "NaN/Inf");
  // Series: paths broken at NaN/Inf (round caps show a lone point as a dot), or dots.
  for (size_t k = 0; k < series.size(); ++k) {
    const Series& s = series[k];
    const Downsampled& d = data[k];
    std::string path;
    bool pen = false;
    for (size_t i = 0; i < d.x.size(); ++i) {
      pen = pen && std::isfinite(d.y[i]);
      if (!std::isfinite(d.y[i])) continue;
      if (s.dots)
        out += "<circle" + attr("cx", c(px(d.x[i]))) + attr("cy", c(py(d.y[i]))) + " r=\"2.6\"" +
               attr("fill", escape(s.color)) + "/>";
      else
        path += (pen ? "L" : "M") + c(px(d.x[i])) + " " + c(py(d.y[i]));
      pen = true;
    }
    if (!path.empty())
      out += "<path" + attr("d", path) + " fill=\"none\"" + attr("stroke-width", compact ? "1.3" : "1.8") +
             " stroke-linejoin=\"round\" stroke-linecap=\"round\"" + stroke(s) + "/>";
  }
  // First failure.
  if (std::isfinite(o.mark_x) && o.mark_x >= x0 && o.mark_x <= x1) {
    const double x = px(o.mark_x);
    out += line(x, top, x, top + ph, "stroke=\"#dc2626\" stroke-width=\"1.6\" stroke-dasharray=\"5 3\"");
    const bool right_side = x < left + pw * 0.7;
    if (!compact && !o.mark_label.empty())
      out += text(right_side ? x + 4 : x - 4, top + fs + 2,
                  std::string("text-anchor=\"") + (right_side ? "start" : "end") +
                      "\" fill=\"#b91c1c\" font-weight=\"600\"",
                  o.mark_label);
  }
  // Title, legend, notes.
  if (!o.title.empty())
    out += "<text" + attr("x", c(left)) + " y=\"18\" font-size=\"13\" font-weight=\"600\" fill=\"#0f172a\">" +
           escape(o.title) + (ya.log ? "<tspan font-weight=\"400\" font-style=\"italic\" fill=\"#64748b\" " +
                                           std::string("font-size=\"11\"> (log scale)</tspan>")
                                     : "") + "</text>";
  double lx = W - right;
  for (size_t k = series.size(); !compact && k-- > 0;) {
    const Series& s = series[k];
    if (s.label.empty()) continue;
    lx -= 6.2 * double(s.label.size());
    out += text(lx, 18, "fill=\"#334155\"", s.label);
    lx -= 22;
    out += s.dots ? "<circle" + attr("cx", c(lx + 9)) + " cy=\"14.5\" r=\"3\"" + attr("fill", escape(s.color)) + "/>"
                  : line(lx, 14.5, lx + 18, 14.5, "stroke-width=\"2\"" + stroke(s));
    lx -= 12;
  }
  std::string note = ya.log && o.title.empty() ? (compact ? "log" : "log scale") : "";
  if (!ya.log && !std::isnan(yr.lo) && yr.lo == yr.hi) note = "constant " + num(yr.lo);
  if (!note.empty())
    out += text(left + pw - 3, top + fs + 1, "text-anchor=\"end\" fill=\"#64748b\" font-style=\"italic\"", note);
  return out + "</svg>";
}

}  // namespace dl::an::svg
