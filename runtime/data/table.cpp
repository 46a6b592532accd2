#include "runtime/data/table.h"

#include <cstdio>
#include <memory>
#include <random>
#include <string>

#include "converter/errors.h"

namespace dl::rt {

std::string row_location(const std::string& source, bool csv_lines, int64_t line_or_row) {
  return csv_lines ? source + ":" + std::to_string(line_or_row) : source + " row " + std::to_string(line_or_row);
}

void write_synthetic_csv(const std::string& path, int64_t rows, int64_t cols, uint64_t seed) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) throw DataError(path + ": cannot open for writing");
  std::mt19937_64 rng(seed);
  std::string line;
  for (int64_t c = 0; c + 1 < cols; ++c) line += "pixel" + std::to_string(c) + ",";
  line += "label\n";
  std::fwrite(line.data(), 1, line.size(), f.get());
  for (int64_t r = 0; r < rows; ++r) {
    line.clear();
    for (int64_t c = 0; c + 1 < cols; ++c) {
      const uint64_t u = rng();
      line += (u % 100) < 80 ? "0" : std::to_string(1 + (u >> 32) % 255);
      line += ',';
    }
    line += std::to_string(rng() % 10);
    line += '\n';
    if (std::fwrite(line.data(), 1, line.size(), f.get()) != line.size()) throw DataError(path + ": cannot write");
  }
  if (std::fflush(f.get()) != 0) throw DataError(path + ": cannot write");
}

}  // namespace dl::rt
