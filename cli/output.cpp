#include "cli/output.h"

#include <cstdio>
#include <fstream>
#include <unistd.h>
#include <iostream>

#include "converter/errors.h"
#include "converter/import.h"

namespace dl::cli {

void write_text_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw ConfigError("cannot write '" + path + "': cannot create '" + tmp + "'");
    f << text;
    f.flush();
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

void emit_report(const an::Diagnosis& diagnosis, const an::Trace& trace, const an::RunInfo& info,
                 const std::string& format, const std::string& file, bool quiet, const TerminalStyle& style) {
  const bool json = format == "json";
  const std::string for_file = json ? an::report_json(diagnosis, trace, info).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"
                                    : an::report_text(diagnosis, trace, info, false);
  if (!file.empty()) write_text_atomically(file, for_file);
  if (quiet && !file.empty()) return;
  const bool color = style.color && isatty(1);
  std::cout << (json || !color ? for_file : an::report_text(diagnosis, trace, info, true));
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
