#include "runtime/attrs.h"

#include <cmath>
#include <cstdio>

namespace dl::rt {

const ir::Attribute* Attrs::get(const std::string& name, ir::Attribute::Kind kind) {
  auto it = node_.attrs.find(name);
  if (it == node_.attrs.end()) return nullptr;
  read_.insert(name);
  if (it->second.kind != kind) fail(name, "has the wrong type");
  return &it->second;
}

float Attrs::f(const std::string& name, float def) {
  const ir::Attribute* a = get(name, ir::Attribute::Kind::kFloat);
  return a ? a->f : def;
}

std::string attr_number(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", double(v));
  return buf;
}

float Attrs::finite(const std::string& name, float def) {
  const float v = f(name, def);
  if (!std::isfinite(v)) fail(name, "is " + attr_number(v) + "; must be a finite number");
  return v;
}

float Attrs::in_range(const std::string& name, float def, float lo, float hi, bool hi_open) {
  const float v = f(name, def);
  if (!(v >= lo && (hi_open ? v < hi : v <= hi)))
    fail(name, "is " + attr_number(v) + "; must be in [" + attr_number(lo) + ", " + attr_number(hi) + (hi_open ? ")" : "]"));
  return v;
}

int64_t Attrs::i(const std::string& name, int64_t def) {
  const ir::Attribute* a = get(name, ir::Attribute::Kind::kInt);
  return a ? a->i : def;
}

std::string Attrs::s(const std::string& name, const std::string& def) {
  const ir::Attribute* a = get(name, ir::Attribute::Kind::kString);
  return a ? a->s : def;
}

std::vector<int64_t> Attrs::ints(const std::string& name, std::vector<int64_t> def) {
  const ir::Attribute* a = get(name, ir::Attribute::Kind::kInts);
  return a ? a->ints : def;
}

std::vector<float> Attrs::floats(const std::string& name, std::vector<float> def) {
  const ir::Attribute* a = get(name, ir::Attribute::Kind::kFloats);
  return a ? a->floats : def;
}

std::vector<std::string> Attrs::strings(const std::string& name, std::vector<std::string> def) {
  const ir::Attribute* a = get(name, ir::Attribute::Kind::kStrings);
  return a ? a->strings : def;
}

const ir::TensorData* Attrs::tensor(const std::string& name) {
  const ir::Attribute* a = get(name, ir::Attribute::Kind::kTensor);
  return a ? &a->t : nullptr;
}

void Attrs::finish() const {
  std::string unknown;
  for (const auto& [name, attr] : node_.attrs)
    if (!read_.count(name)) unknown += (unknown.empty() ? "'" : ", '") + name + "'";
  if (!unknown.empty())
    throw ModelError("node '" + node_.name + "' (" + node_.op_type + "): unsupported attribute " + unknown);
}

void Attrs::fail(const std::string& name, const std::string& message) const {
  throw ModelError("node '" + node_.name + "' (" + node_.op_type + "): attribute '" + name + "' " + message);
}

ir::Node sample_node(const std::string& op_type, size_t n_inputs, size_t n_outputs,
                     std::map<std::string, ir::Attribute> attrs, int since_version) {
  ir::Node n;
  n.name = "sample_" + op_type;
  n.op_type = op_type;
  n.since_version = since_version;
  for (size_t k = 0; k < n_inputs; ++k) n.inputs.push_back("x" + std::to_string(k));
  for (size_t k = 0; k < n_outputs; ++k) n.outputs.push_back("y" + std::to_string(k));
  n.attrs = std::move(attrs);
  return n;
}

ir::Attribute attr_f(float v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kFloat;
  a.f = v;
  return a;
}
ir::Attribute attr_i(int64_t v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInt;
  a.i = v;
  return a;
}
ir::Attribute attr_s(const std::string& v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kString;
  a.s = v;
  return a;
}
ir::Attribute attr_ints(std::vector<int64_t> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}
ir::Attribute attr_floats(std::vector<float> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kFloats;
  a.floats = std::move(v);
  return a;
}

ir::Attribute attr_strings(std::vector<std::string> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kStrings;
  a.strings = std::move(v);
  return a;
}

}  // namespace dl::rt
