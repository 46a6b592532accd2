// One ONNX backend node test (see conformance.h): import the model (or classify why it
// cannot run), plan an ExecutionGraph for each data set's shapes, run forward and compare
// every output with the expected one.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "converter/errors.h"
#include "converter/import.h"
#include "runtime/graph.h"
#include "runtime/registry.h"
#include "tests/conformance/conformance.h"

namespace dl::test::conformance {
namespace {

using dl::rt::DType;
using dl::rt::Tensor;

constexpr double kRtol = 1e-4;
constexpr double kAtol = 1e-5;

std::string shape_of(const std::vector<int64_t>& dims) { return dl::rt::shape_str(dims); }

std::vector<std::string> numbered_files(const fs::path& dir, const std::string& prefix) {
  std::vector<std::string> out;
  for (size_t k = 0;; ++k) {
    fs::path f = dir / (prefix + std::to_string(k) + ".pb");
    if (!fs::exists(f)) break;
    out.push_back(f.string());
  }
  return out;
}

dl::ir::TensorData load_data(const std::string& path) {
  const int64_t t = peek_tensor_dtype(path);
  // int32 data runs as int64, as the runtime holds int32 initializers and inputs.
  if (t != 1 && t != 6 && t != 7 && t != 9) {
    throw DtypeSkip{fs::path(path).filename().string() + " holds " + onnx_type_name(t) +
                    " data (the runtime computes in float32, int64 (also holding int32) and bool)"};
  }
  return dl::conv::load_tensor_file(path);
}

// Whether an error message is about element types (the runtime has float32 and int64):
// names a type the runtime lacks, or says an input must be of a type it has. Words
// like "string" or "bool" alone are not enough (attribute errors use them).
bool about_dtype(const std::string& msg) {
  std::string m = msg;
  std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* w : {"dtype", "data type", "element type", "elem_type", "float64", "double", "float16",
                        "bfloat16", "int32", "int16", "int8", "uint8", "uint16", "uint32", "uint64", "complex",
                        "must be float32", "must be int64", "expects float32", "expects int64"}) {
    if (m.find(w) != std::string::npos) return true;
  }
  return false;
}

std::string compare(const std::string& name, const Tensor& got, const dl::ir::TensorData& want) {
  std::ostringstream err;
  if (got.shape() != want.dims) {
    err << "output '" << name << "': shape " << shape_of(got.shape()) << ", expected " << shape_of(want.dims);
    return err.str();
  }
  const bool want_float = want.dtype == dl::ir::DType::kFloat32;
  const DType want_type =
      want_float ? DType::kFloat32 : want.dtype == dl::ir::DType::kBool ? DType::kBool : DType::kInt64;
  if (got.dtype() != want_type) {
    err << "output '" << name << "': dtype " << dl::rt::dtype_name(got.dtype()) << ", expected "
        << dl::ir::dtype_name(want.dtype);
    return err.str();
  }
  int64_t bad = 0, first = -1;
  double worst = 0;
  for (int64_t k = 0; k < got.numel(); ++k) {
    bool ok;
    double a, b;
    if (want_float) {
      a = got.f()[k];
      b = want.floats[static_cast<size_t>(k)];
      ok = (std::isnan(a) && std::isnan(b)) || a == b || std::fabs(a - b) <= kAtol + kRtol * std::fabs(b);
    } else {
      a = double(got.i()[k]);
      b = double(want.ints[static_cast<size_t>(k)]);
      ok = got.i()[k] == want.ints[static_cast<size_t>(k)];
    }
    if (!ok) {
      if (first < 0) first = k;
      ++bad;
      const double d = std::fabs(a - b);
      if (std::isnan(d) || d > worst) worst = std::isnan(d) ? INFINITY : d;
    }
  }
  if (bad == 0) return "";
  const size_t f = static_cast<size_t>(first);
  err.precision(9);
  err << "output '" << name << "' " << shape_of(want.dims) << ": " << bad << " of " << got.numel()
      << " values differ; first at flat index " << first << ": got "
      << (want_float ? double(got.f()[f]) : double(got.i()[f])) << ", expected "
      << (want_float ? double(want.floats[f]) : double(want.ints[f])) << "; max |diff| " << worst;
  return err.str();
}

std::string first_unsupported(const std::vector<dl::ir::Node>& nodes) {
  for (const auto& node : nodes) {
    std::string why = dl::rt::unsupported_reason(node);
    if (!why.empty()) {
      std::string v = node.since_version ? "-" + std::to_string(node.since_version) : "";
      std::string d = node.domain.empty() ? "" : node.domain + ".";
      return d + node.op_type + v + ": " + why;
    }
  }
  return "";
}

// Imports the model; returns the first unsupported node's reason in `unsupported`.
dl::ir::Model import_or_classify(const fs::path& model_path, std::string& unsupported) {
  try {
    dl::ir::Model m = dl::conv::import_model(model_path.string());
    unsupported = first_unsupported(m.graph.nodes);
    return m;
  } catch (const std::exception& e) {
    // The import failed. If the raw graph uses an op we do not run anyway, the test is a
    // skip, not a converter failure: ask the converter without checker, upgrade and
    // shape inference (for since-versions), else read the op types from the bytes.
    try {
      dl::conv::ImportOptions raw;
      raw.run_checker = raw.upgrade_opset = raw.infer_shapes = false;
      unsupported = first_unsupported(dl::conv::import_model(model_path.string(), raw).graph.nodes);
    } catch (...) {
      unsupported = first_unsupported(peek_model_nodes(model_path.string()));
    }
    if (!unsupported.empty()) {
      unsupported += std::string(" (import failed: ") + e.what() + ")";
      return {};
    }
    throw;
  }
}

// Graph inputs and outputs that are not tensors the runtime can hold (sequences,
// optionals, maps, or element types outside float32/float64/int64/int32/bool).
void check_value_types(const dl::ir::Graph& g) {
  for (const auto* list : {&g.inputs, &g.outputs})
    for (const auto& v : *list)
      if (v.dtype == dl::ir::DType::kOther)
        throw DtypeSkip{"graph " + std::string(list == &g.inputs ? "input" : "output") + " '" + v.name +
                        "' is not a tensor of an element type the runtime holds (a sequence or optional, or float16, bfloat16, string, uint32, ...)"};
}

// Graph inputs some node reads where its op needs values at plan time
// (Op::plan_time_input: Resize's scales), as exported models hold them in constants.
std::set<std::string> plan_time_inputs(const dl::ir::Graph& g) {
  std::set<std::string> out;
  for (const auto& node : g.nodes) {
    std::unique_ptr<dl::rt::Op> op;
    try {
      op = dl::rt::make_op(node);
    } catch (const dl::Error&) {
      continue;  // planning reports it
    }
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (!node.inputs[i].empty() && op->plan_time_input(i)) out.insert(node.inputs[i]);
  }
  return out;
}

Outcome run_data_set(const dl::ir::Model& model, const fs::path& set_dir) {
  const auto in_files = numbered_files(set_dir, "input_");
  const auto out_files = numbered_files(set_dir, "output_");
  const auto& g = model.graph;
  if (in_files.size() > g.inputs.size())
    return {Status::kFail, std::to_string(in_files.size()) + " input files for " +
                               std::to_string(g.inputs.size()) + " graph inputs"};
  if (out_files.size() != g.outputs.size())
    return {Status::kFail, std::to_string(out_files.size()) + " output files for " +
                               std::to_string(g.outputs.size()) + " graph outputs"};

  std::vector<dl::ir::TensorData> inputs, outputs;
  for (const auto& f : in_files) inputs.push_back(load_data(f));
  for (const auto& f : out_files) outputs.push_back(load_data(f));

  dl::rt::GraphOptions opts;
  opts.allow_empty_inputs = true;  // the node tests include empty tensors
  std::map<std::string, const dl::ir::TensorData*> fed;
  const std::set<std::string> fixed = plan_time_inputs(g);
  for (size_t k = 0; k < inputs.size(); ++k) {
    const std::string& name = g.inputs[k].name;
    const auto& d = inputs[k];
    opts.input_shapes[name] = d.dims;
    if (d.dtype == dl::ir::DType::kInt64 || d.dtype == dl::ir::DType::kInt32)
      opts.known_inputs[name] = Tensor::ints(d.dims, d.ints);
    else if (d.dtype == dl::ir::DType::kBool)
      opts.known_inputs[name] = Tensor::bools(d.dims, d.ints);
    else if (fixed.count(name) && d.dtype == dl::ir::DType::kFloat32)
      opts.known_inputs[name] = Tensor::floats(d.dims, d.floats);
    else
      fed[name] = &d;
  }

  dl::rt::ExecutionGraph graph(model, opts);
  for (const std::string& name : graph.input_names()) {
    auto it = fed.find(name);
    if (it == fed.end()) return {Status::kFail, "graph input '" + name + "' has no test data"};
    Tensor& t = graph.input(name);
    const auto& d = *it->second;
    if (t.shape() != d.dims)
      return {Status::kFail, "graph input '" + name + "' planned as " + shape_of(t.shape()) +
                                 ", test data is " + shape_of(d.dims)};
    if (t.dtype() != DType::kFloat32)
      return {Status::kFail, "graph input '" + name + "' planned as " + dl::rt::dtype_name(t.dtype()) +
                                 ", test data is float32"};
    std::copy(d.floats.begin(), d.floats.end(), t.fvec().begin());
  }
  graph.forward();

  const auto& names = graph.output_names();
  for (size_t k = 0; k < outputs.size(); ++k) {
    const std::string& name = g.outputs[k].name;
    auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) return {Status::kFail, "graph has no output '" + name + "'"};
    std::string diff = compare(name, graph.output(static_cast<size_t>(it - names.begin())), outputs[k]);
    if (!diff.empty()) return {Status::kFail, diff};
  }
  return {Status::kPass, ""};
}

}  // namespace

