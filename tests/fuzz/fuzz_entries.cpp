#include "tests/fuzz/fuzz_entries.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>

#include "analysis/analyzer.h"
#include "analysis/report.h"
#include "analysis/trace_io.h"
#include "cli/batch_command.h"
#include "cli/batch_outputs.h"
#include "cli/batch_scoring.h"
#include "cli/json_input.h"
#include "converter/errors.h"
#include "converter/import.h"
#include "runtime/data/dataset.h"
#include "runtime/data/table.h"
#include "runtime/graph.h"
#include "runtime/train_config.h"

namespace dl::fuzz {
namespace {

// A fuzzed shape or header must not allocate gigabytes: the readers and the planner get
// a cap, as `--max-memory` gives them in the CLI.
constexpr int64_t kCap = int64_t(64) << 20;

std::string as_string(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// An input error is the expected outcome of a bad input; an InternalError is a bug in
// deeplocalize (exit 3), so it fails the run like a crash.
void expected_error(const dl::Error& e) {
  if (e.kind() == ErrorKind::kInternal) {
    std::fprintf(stderr, "fuzz: internal error: %s\n", e.what());
    std::abort();
  }
}

// Every encoding a loss may ask for, over the table's columns.
void datasets_from(const rt::Table& t, int64_t output_width) {
  using E = rt::DatasetSpec::Encoding;
  for (E enc : {E::kOneHot, E::kSparse, E::kAsIs}) {
    try {
      rt::DatasetSpec spec;
      spec.encoding = enc;
      spec.output_width = enc == E::kAsIs ? 1 : output_width;
      spec.sample_shape = {t.cols - 1};
      if (t.cols < 2) return;
      rt::Dataset d = rt::make_dataset(t, spec);
      if (d.n >= 2) rt::split_validation(d, 0.5);
    } catch (const dl::Error& e) {
      expected_error(e);
    }
  }
}

}  // namespace

int fuzz_onnx(const uint8_t* data, size_t size) {
  try {
    ir::Model model = conv::import_model_bytes(as_string(data, size), "fuzz.onnx");
    try {
      rt::validate(rt::config_from_metadata(model.metadata));
    } catch (const dl::Error& e) {
      expected_error(e);
    }
    for (bool training : {false, true}) {
      rt::GraphOptions go;
      go.batch_size = 2;
      go.training = training;
      go.max_memory_bytes = kCap;
      rt::ExecutionGraph graph(model, go);
    }
  } catch (const dl::Error& e) {
    expected_error(e);
  }
  return 0;
}

int fuzz_csv(const uint8_t* data, size_t size) {
  rt::ReadOptions cap;
  cap.max_bytes = kCap;
  try {
    const rt::Table t = rt::read_csv_text(as_string(data, size), "fuzz.csv", cap);
    datasets_from(t, 3);
  } catch (const dl::Error& e) {
    expected_error(e);
  }
  return 0;
}

int fuzz_npy(const uint8_t* data, size_t size) {
  rt::ReadOptions cap;
  cap.max_bytes = kCap;
  const std::string bytes = as_string(data, size);
  try {
    const rt::Table t = rt::read_npy_bytes(bytes, "fuzz.npy", cap);
    datasets_from(t, 2);
  } catch (const dl::Error& e) {
    expected_error(e);
  }
  // Without a cap, what a header or a ZIP entry declares must not drive allocation:
  // memory stays within a small multiple of the input (DEFLATE: 1032x), which
  // libFuzzer's malloc limit checks.
  const rt::ReadOptions uncapped;
  try {
    rt::read_npy_bytes(bytes, "fuzz.npy", uncapped);
  } catch (const dl::Error& e) {
    expected_error(e);
  }
  try {
    rt::read_npz_xy_bytes(bytes, "fuzz.npz", uncapped);
  } catch (const dl::Error& e) {
    expected_error(e);
  }
  try {
    auto xy = rt::read_npz_xy_bytes(bytes, "fuzz.npz", cap);
    rt::DatasetSpec spec;
    spec.sample_shape = {xy.first.cols};
    spec.output_width = xy.second.cols;
    rt::Dataset d = rt::make_dataset(std::move(xy.first), std::move(xy.second), spec);
    if (d.n >= 2) rt::split_validation(d, 0.5);
  } catch (const dl::Error& e) {
    expected_error(e);
  }
  return 0;
}

int fuzz_trace(const uint8_t* data, size_t size) {
  try {
    an::Trace trace = an::read_trace_bytes(as_string(data, size), "fuzz.trace");
    // What was read must write and read back.
    an::Trace again = an::read_trace_bytes(an::trace_bytes(trace), "fuzz.trace (rewritten)");
    if (again.size() != trace.size() || again.loss.size() != trace.loss.size()) std::abort();
    // `deeplocalize analyze FILE`.
    const an::Diagnosis d = an::analyze(trace, an::Settings{}, /*final=*/true);
    an::RunInfo info;
    info.iterations = static_cast<int64_t>(trace.loss.size());
    info.epochs = static_cast<int64_t>(trace.epochs.size());
    info.complete = trace.complete;
    info.metric_name = trace.header.metric_name;
    for (const an::EpochRecord& e : trace.epochs) {
      info.epoch_loss.push_back(e.loss);
      info.epoch_metric.push_back(e.metric);
    }
    an::report_json(d, trace, info).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    an::report_text(d, trace, info, false);
  } catch (const dl::Error& e) {
    expected_error(e);
  }
  return 0;
}

int fuzz_manifest(const uint8_t* data, size_t size) {
  // One private directory per process, removed at exit; relative paths in the manifest
  // resolve into it.
  struct TempDir {
    std::string path;
    TempDir() {
      char tmpl[] = "/tmp/dl-fuzz-manifest-XXXXXX";
      if (!::mkdtemp(tmpl)) std::abort();
      path = tmpl;
    }
    ~TempDir() {
      std::remove((path + "/manifest.json").c_str());
      ::rmdir(path.c_str());
    }
  };
  static const TempDir dir;
  const std::string path = dir.path + "/manifest.json";
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!f) std::abort();
  }
  try {
    cli::load_cases(path);
  } catch (const dl::Error& e) {
    expected_error(e);
  }
  return 0;
}

