#include "cli/output.h"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "analysis/layer_stats.h"
#include "analysis/report_html.h"
#include "cli/output_guard.h"
#include "converter/errors.h"
#include "converter/import.h"
#include "converter/transform.h"
#include "io/atomic_file.h"

namespace dl::cli {

void write_text_output(const std::string& path, const std::string& text) {
  const int fd = stream_target_fd(path);
  if (fd < 0) return io::write_file_atomically(path, text);
  std::ostream& out = fd == 1 ? std::cout : std::cerr;
  out << text;
  out.flush();
}

// std::cout's buffer: plain write(2) calls on descriptor 1, keeping the first error's
// errno (iostreams and stdio forget it: after a failed write to /dev/full, fflush
// returns 0 and errno is long overwritten).
struct StdoutCheck::Buffer : std::streambuf {
  char data[1 << 16];
  int error = 0;
  Buffer() { setp(data, data + sizeof data); }
  bool drain() {
    // std::cerr is tied to std::cout, so every message on stderr (from any thread) flushes
    // this buffer: with nothing to write, touch nothing.
    if (pptr() == pbase()) return error == 0;
    const char* p = pbase();
    size_t left = static_cast<size_t>(pptr() - pbase());
    while (left > 0 && error == 0) {
      const ssize_t n = ::write(1, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error = n < 0 ? errno : EIO;
        break;
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
    setp(data, data + sizeof data);  // after an error the rest is dropped, as nothing can be written
    return error == 0;
  }
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) sputc(traits_type::to_char_type(c));
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }
};

StdoutCheck::StdoutCheck() : buffer_(new Buffer), previous_(std::cout.rdbuf(buffer_)) {}

StdoutCheck::~StdoutCheck() {
  std::cout.flush();
  std::cout.rdbuf(previous_);
  std::cout.clear();
  delete buffer_;
}

void StdoutCheck::finish() {
  std::cout.flush();
  if (buffer_->error != 0)
    throw ConfigError(std::string("cannot write to standard output: ") + std::strerror(buffer_->error));
}

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  if (s.size() < tail.size()) return false;
  for (size_t k = 0; k < tail.size(); ++k)
    if (std::tolower(static_cast<unsigned char>(s[s.size() - tail.size() + k])) != tail[k]) return false;
  return true;
}

std::string render(const std::string& format, const an::Diagnosis& d, const an::Trace& t, const an::RunInfo& info,
                   bool color, bool verbose) {
  if (format == "json")
    return an::report_json(d, t, info).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (format == "html") return an::report_html(d, t, info);
  std::string text = an::report_text(d, t, info, color);
  if (verbose) text += an::report_layer_stats(d, t, color);
  return text;
}

}  // namespace

std::string report_file_format(const std::string& format, const std::string& file) {
  if (format == "html" || ends_with(file, ".html") || ends_with(file, ".htm")) return "html";
  return format;
}

void emit_report(const an::Diagnosis& diagnosis, const an::Trace& trace, const an::RunInfo& info,
                 const std::string& format, const std::string& file, bool quiet, const TerminalStyle& style,
                 bool verbose) {
  if (!file.empty())
    write_text_output(file, render(report_file_format(format, file), diagnosis, trace, info, false, verbose));
  if ((quiet && !file.empty()) || stream_target_fd(file) == 1) return;
  // With an HTML file, stdout gets the text report (HTML only when asked by --format html).
  const std::string out_format = format;
  const bool color = out_format == "text" && style.color && isatty(STDOUT_FILENO);
  std::cout << render(out_format, diagnosis, trace, info, color, verbose);
  std::cout.flush();
}

void save_trained_model(const ir::Model& model, const std::string& out_path, const rt::ParamStore& store) {
  if (model.rewritten) {  // untied or re-batched: the file's graph would not hold these values
    ir::Model copy = model;
    for (const auto& [name, t] : store.values) {
      auto it = copy.graph.initializers.find(name);
      if (it != copy.graph.initializers.end() && it->second.dtype == ir::DType::kFloat32) it->second.floats = t.fvec();
    }
    conv::save_model(copy, out_path);
    return;
  }
  const std::string& model_path = model.path;
  std::map<std::string, ir::TensorData> values;
  for (const auto& [name, t] : store.values) {
    ir::TensorData d;
    d.name = name;
    d.dtype = ir::DType::kFloat32;
    d.dims = t.shape();
    d.floats = t.fvec();
    values.emplace(name, std::move(d));
  }
  conv::save_model_with(model_path, out_path, values, {});
}

}  // namespace dl::cli