Outcome run_test(const fs::path& dir) {
  try {
    std::string unsupported;
    dl::ir::Model model = import_or_classify(dir / "model.onnx", unsupported);
    if (!unsupported.empty()) return {Status::kSkipOp, unsupported};
    check_value_types(model.graph);

    std::vector<fs::path> sets;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
    std::sort(sets.begin(), sets.end());
    if (sets.empty()) return {Status::kFail, "no test_data_set_* directory"};
    for (const auto& s : sets) {
      Outcome o = run_data_set(model, s);
      if (o.status != Status::kPass) {
        if (sets.size() > 1) o.message = s.filename().string() + ": " + o.message;
        return o;
      }
    }
    return {Status::kPass, ""};
  } catch (const DtypeSkip& s) {
    return {Status::kSkipDtype, s.why};
  } catch (const dl::Error& e) {
    if (about_dtype(e.what())) return {Status::kSkipDtype, e.what()};
    static const char* kinds[] = {"ModelError", "ShapeError", "DataError", "ConfigError", "ResourceError", "InternalError"};
    return {Status::kFail, std::string(kinds[static_cast<int>(e.kind())]) + ": " + e.what()};
  } catch (const std::exception& e) {
    return {Status::kFail, std::string("std::exception: ") + e.what()};
  } catch (...) {
    return {Status::kFail, "unknown exception"};
  }
}

}  // namespace dl::test::conformance
