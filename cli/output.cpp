#include "cli/output.h"

#include <cctype>
#include <cstdio>
#include <fstream>
#include <unistd.h>
#include <iostream>

#include "analysis/layer_stats.h"
#include "analysis/report_html.h"
#include "converter/errors.h"
#include "converter/import.h"

namespace dl::cli {

void write_text_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw ConfigError("cannot write '" + path + "': cannot create '" + tmp + "'");
    f << text;
    f.close();  // close errors (a full disk noticed late) count too
    if (!f) {
      std::remove(tmp.c_str());
      throw ConfigError("cannot write '" + path + "' (disk full?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw ConfigError("cannot write '" + path + "': rename failed");
  }
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
    write_text_atomically(file, render(report_file_format(format, file), diagnosis, trace, info, false, verbose));
  if (quiet && !file.empty()) return;
  // With an HTML file, stdout gets the text report (HTML only when asked by --format html).
  const std::string out_format = format;
  const bool color = out_format == "text" && style.color && isatty(STDOUT_FILENO);
  std::cout << render(out_format, diagnosis, trace, info, color, verbose);
  std::cout.flush();
}

void save_trained_model(const std::string& model_path, const std::string& out_path, const rt::ParamStore& store) {
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
