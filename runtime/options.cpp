#include "runtime/options.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "converter/errors.h"

namespace dl::rt {

namespace {

std::vector<OptionSpec> make_table() {
  std::vector<OptionSpec> t;
#define DL_OPTION_ROW(field, type, sources, flag, key, lo, hi, bounds, choices, label, def, help)                  \
  t.push_back(OptionSpec{#field, OptionType::type, sources, flag, key, double(lo), double(hi), Bounds::bounds, choices, \
                         label, def, help});
#define DL_TRAIN_OPTION(field, target, ...) DL_OPTION_ROW(field, __VA_ARGS__)
#define DL_RUN_OPTION(field, ...) DL_OPTION_ROW(field, __VA_ARGS__)
#define DL_BATCH_OPTION(field, ...) DL_OPTION_ROW(field, __VA_ARGS__)
#include "runtime/option_list.def"
#undef DL_TRAIN_OPTION
#undef DL_RUN_OPTION
#undef DL_BATCH_OPTION
#undef DL_OPTION_ROW
  return t;
}

// A value echoed in a message: bounded, and without control bytes (metadata and JSON
// come from elsewhere and end up on a terminal).
std::string shown(const std::string& text) {
  std::string s;
  for (unsigned char c : text.substr(0, 40)) s += (c < 0x20 || c == 0x7f) ? '?' : char(c);
  return text.size() > 40 ? s + "..." : s;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_choice(const std::string& value, const char* choices) {
  std::stringstream list(choices);
  std::string item;
  while (std::getline(list, item, ',')) {
    const size_t b = item.find_first_not_of(' ');
    if (b != std::string::npos && item.substr(b) == value) return true;
  }
  return false;
}

bool in_range(const OptionSpec& s, double v) {
  const bool low_ok = s.bounds == Bounds::kLowOpen ? v > s.lo : v >= s.lo;
  const bool high_ok = s.bounds == Bounds::kHighOpen ? v < s.hi : v <= s.hi;
  return low_ok && high_ok;
}

[[noreturn]] void out_of_range(const OptionSpec& s, const std::string& text, const std::string& where) {
  throw ConfigError(where + ": " + s.label + " must be " + range_text(s) + " (got " + shown(text) + ")");
}

}  // namespace

std::string OptionSpec::long_flag() const {
  const std::string f(flag);
  return f.substr(f.rfind(',') + 1);
}

std::string OptionSpec::flag_key() const {
  std::string k = long_flag().substr(2);
  for (char& c : k)
    if (c == '-') c = '_';
  return k;
}

const std::vector<OptionSpec>& all_options() {
  static const std::vector<OptionSpec> table = make_table();
  return table;
}

const OptionSpec& option(const std::string& field) {
  for (const OptionSpec& s : all_options())
    if (field == s.name) return s;
  throw InternalError("no option '" + field + "' in runtime/option_list.def");
}

const OptionSpec* find_option(const std::string& key, OptionSource source) {
  for (const OptionSpec& s : all_options())
    if (s.from(source) && (key == s.key || (source == kBatch && key == s.flag_key()))) return &s;
  return nullptr;
}

std::string short_number(double v) {
  char buf[40];
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) <= 9007199254740992.0) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  for (int digits = 6; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string interval(const OptionSpec& s) {
  return (s.bounds == Bounds::kLowOpen ? "(" : "[") + short_number(s.lo) + ", " + short_number(s.hi) +
         (s.bounds == Bounds::kHighOpen ? ")" : "]");
}

std::string range_text(const OptionSpec& s) {
  // Integer ranges are closed: words read best. A real range may be open at an end
  // ("momentum must be in [0, 1)"), which the interval says exactly.
  if (s.type == OptionType::kInteger) return "at least " + short_number(s.lo) + " and at most " + short_number(s.hi);
  return "in " + interval(s);
}

OptionValue parse_option(const OptionSpec& s, const std::string& text, const std::string& where) {
  OptionValue v;
  v.text = text;
  switch (s.type) {
    case OptionType::kText:
      if (*s.choices) {
        v.text = lower(text);
        if (!is_choice(v.text, s.choices))
          throw ConfigError(where + ": " + s.label + " '" + shown(text) + "' is not supported (one of " + s.choices + ")");
      }
      return v;
    case OptionType::kBool:
    case OptionType::kFlag:
      if (text == "true" || text == "True" || text == "1") v.boolean = true;
      else if (text == "false" || text == "False" || text == "0") v.boolean = false;
      else throw ConfigError(where + ": '" + shown(text) + "' is not true or false");
      return v;
    case OptionType::kInteger: {
      const size_t digits = !text.empty() && (text[0] == '+' || text[0] == '-') ? 1 : 0;
      if (text.size() <= digits || text.find_first_not_of("0123456789", digits) != std::string::npos)
        throw ConfigError(where + ": '" + shown(text) + "' is not an integer");
      errno = 0;
      const long long i = std::strtoll(text.c_str(), nullptr, 10);
      // Beyond int64 is out of range, not malformed: the message gives the range.
      if (errno == ERANGE || !in_range(s, double(i))) out_of_range(s, text, where);
      v.integer = i;
      v.number = double(i);
      return v;
    }
    case OptionType::kNumber: {
      errno = 0;
      char* end = nullptr;
      const double d = std::strtod(text.c_str(), &end);
      // ERANGE on underflow (1e-400) gives 0 or a denormal: a number, checked below.
      const bool overflow = errno == ERANGE && std::fabs(d) > 1;
      if (text.empty() || std::isspace(static_cast<unsigned char>(text[0])) || *end != '\0' || overflow ||
          !std::isfinite(d))
        throw ConfigError(where + ": '" + shown(text) + "' is not a finite number");
      if (!in_range(s, d)) out_of_range(s, text, where);
      v.number = d;
      return v;
    }
  }
  throw InternalError("option " + s.long_flag() + ": unknown type");
}

std::string value_text(const OptionSpec& s, bool markdown) {
  const std::string q = markdown ? "`" : "";
  switch (s.type) {
    case OptionType::kText: {
      std::string value;
      std::stringstream list(s.choices);
      std::string item;
      while (std::getline(list, item, ','))
        value += (value.empty() ? "" : ", ") + q + item.substr(item.find_first_not_of(' ')) + q;
      return value.empty() ? "text" : value;
    }
    case OptionType::kBool: return q + "true" + q + "/" + q + "false" + q;
    case OptionType::kFlag: return "flag";
    case OptionType::kInteger:
    case OptionType::kNumber:
      return std::string(s.type == OptionType::kInteger ? "integer " : "number ") + interval(s);
  }
  return "";
}

std::string options_markdown() {
  std::string out = "| option | model metadata | options.json | value | default | meaning |\n|---|---|---|---|---|---|\n";
  for (const OptionSpec& s : all_options()) {
    std::string batch = "—";
    if (s.from(kBatch)) {
      batch = "`" + std::string(s.key) + "`";
      if (s.flag_key() != s.key) batch += " or `" + s.flag_key() + "`";
    }
    const std::string command = s.from(kCommandLine) ? "" : "batch ";  // options of train unless marked
    out += "| `" + command + s.flag + "` | " + (s.from(kMetadata) ? "`deeplocalize." + std::string(s.key) + "`" : "—") +
           " | " + batch + " | " + value_text(s, true) + " | " + s.default_text + " | " + s.help + " |\n";
  }
  return out;
}

}  // namespace dl::rt