int fuzz_merge(const uint8_t* data, size_t size) {
  try {
    const nlohmann::json input = cli::parse_json_text(as_string(data, size), "fuzz.json");
    std::vector<nlohmann::json> summaries;
    std::vector<std::string> files;
    if (input.is_array() && !input.empty() && input.size() <= 8)
      summaries.assign(input.begin(), input.end());
    else
      summaries.push_back(input);
    for (size_t k = 0; k < summaries.size(); ++k) files.push_back("fuzz" + std::to_string(k) + ".json");
    uint64_t missing = 0;
    const nlohmann::json merged = cli::merge_summaries(summaries, files, missing);
    // What merge writes must be a summary merge reads: a refusal here is a bug.
    try {
      cli::check_summary(nlohmann::json::parse(merged.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)),
                         "merged.json");
    } catch (const dl::Error& e) {
      std::fprintf(stderr, "fuzz: merge wrote a summary it refuses: %s\n", e.what());
      std::abort();
    }
    cli::summary_text(merged);
    cli::junit_xml(merged);
    cli::summary_markdown(merged);
    merged.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    for (size_t k = 0; k < merged["cases"].size(); ++k)
      cli::case_line(merged["cases"][k], k + 1, merged["cases"].size(), 40, k % 2 == 0);
  } catch (const dl::Error& e) {
    expected_error(e);
  }
  return 0;
}

Entry entry_named(const std::string& target) {
  if (target == "onnx") return fuzz_onnx;
  if (target == "csv") return fuzz_csv;
  if (target == "npy") return fuzz_npy;
  if (target == "trace") return fuzz_trace;
  if (target == "manifest") return fuzz_manifest;
  if (target == "merge") return fuzz_merge;
  return nullptr;
}

std::vector<std::string> target_names() { return {"onnx", "csv", "npy", "trace", "manifest", "merge"}; }

}  // namespace dl::fuzz
