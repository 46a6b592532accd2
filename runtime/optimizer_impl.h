// Internal to optimizer*.cpp: the update rules' factory. Not part of the interface.
#pragma once

#include <memory>
#include <string>

#include "runtime/optimizer.h"

namespace dl::rt::opt_detail {

bool known(const std::string& lowercase_name);
// The rule for an already validated, lower-cased config.
std::unique_ptr<Optimizer> make_rule(const OptimizerConfig& config);

}  // namespace dl::rt::opt_detail
