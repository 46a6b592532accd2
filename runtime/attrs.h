// Attribute reading for ops: typed getters with defaults that remember what was read,
// so that finish() can reject every attribute the op does not understand by name.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "converter/errors.h"
#include "converter/ir.h"

namespace dl::rt {

class Attrs {
 public:
  explicit Attrs(const ir::Node& node) : node_(node) {}

  bool has(const std::string& name) const { return node_.attrs.count(name) != 0; }
  float f(const std::string& name, float def);
  // f() checked against the ONNX spec's domain: a finite number (NaN and infinities are
  // refused), and for in_range within [lo, hi], or [lo, hi) when hi_open. Throws
  // ModelError "<node>: attribute 'name' is 1.5; must be in [0, 1)".
  float finite(const std::string& name, float def);
  float in_range(const std::string& name, float def, float lo, float hi, bool hi_open = false);
  int64_t i(const std::string& name, int64_t def);
  std::string s(const std::string& name, const std::string& def);
  std::vector<int64_t> ints(const std::string& name, std::vector<int64_t> def = {});
  std::vector<float> floats(const std::string& name, std::vector<float> def = {});
  std::vector<std::string> strings(const std::string& name, std::vector<std::string> def = {});
  const ir::TensorData* tensor(const std::string& name);  // nullptr when absent

  // Throws ModelError listing attributes that were present but never read.
  void finish() const;
  // Throws ModelError "<node>: attribute 'name' <message>".
  [[noreturn]] void fail(const std::string& name, const std::string& message) const;

 private:
  const ir::Attribute* get(const std::string& name, ir::Attribute::Kind kind);
  const ir::Node& node_;
  std::set<std::string> read_;
};

// A float as messages show it ("1.5", "1e-05").
std::string attr_number(float v);

// Builds a node for sample cases and tests: inputs "x0".."xN-1", outputs "y0"..
ir::Node sample_node(const std::string& op_type, size_t n_inputs, size_t n_outputs = 1,
                     std::map<std::string, ir::Attribute> attrs = {}, int since_version = 0);
ir::Attribute attr_f(float v);
ir::Attribute attr_i(int64_t v);
ir::Attribute attr_s(const std::string& v);
ir::Attribute attr_ints(std::vector<int64_t> v);
ir::Attribute attr_floats(std::vector<float> v);
ir::Attribute attr_strings(std::vector<std::string> v);

}  // namespace dl::rt
