// What a batch shows and writes: the per-case line and summary on stdout, JUnit XML
// (one test case per model) and a Markdown table for CI job summaries. All read the
// summary document of batch_scoring.h, so `merge` writes the same outputs.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace dl::cli {

// "[ 3/40] name  FAULT  layer 1 (/2/Gemm, /3/Relu)  learning_rate  [expected fault: detected, localized, root cause]  1.23 s"
std::string case_line(const nlohmann::json& record, size_t position, size_t count, size_t name_width, bool color);
// The closing summary: counts, scores (with expectations), median time to verdict.
std::string summary_text(const nlohmann::json& summary);
std::string junit_xml(const nlohmann::json& summary);
std::string summary_markdown(const nlohmann::json& summary);

// io::xml_escape: &, <, >, " and ' as entities, and every character XML 1.0 forbids
// (and invalid UTF-8) written visibly as "\x1b" / "\u{fffe}" (io/text_escape.h).
std::string xml_escape(const std::string& text);

}  // namespace dl::cli
