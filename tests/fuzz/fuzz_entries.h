// The bodies of the libFuzzer targets (tests/fuzz/fuzz_*.cpp), as plain functions so the
// unit tests can replay the inputs that once crashed (tests/fuzz/regressions/<target>/,
// tests/unit/fuzz_regressions_test.cpp). Each feeds arbitrary bytes to one reader the
// way the CLI does and swallows the input errors (dl::Error other than InternalError),
// the only exceptions a bad input may raise: any other exception, an InternalError
// (aborts), a crash, sanitizer report, leak or hang is a bug.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dl::fuzz {

// ONNX bytes -> import_model_bytes -> ExecutionGraph at batch 2 (inference and
// training plans) under a 64 MiB buffer cap.
int fuzz_onnx(const uint8_t* data, size_t size);
// CSV text -> read_csv_text -> datasets (one-hot, sparse, as-is) -> validation split.
int fuzz_csv(const uint8_t* data, size_t size);
// .npy and .npz bytes -> read_npy_bytes / read_npz_xy_bytes -> datasets; and both
// readers again without a memory cap (declared sizes must not drive allocation).
int fuzz_npy(const uint8_t* data, size_t size);
// Trace bytes -> read_trace_bytes -> trace_bytes round trip -> analysis -> reports
// (what `deeplocalize analyze FILE` does).
int fuzz_trace(const uint8_t* data, size_t size);
// Manifest JSON -> load_cases (written to a private temporary directory first, as the
// batch reader takes a path).
int fuzz_manifest(const uint8_t* data, size_t size);

// Summary JSON -> parse_json_text (the nesting limit) -> merge_summaries (every field
// checked) -> the merged summary's text, JUnit, Markdown and JSON (what `deeplocalize
// merge FILE` does). A top-level array of up to 8 summaries is merged as shards.
int fuzz_merge(const uint8_t* data, size_t size);

// The targets by name ("onnx", "csv", "npy", "trace", "manifest", "merge"); null when unknown.
using Entry = int (*)(const uint8_t*, size_t);
Entry entry_named(const std::string& target);
std::vector<std::string> target_names();

}  // namespace dl::fuzz
