// The training configuration: Keras-style settings read from the model's
// metadata_props (contract keys "deeplocalize.*"), then overridden by the command line.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "converter/ir.h"
#include "runtime/optimizer.h"
#include "runtime/options.h"

namespace dl::rt {

struct TrainConfig {
  std::string loss;  // required: metadata or --loss
  bool from_logits = false;
  OptimizerConfig optimizer;  // name defaults to Keras' compile() default, rmsprop
  int64_t epochs = 10;
  int64_t batch_size = 32;
  int64_t targets = 1;
  uint64_t seed = 0;
  double validation_split = 0.0;
  int64_t max_memory_bytes = 0;  // 0: the graph's default cap
};

// Reads every "deeplocalize.*" key through the option table (runtime/options.h): unknown
// keys with that prefix, malformed and out-of-range values are ConfigErrors naming the
// model file (when given), the key and the value.
TrainConfig config_from_metadata(const std::map<std::string, std::string>& metadata,
                                 const std::string& model_path = "");
// Sets the TrainConfig member of a DL_TRAIN_OPTION row; InternalError for a run option.
void set_config(TrainConfig& config, const OptionSpec& spec, const OptionValue& value);
// The inverse: every setting of `config` as "deeplocalize.*" metadata (a repaired model
// carries the configuration it was verified with).
std::map<std::string, std::string> config_to_metadata(const TrainConfig& config);
// Checks ranges (epochs >= 1, batch size >= 1, split in [0, 1), loss known, ...).
void validate(const TrainConfig& config);

// Parsers shared with the command line; `what` names the key or option in errors.
double parse_number(const std::string& text, const std::string& what);
int64_t parse_integer(const std::string& text, const std::string& what);
bool parse_bool(const std::string& text, const std::string& what);

}  // namespace dl::rt
