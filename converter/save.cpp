// Writing a trained copy of a model: the source file with its float initializers
// replaced and metadata_props set. Everything else in the file is kept as it was.
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "converter/errors.h"
#include "converter/import.h"
#include "converter/onnx_util.h"

namespace dl::conv {
namespace {

void replace_initializer(onnx::TensorProto& t, const ir::TensorData& data, const std::string& what) {
  const bool same_dims = std::equal(t.dims().begin(), t.dims().end(), data.dims.begin(), data.dims.end());
  if (!same_dims) throw ModelError(what + " has other dims in the model than the values given to save");
  if (static_cast<int64_t>(data.floats.size()) != data.numel()) {
    throw ModelError(what + ": " + std::to_string(data.floats.size()) + " values given for " +
                     std::to_string(data.numel()) + " elements");
  }
  std::string raw;
  if (t.data_type() == onnx::TensorProto::FLOAT) {
    raw.resize(data.floats.size() * sizeof(float));
    if (!raw.empty()) std::memcpy(&raw[0], data.floats.data(), raw.size());
  } else if (t.data_type() == onnx::TensorProto::DOUBLE) {  // keep the model's type
    raw.resize(data.floats.size() * sizeof(double));
    for (size_t i = 0; i < data.floats.size(); ++i) {
      const double v = data.floats[i];
      std::memcpy(&raw[i * sizeof(double)], &v, sizeof(double));
    }
  } else {
    throw ModelError(what + " has data type " + detail::onnx_dtype_name(t.data_type()) +
                     "; only float initializers can be replaced");
  }
  t.clear_float_data();
  t.clear_double_data();
  t.clear_external_data();
  t.clear_data_location();
  t.set_raw_data(std::move(raw));
}

}  // namespace

void save_model_with(const std::string& source_path, const std::string& out_path,
                     const std::map<std::string, ir::TensorData>& initializers,
                     const std::map<std::string, std::string>& metadata) {
  onnx::ModelProto model;
  {
    const std::string bytes = detail::read_file(source_path);
    model = detail::parse_model(bytes, source_path);
  }
  std::unordered_map<std::string, onnx::TensorProto*> by_name;
  for (auto& t : *model.mutable_graph()->mutable_initializer()) by_name[t.name()] = &t;
  for (const auto& [name, data] : initializers) {
    auto it = by_name.find(name);
    if (it == by_name.end()) throw ModelError(source_path + ": no initializer named '" + name + "' to replace");
    replace_initializer(*it->second, data, source_path + ": initializer '" + name + "'");
  }
  for (const auto& [key, value] : metadata) {
    onnx::StringStringEntryProto* entry = nullptr;
    for (auto& e : *model.mutable_metadata_props())
      if (e.key() == key) entry = &e;
    if (!entry) {
      entry = model.add_metadata_props();
      entry->set_key(key);
    }
    entry->set_value(value);
  }

  detail::write_model_atomically(model, out_path);
}

}  // namespace dl::conv
