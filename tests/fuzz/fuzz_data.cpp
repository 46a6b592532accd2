// libFuzzer entry for the data readers (CSV, .npy, .npz and the dataset built from them).
// Not part of the CMake build; build and run by hand with clang:
//   clang++ -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -I. \
//     runtime/data/*.cpp runtime/tensor.cpp tests/fuzz/fuzz_data.cpp -o /tmp/fuzz_data
//   /tmp/fuzz_data -max_total_time=60 tests/fixtures/data
// Any exception other than dl::Error, and any sanitizer report, is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "converter/errors.h"
#include "runtime/data/dataset.h"
#include "runtime/data/table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  dl::rt::ReadOptions cap;
  cap.max_bytes = int64_t(1) << 26;  // a fuzzed shape must not allocate gigabytes
  dl::rt::DatasetSpec spec;
  spec.output_width = 3;
  spec.encoding = dl::rt::DatasetSpec::Encoding::kOneHot;
  try {
    dl::rt::Table t = dl::rt::read_csv_text(bytes, "f.csv", cap);
    spec.sample_shape = {t.cols - 1};
    if (t.cols > 1) dl::rt::make_dataset(std::move(t), spec);
  } catch (const dl::Error&) {
  }
  try {
    dl::rt::read_npy_bytes(bytes, "f.npy", cap);
  } catch (const dl::Error&) {
  }
  try {
    auto xy = dl::rt::read_npz_xy_bytes(bytes, "f.npz", cap);
    spec.sample_shape = {xy.first.cols};
    auto d = dl::rt::make_dataset(std::move(xy.first), std::move(xy.second), spec);
    if (d.n >= 2) dl::rt::split_validation(d, 0.5);
  } catch (const dl::Error&) {
  }
  return 0;
}
