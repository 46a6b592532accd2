#include "runtime/train_config.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "converter/errors.h"

namespace dl::rt {

namespace {
const char* kLosses[] = {"mse", "mae", "binary_crossentropy", "categorical_crossentropy",
                         "sparse_categorical_crossentropy", "huber", "hinge"};
}

double parse_number(const std::string& text, const std::string& what) {
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
    throw ConfigError(what + ": '" + text + "' is not a finite number");
  return v;
}

int64_t parse_integer(const std::string& text, const std::string& what) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE) throw ConfigError(what + ": '" + text + "' is not an integer");
  return v;
}

bool parse_bool(const std::string& text, const std::string& what) {
  if (text == "true" || text == "True" || text == "1") return true;
  if (text == "false" || text == "False" || text == "0") return false;
  throw ConfigError(what + ": '" + text + "' is not true or false");
}

void set_config(TrainConfig& c, const OptionSpec& spec, const OptionValue& v) {
#define DL_TRAIN_OPTION(field, target, ...) \
  if (std::strcmp(spec.name, #field) == 0) return assign(c.target, v);
#define DL_RUN_OPTION(...)
#include "runtime/option_list.def"
#undef DL_TRAIN_OPTION
#undef DL_RUN_OPTION
  throw InternalError(std::string("option ") + spec.flag + " is not a setting of the training configuration");
}

TrainConfig config_from_metadata(const std::map<std::string, std::string>& metadata, const std::string& model_path) {
  TrainConfig c;
  const std::string prefix = "deeplocalize.";
  for (const auto& [key, value] : metadata) {
    if (key.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string k = key.substr(prefix.size());
    const std::string what = (model_path.empty() ? "" : model_path + ": ") + "model metadata '" + key + "'";
    if (k == "preprocessing") continue;  // the data's, read by Preprocessing::from_metadata
    const OptionSpec* spec = find_option(k, kMetadata);
    if (!spec) {
      std::string known;
      for (const OptionSpec& s : all_options())
        if (s.from(kMetadata)) known += std::string(s.key) + ", ";
      throw ConfigError(what + ": unknown key (known: " + known + "preprocessing)");
    }
    set_config(c, *spec, parse_option(*spec, value, what));
    c.optimizer.origin[spec->key] = what;
  }
  return c;
}

std::map<std::string, std::string> config_to_metadata(const TrainConfig& c) {
  auto num = [](double v) {  // the shortest text that reads back as the same double
    char buf[32];
    for (int digits = 6; digits <= 17; ++digits) {
      std::snprintf(buf, sizeof buf, "%.*g", digits, v);
      if (std::strtod(buf, nullptr) == v) break;
    }
    return std::string(buf);
  };
  std::map<std::string, std::string> m;
  const std::string p = "deeplocalize.";
  m[p + "loss"] = c.loss;
  m[p + "from_logits"] = c.from_logits ? "true" : "false";
  m[p + "optimizer"] = c.optimizer.name;
  if (c.optimizer.learning_rate) m[p + "learning_rate"] = num(*c.optimizer.learning_rate);
  if (c.optimizer.momentum != 0) m[p + "momentum"] = num(c.optimizer.momentum);
  if (c.optimizer.nesterov) m[p + "nesterov"] = "true";
  if (c.optimizer.decay != 0) m[p + "decay"] = num(c.optimizer.decay);
  if (c.optimizer.clipnorm) m[p + "clipnorm"] = num(*c.optimizer.clipnorm);
  if (c.optimizer.clipvalue) m[p + "clipvalue"] = num(*c.optimizer.clipvalue);
  if (!c.optimizer.frozen.empty()) m[p + "frozen"] = c.optimizer.frozen;
  m[p + "epochs"] = std::to_string(c.epochs);
  m[p + "batch_size"] = std::to_string(c.batch_size);
  m[p + "targets"] = std::to_string(c.targets);
  m[p + "seed"] = std::to_string(c.seed);
  if (c.validation_split != 0) m[p + "validation_split"] = num(c.validation_split);
  return m;
}

void validate(const TrainConfig& c) {
  if (c.loss.empty())
    throw ConfigError("no loss given: set the model metadata 'deeplocalize.loss' or pass --loss (one of mse, mae, "
                      "binary_crossentropy, categorical_crossentropy, sparse_categorical_crossentropy, huber, hinge)");
  bool known = false;
  for (const char* l : kLosses) known = known || c.loss == l;
  if (!known)
    throw ConfigError("loss '" + c.loss + "' is not supported (one of mse, mae, binary_crossentropy, "
                      "categorical_crossentropy, sparse_categorical_crossentropy, huber, hinge)");
  if (c.epochs < 1) throw ConfigError("epochs must be at least 1 (got " + std::to_string(c.epochs) + ")");
  if (c.batch_size < 1) throw ConfigError("batch size must be at least 1 (got " + std::to_string(c.batch_size) + ")");
  if (c.targets < 1) throw ConfigError("targets must be at least 1 (got " + std::to_string(c.targets) + ")");
  if (!(c.validation_split >= 0.0 && c.validation_split < 1.0))
    throw ConfigError("validation split must be in [0, 1) (got " + std::to_string(c.validation_split) + ")");
}

}  // namespace dl::rt
