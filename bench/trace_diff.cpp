// Two traces of one model compared record by record (bench/README.md, run 62): whether the
// per-iteration losses and metrics are the same bits, and per probe which statistics differ
// in how many records, with the worst relative difference.
//   dl_trace_diff OLD.trace NEW.trace
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "analysis/trace_io.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: dl_trace_diff OLD.trace NEW.trace\n");
    return 2;
  }
  using dl::an::TensorStats;
  const dl::an::Trace a = dl::an::read_trace(argv[1]), b = dl::an::read_trace(argv[2]);
  if (a.records.size() != b.records.size() || a.header.probes.size() != b.header.probes.size()) {
    std::printf("different shapes: %zu x %zu records and probes against %zu x %zu\n", a.records.size(),
                a.header.probes.size(), b.records.size(), b.header.probes.size());
    return 1;
  }
  std::printf("losses the same bits: %s, metrics: %s\n", a.loss == b.loss ? "yes" : "no",
              a.metric == b.metric ? "yes" : "no");
  std::map<std::string, int> differing;  // "probe node: fields" -> records
  double worst = 0;
  for (size_t r = 0; r < a.records.size(); ++r)
    for (size_t p = 0; p < a.header.probes.size(); ++p) {
      const TensorStats &x = a.at(r, p), &y = b.at(r, p);
      if (std::memcmp(&x, &y, sizeof x) == 0) continue;
      std::string fields;
      auto field = [&](const char* name, float u, float v) {
        if (std::memcmp(&u, &v, sizeof u) == 0) return;
        fields += std::string(fields.empty() ? "" : " ") + name;
        worst = std::max(worst, std::fabs(double(u) - double(v)) / std::max(1e-30, std::fabs(double(u))));
      };
      field("min", x.min, y.min);
      field("max", x.max, y.max);
      field("mean", x.mean, y.mean);
      field("std", x.std, y.std);
      field("l2", x.l2, y.l2);
      field("mean_abs", x.mean_abs, y.mean_abs);
      field("zero_frac", x.zero_frac, y.zero_frac);
      field("dead_frac", x.dead_frac, y.dead_frac);
      field("sat_frac", x.sat_frac, y.sat_frac);
      field("dead_units", x.dead_units, y.dead_units);
      if (x.count != y.count || x.nan != y.nan || x.inf != y.inf) fields += " counts";
      if (fields.empty()) fields = "flags";
      ++differing[a.header.probes[p].node + ": " + fields];
    }
  for (const auto& [what, n] : differing) std::printf("%5d records  %s\n", n, what.c_str());
  std::printf("%zu probe/field groups differ; worst relative difference %g\n", differing.size(), worst);
  return 0;
}
